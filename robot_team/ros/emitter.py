"""The ROS side of the team's event record: each node's :class:`EventEmitter`.

Each node owns one :class:`EventEmitter`; it stamps events with ROS time (sim time under
``use_sim_time``) and wall time, numbers them per actor (``seq`` from 1, so a lost event shows
as a gap) and publishes them on ``/team/events``. The events themselves
(:class:`~robot_team.contracts.events.TeamEventModel`, :class:`~robot_team.contracts.events.EventKind`) are
rclpy-free, in :mod:`robot_team.contracts.events`.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from rclpy.exceptions import InvalidHandle

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.msg import TeamEvent
from robot_team.contracts.names import TEAM_EVENTS
from robot_team.ros.messages import event_to_msg, events_qos
from robot_team.ros.stamps import now_s
from robot_team.contracts.names import team_name

_log = logging.getLogger(__name__)
_EMITTERS: 'weakref.WeakSet[EventEmitter]' = weakref.WeakSet()   # every emitter of this process (emitters_of)


class EventEmitter:
    """Publish a node's team events on ``team/events`` (in its team namespace) and log them.

    Thread-safe: ``emit`` may be called from any callback or worker thread.

    Parameters
    ----------
    node
        The rclpy node that owns the publisher and whose clock stamps the events.
    actor
        Who emits (node name or robot namespace), e.g. ``'manager'``.
    """

    def __init__(self, node, actor: str):
        self._node = node
        self._actor = actor
        self._lock = threading.Lock()
        self._seq = 0
        self._pub = node.create_publisher(TeamEvent, team_name(node, TEAM_EVENTS), events_qos())
        self.history: list[TeamEventModel] = []
        _EMITTERS.add(self)

    @property
    def actor(self) -> str:
        """Who emits these events."""
        return self._actor

    @property
    def count(self) -> int:
        """How many events were emitted so far (the last one's ``seq``): a node's activity, for the follow clock."""
        return self._seq

    def emit(self, kind: 'EventKind | str', summary: str, /, *, target: str = '', reason: str = '',
             **data: Any) -> TeamEventModel:
        """Stamp, number, publish and log one event; return it.

        ``kind`` and ``summary`` are positional-only, so a payload may carry its own ``summary``
        key (e.g. a task report's) in ``data``.
        """
        kind_value = kind.value if isinstance(kind, EventKind) else str(kind)
        with self._lock:
            self._seq += 1
            try:
                now = now_s(self._node)
            except InvalidHandle:
                now = 0.0
            event = TeamEventModel(stamp_s=now, wall_time=time.time(), seq=self._seq,
                                   actor=self._actor, kind=kind_value, target=target,
                                   summary=summary, reason=reason, data=data)
            self.history.append(event)
            try:
                self._pub.publish(event_to_msg(event))
            except InvalidHandle:   # the node is gone (its episode ended): say so, never raise into the caller
                _log.error('%s: event after its node was destroyed, not recorded: [%s] %s', self._actor,
                           kind_value, summary)
                return event
        text = f'[{kind_value}] {summary}' + (f' (why: {reason})' if reason else '')
        log = self._node.get_logger()
        if kind_value in (EventKind.NODE_CRASHED.value, EventKind.INPUT_ERROR.value,
                          EventKind.TOOL_REFUSED.value, EventKind.REPORT_REJECTED.value,
                          EventKind.WORKFLOW_VIOLATION.value, EventKind.FALSE_COMPLETION.value,
                          EventKind.DEADLINE_MISSED.value, EventKind.DELEGATION_REFUSED.value,
                          EventKind.INVALID_CALL.value):
            log.warning(text)
        else:
            log.info(text)
        return event


def emitters_of(context) -> list[EventEmitter]:
    """Return the event emitters of this process whose node is in the rclpy ``context`` (none for a node-less one)."""
    return [e for e in list(_EMITTERS) if getattr(e._node, 'context', None) is context]
