"""The team's event record: every decision, tool call, report and escalation, timestamped.

Each node owns one :class:`EventEmitter`; it stamps events with ROS time (sim time under
``use_sim_time``) and wall time, numbers them per actor (``seq`` from 1, so a lost event shows
as a gap) and publishes them on ``/team/events``. The recorder writes them with the run
(``events.jsonl`` and ``events.mcap``); the evaluation scores runs from this record alone.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from enum import Enum
from typing import Any, Callable

from builtin_interfaces.msg import Time
from pydantic import BaseModel, Field, ValidationError
from rclpy.exceptions import InvalidHandle
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_team.msg import TeamEvent
from robot_team.names import TEAM_EVENTS, team_name

_log = logging.getLogger(__name__)


class EventKind(str, Enum):
    """Kinds of team events. Payload conventions are documented per kind."""

    NODE_STARTED = 'node_started'
    NODE_STOPPED = 'node_stopped'
    NODE_CRASHED = 'node_crashed'            # data: returncode, stderr_tail
    OBSERVATION = 'observation'              # the manager saw an environment cue; data: cue, ...
    DELEGATION_REQUESTED = 'delegation_requested'  # data: task_type, robot, hcw_id, room, reason
    DELEGATION_REFUSED = 'delegation_refused'      # data: task_type, robot; reason: why refused
    DELEGATION_AUTHORIZED = 'delegation_authorized'  # supervisor approved; data: task_id, task_type, robot
    DELEGATION = 'delegation'                # goal sent; target: robot; data: task_id, task_type, hcw_id, room
    TASK_STARTED = 'task_started'            # actor: robot; data: task_id, task_type
    TOOL_CALL = 'tool_call'                  # actor: caller; target: tool; data: task_id, args
    TOOL_RESULT = 'tool_result'              # data: task_id, ok, result | error
    TOOL_REFUSED = 'tool_refused'            # the caller does not own the tool; never reached ROS
    TASK_REPORT = 'task_report'              # actor: robot; data: the TaskReportModel as dict
    REPORT_REJECTED = 'report_rejected'      # a report that did not validate; data: error, raw
    JUDGMENT = 'judgment'                    # manager judged a report; data: task_id, task_type, judged_status
    ALTERNATIVE_PROPOSED = 'alternative_proposed'  # manager's issue handling; data: task_id, hcw_id
    ESCALATION_REQUESTED = 'escalation_requested'
    ESCALATION = 'escalation'                # supervisor published one; data: escalation_id, task_id, raised_by
    ESCALATION_AWAITS_HUMAN = 'escalation_awaits_human'  # no scripted answer: a person must decide
    OPERATOR_DECISION = 'operator_decision'  # scripted operator; data: stage planned|sent, decision
    OPERATOR_DECISION_RESULT = 'operator_decision_result'  # the supervisor's answer to the operator
    HUMAN_DECISION = 'human_decision'        # data: escalation_id, decision, hcw_id, operator_id
    ESCALATION_ACKNOWLEDGED = 'escalation_acknowledged'  # data: escalation_id, operator_id, due_s
    ESCALATION_RENOTIFIED = 'escalation_renotified'      # still unanswered; data: escalation_id, notifications
    ESCALATION_EXPIRED = 'escalation_expired'            # nobody resolved it in time; data: safe_default
    ESCALATION_RESTORED = 'escalation_restored'          # taken up by a restarted supervisor; data: state
    TEAM_HELD = 'team_held'                  # robots stopped, delegations refused; data: escalation_id, held_by
    TEAM_RELEASED = 'team_released'          # a hold escalation was resolved; data: team_free, held_for_s
    INSTRUCTION = 'instruction'              # a person's free-text instruction; data: operator_id, text
    GOALS_CANCELLED = 'goals_cancelled'      # a hold cancelled an action's goals; data: action, goals
    DEADLINE_STARTED = 'deadline_started'    # data: task_id, deadline_s
    DEADLINE_MET = 'deadline_met'
    DEADLINE_MISSED = 'deadline_missed'
    WORKFLOW_VIOLATION = 'workflow_violation'
    FALSE_COMPLETION = 'false_completion'    # a success claim contradicting ground truth
    REFLECTION = 'reflection'                # data: the Reflection as dict
    REFLECTION_REJECTED = 'reflection_rejected'
    EPISODE_FINISHED = 'episode_finished'    # data: outcome (success, failure, escalated, timeout, interrupted)
    SAFE_DEFAULT = 'safe_default'            # supervisor: a missed manager deadline's safe default; data: directive
    TAKEOVER = 'takeover'                    # manager: the protocol brain took over its role; data: escalation_id
    SIM = 'sim'                              # ground truth from the simulator; data: what, ...
    INPUT_ERROR = 'input_error'              # bad input (scenario, world, directory, message)
    BRAIN_ERROR = 'brain_error'              # a brain raised or replied garbage; data: error
    LLM_REQUEST = 'llm_request'
    LLM_REPLY = 'llm_reply'
    LLM_ERROR = 'llm_error'
    INVALID_CALL = 'invalid_call'            # a call not acted on; data: caller, tool, category, error, raw


class TeamEventModel(BaseModel):
    """One team event (the Python side of ``robot_team/msg/TeamEvent``)."""

    stamp_s: float = Field(description='ROS time at the emitter (sim time under use_sim_time), s.')
    wall_time: float = Field(description='Wall-clock time, s since the Unix epoch.')
    seq: int = Field(ge=1, description='Per-actor sequence number, from 1.')
    actor: str
    kind: str
    target: str = ''
    summary: str = ''
    reason: str = ''
    data: dict[str, Any] = Field(default_factory=dict)

    def to_msg(self):
        """Return this event as a ``robot_team/msg/TeamEvent``."""
        sec = int(self.stamp_s)
        return TeamEvent(
            stamp=Time(sec=sec, nanosec=int(round((self.stamp_s - sec) * 1e9)) % 1_000_000_000),
            wall_time=self.wall_time, seq=self.seq, actor=self.actor, kind=self.kind,
            target=self.target, summary=self.summary, reason=self.reason,
            data_json=json.dumps(self.data, default=str))

    @classmethod
    def from_msg(cls, msg) -> 'TeamEventModel':
        """Convert a ``robot_team/msg/TeamEvent``; a malformed ``data_json`` is kept under ``data['raw']``."""
        try:
            data = json.loads(msg.data_json) if msg.data_json else {}
            if not isinstance(data, dict):
                data = {'value': data}
        except json.JSONDecodeError as exc:
            data = {'raw': msg.data_json, 'parse_error': str(exc)}
        return cls(stamp_s=msg.stamp.sec + msg.stamp.nanosec * 1e-9, wall_time=msg.wall_time,
                   seq=max(1, msg.seq), actor=msg.actor, kind=msg.kind, target=msg.target,
                   summary=msg.summary, reason=msg.reason, data=data)


def events_qos():
    """Return the QoS of ``/team/events``: reliable, transient local, deep history.

    Transient local with a deep history lets a recorder that joins late still receive every
    event a node has published (no loss at start-up).
    """
    return QoSProfile(depth=5000, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def reliable_qos(depth: int = 100):
    """Return a reliable, transient-local QoS for team topics that must not lose messages."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


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

    @property
    def actor(self) -> str:
        """Who emits these events."""
        return self._actor

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
                now = self._node.get_clock().now().nanoseconds * 1e-9
            except InvalidHandle:
                now = 0.0
            event = TeamEventModel(stamp_s=now, wall_time=time.time(), seq=self._seq,
                                   actor=self._actor, kind=kind_value, target=target,
                                   summary=summary, reason=reason, data=data)
            self.history.append(event)
            try:
                self._pub.publish(event.to_msg())
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


