"""The ROS side of the team's event record: each node's :class:`EventEmitter`.

Each node owns one :class:`EventEmitter`; it stamps events with ROS time (sim time under
``use_sim_time``) and wall time, numbers them per actor (``seq`` from 1, so a lost event shows
as a gap) and publishes them on ``/team/events``. The events themselves
(:class:`~robot_team.contracts.events.TeamEventModel`, :class:`~robot_team.contracts.events.EventKind`) are
rclpy-free, in :mod:`robot_team.contracts.events`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import weakref
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.logging import LoggingSeverity

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.msg import TeamEvent
from robot_team.contracts.names import TEAM_EVENTS
from robot_team.ros.messages import event_to_msg, events_qos
from robot_team.ros.stamps import now_s
from robot_team.contracts.names import team_name

_log = logging.getLogger(__name__)
_WARNINGS = frozenset(kind.value for kind in (
    EventKind.NODE_CRASHED, EventKind.INPUT_ERROR, EventKind.TOOL_REFUSED, EventKind.REPORT_REJECTED,
    EventKind.WORKFLOW_VIOLATION, EventKind.FALSE_COMPLETION, EventKind.DEADLINE_MISSED,
    EventKind.DELEGATION_REFUSED, EventKind.INVALID_CALL))
"""Event kinds logged as warnings; the others as info."""
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
        severity = LoggingSeverity.WARN if kind_value in _WARNINGS else LoggingSeverity.INFO
        log_line(self._node.get_logger(), severity, text)
        return event


def emitters_of(context) -> list[EventEmitter]:
    """Return the event emitters of this process whose node is in the rclpy ``context`` (none for a node-less one)."""
    return [e for e in list(_EMITTERS) if getattr(e._node, 'context', None) is context]


def log_line(logger, severity: LoggingSeverity, message: str) -> None:
    """Log ``message`` at ``severity`` through ``logger`` (an rclpy node's), as its ``log`` would, without filters.

    rclpy's ``RcutilsLogger.log`` finds its caller with ``inspect.getframeinfo`` on every call,
    which reads the caller's source file: about 3 ms a line on the 2-core machine, some 0.3 s of
    an onboarding episode's 121 event lines. This hands rcutils the same line (logger name,
    caller's function, file and line number) from the caller's frame. The throttle, once and
    skip-first filters are not offered; an rclpy without rcutils' log function gets
    ``logger.log``.
    """
    if not logger.is_enabled_for(severity):
        return
    frame = sys._getframe(1)
    try:
        _rclpy.rclpy_logging_rcutils_log(severity, logger.name, message, frame.f_code.co_name,
                                         frame.f_code.co_filename, frame.f_lineno)
    except AttributeError:   # (no such function in this rclpy)
        logger.log(message, severity)