RAW_CHARS = 2000
"""Most characters of a raw reply or raw arguments kept in an ``invalid_call`` event."""

INVALID_CATEGORIES = ('unparsable_arguments', 'invalid_arguments', 'closed_set', 'invalid_reply',
                      'unresolved_reference')
"""``invalid_call`` categories: arguments that are not a JSON object; arguments that do not validate;
a value outside a closed set (an enum); a reply that is not the tool calls asked for; a ``$N``
reference to a call that did not succeed or a missing field."""


def category_of(exc: Exception) -> str:
    """Return ``'closed_set'`` for a validation error about an enum or literal value, else ``'invalid_arguments'``."""
    if isinstance(exc, ValidationError) and any(e.get('type') in ('enum', 'literal_error') for e in exc.errors()):
        return 'closed_set'
    return 'invalid_arguments'


def invalid_call(emit: Callable[..., Any] | None, caller: str, tool: str, category: str, error: str,
                 raw: str = '', **data) -> None:
    """Record one invalid call as an ``invalid_call`` event (nothing if ``emit`` is None).

    Parameters
    ----------
    emit
        The caller's event emitter (``emit(kind, summary, *, target, reason, **data)``).
    caller, tool
        Who called, and the tool name as the model gave it ('' if none).
    category
        One of :data:`INVALID_CATEGORIES`.
    error
        The validation error, for people and for the model.
    raw
        The arguments or reply as received (cut to :data:`RAW_CHARS`).
    """
    if emit is None:
        return
    emit(EventKind.INVALID_CALL, f'{caller}: invalid {tool or "reply"} ({category})', target=tool or 'reply',
         reason=error, caller=caller, tool=tool, category=category, error=error, raw=(raw or '')[:RAW_CHARS], **data)


def sequence_gaps(events: list[TeamEventModel]) -> dict[str, list[int]]:
    """Return, per actor, the sequence numbers missing from ``events`` (empty: record complete)."""
    seqs: dict[str, set[int]] = {}
    for event in events:
        seqs.setdefault(event.actor, set()).add(event.seq)
    gaps = {}
    for actor, got in seqs.items():
        missing = sorted(set(range(1, max(got) + 1)) - got)
        if missing:
            gaps[actor] = missing
    return gaps
