"""The scripted operator: the human who answers escalations in unattended runs.

It listens to ``/team/escalations`` and answers each one with the first unused answer of the
scenario's ``operator_script`` whose ``task_type`` matches (or is ``None``: any) and whose
``patient_id`` is the escalation's case's (or empty: any case). Like a person,
it takes ``delay_s`` of sim time to answer, then calls ``/team/supervisor/resolve_escalation``
as ``scripted_operator``. An escalation no answer matches waits for a real human (e.g. rqt's
Service Caller); the operator only records that it is waiting, as it does for a ``patient``
escalation (a patient the team does not serve: a person takes them, not a script).
"""

from __future__ import annotations

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.logging import LoggingSeverity
from rclpy.node import Node

from robot_team.contracts import names
from robot_team.contracts.config import ConfigError, OperatorAnswer, Scenario, load_scenario
from robot_team.contracts.escalation_model import EscalationKind
from robot_team.contracts.events import EventKind
from robot_team.msg import Escalation
from robot_team.contracts.clock_sync import BUSY, NOTHING_SCHEDULED
from robot_team.ros.clock import follow_clock
from robot_team.ros.liveness import announce_alive
from robot_team.ros.emitter import EventEmitter, log_line
from robot_team.ros.messages import reliable_qos
from robot_team.ros.stamps import now_s
from robot_team.ros.util import spin_node
from robot_team.srv import ResolveEscalation

ESCALATION_AWAITS_HUMAN = 'escalation_awaits_human'
"""Event kind: no scripted answer matches an escalation; it waits for a real human."""

OPERATOR_DECISION = 'operator_decision'
"""Event kind: the operator chose an answer (``planned``) or sent it (``sent``)."""

OPERATOR_DECISION_RESULT = 'operator_decision_result'
"""Event kind: the supervisor's answer to the operator's decision (accepted, message)."""

POLL_PERIOD_S = 0.1
"""How often pending answers are checked, s of ROS time."""


class ScriptedOperatorNode(Node):
    """The scripted human operator (``scripted_operator``).

    Parameters
    ----------
    scenario
        The scenario whose ``operator_script`` to play; ``None``: load the ``scenario``
        parameter (name or path; empty: no script, every escalation awaits a human).
    script
        The answers to play instead of the scenario's (tests).
    context, parameter_overrides
        As for :class:`rclpy.node.Node`; ``use_sim_time`` is expected true in runs (delays
        are sim time).

    Raises
    ------
    ConfigError
        If the ``scenario`` parameter names no loadable scenario (also an ``input_error`` event).

    Notes
    -----
    Each escalation is handled once (by ID). Waiting is a timer on ROS time that sends the due
    answers; the service is called with ``call_async`` and a done callback, so no callback ever
    blocks. An answer is held back while the supervisor's service is not available.
    """

    def __init__(self, scenario: Scenario | None = None, *, script: list[OperatorAnswer] | None = None,
                 context=None, parameter_overrides=None):
        super().__init__(names.OPERATOR, context=context, parameter_overrides=parameter_overrides or [])
        self.events = EventEmitter(self, names.OPERATOR)
        self.declare_parameter('scenario', '')
        if script is None:
            try:
                if scenario is None:
                    scenario_name = str(self.get_parameter('scenario').value or '')
                    scenario = load_scenario(scenario_name) if scenario_name else None
            except ConfigError as exc:
                self.events.emit(EventKind.INPUT_ERROR, 'scripted operator cannot start', reason=str(exc))
                raise
            script = list(scenario.operator_script) if scenario is not None else []
        self.script: list[OperatorAnswer] = list(script)
        self._used: set[int] = set()
        self._seen: set[str] = set()
        self._pending: list[dict] = []      # {'escalation': msg, 'answer': OperatorAnswer, 'due_s': float}
        self._in_flight: set[str] = set()   # escalations whose answer was sent and not answered yet
        self._waiting_logged: set[str] = set()

        self._group = MutuallyExclusiveCallbackGroup()
        self._client = self.create_client(ResolveEscalation, names.RESOLVE_ESCALATION,
                                          callback_group=self._group)
        self.create_subscription(Escalation, names.ESCALATIONS, self.escalation_callback, reliable_qos(),
                                 callback_group=self._group)
        # On the node's clock: ROS time, i.e. sim time under use_sim_time.
        self._timer = self.create_timer(POLL_PERIOD_S, self.answer_callback, callback_group=self._group)
        # the follow clock waits for this node, and jumps ahead no further than its next answer (ros.clock)
        self._clock_follower = follow_clock(self, self._next_answer_s, activity=lambda: self.events.count)
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)
        self.events.emit(EventKind.NODE_STARTED, f'scripted operator ready with {len(self.script)} answer(s)',
                         script=[a.model_dump() for a in self.script])

    def _next_answer_s(self) -> float:
        """Return the ROS time (s) of the next scripted answer due (``inf``: none): the follow clock's jump ahead.

        :data:`~robot_team.contracts.clock_sync.BUSY` while an answer sent waits for the supervisor's reply.
        """
        if self._in_flight:
            return BUSY
        return min((p['due_s'] for p in list(self._pending)), default=NOTHING_SCHEDULED)

    def escalation_callback(self, msg) -> None:
        """Pick the scripted answer to a new escalation and schedule it after its delay."""
        if msg.escalation_id in self._seen or msg.state in (msg.STATE_RESOLVED, msg.STATE_EXPIRED):
            return
        self._seen.add(msg.escalation_id)
        patient = msg.kind == EscalationKind.PATIENT.value   # a patient to take: a person's, no scripted decision
        index = None if patient else next((i for i, a in enumerate(self.script)
                                           if i not in self._used and a.task_type in (None, msg.task_type)
                                           and a.patient_id in ('', msg.patient_id)), None)
        if index is None:
            why = ('a patient the team does not serve: a person takes them' if patient
                   else f'no unused scripted answer for task type {msg.task_type or "(none)"}')
            self.events.emit(ESCALATION_AWAITS_HUMAN, f'{msg.escalation_id} awaits a human', reason=why,
                             target=msg.escalation_id, escalation_id=msg.escalation_id, task_id=msg.task_id,
                             task_type=msg.task_type, escalation_reason=msg.reason)
            return
        self._used.add(index)
        answer = self.script[index]
        due_s = now_s(self) + answer.delay_s
        self._pending.append({'escalation': msg, 'answer': answer, 'due_s': due_s})
        self.events.emit(OPERATOR_DECISION, f'will answer {msg.escalation_id} with {answer.decision} in '
                         f'{answer.delay_s:g} s', target=msg.escalation_id, reason=answer.note,
                         stage='planned', escalation_id=msg.escalation_id, task_id=msg.task_id,
                         task_type=msg.task_type, decision=answer.decision, hcw_id=answer.hcw_id,
                         delay_s=answer.delay_s, due_s=due_s, script_index=index)
        if answer.delay_s <= 0:
            self.answer_callback()

    def answer_callback(self) -> None:
        """Send every answer whose delay has passed (ROS time)."""
        if not self._pending:
            return
        now = now_s(self)
        due = [p for p in self._pending if now >= p['due_s']]
        if not due:
            return
        if not self._client.service_is_ready():
            for item in due:
                escalation_id = item['escalation'].escalation_id
                if escalation_id not in self._waiting_logged:
                    self._waiting_logged.add(escalation_id)
                    log_line(self.get_logger(), LoggingSeverity.WARN,
                             f'answer to {escalation_id} waits for service {names.RESOLVE_ESCALATION}')
            return
        for item in due:
            self._pending.remove(item)
            self._send(item['escalation'], item['answer'])

    def _send(self, escalation, answer: OperatorAnswer) -> None:
        request = ResolveEscalation.Request(escalation_id=escalation.escalation_id,
                                            decision=answer.decision, hcw_id=answer.hcw_id, note=answer.note,
                                            operator_id=names.OPERATOR)
        self.events.emit(OPERATOR_DECISION, f'answering {escalation.escalation_id}: {answer.decision}'
                         + (f' {answer.hcw_id}' if answer.hcw_id else ''), target=escalation.escalation_id,
                         reason=answer.note, stage='sent', escalation_id=escalation.escalation_id,
                         task_id=escalation.task_id, decision=answer.decision, hcw_id=answer.hcw_id)
        self._in_flight.add(escalation.escalation_id)
        future = self._client.call_async(request)
        future.add_done_callback(lambda f: self._answered(escalation.escalation_id, answer, f))

    def _answered(self, escalation_id: str, answer: OperatorAnswer, future) -> None:
        """Record the supervisor's answer to a decision."""
        self._in_flight.discard(escalation_id)
        exc = future.exception()
        if exc is not None:
            accepted, message = False, f'service call failed: {exc}'
        else:
            response = future.result()
            accepted, message = bool(response.accepted), response.message
        self.events.emit(OPERATOR_DECISION_RESULT, f"supervisor {'accepted' if accepted else 'refused'} the "
                         f'{answer.decision} on {escalation_id}', target=escalation_id, reason=message,
                         escalation_id=escalation_id, decision=answer.decision, accepted=accepted,
                         message=message)


def main(args=None) -> int:
    """Run the scripted operator (``ros2 run robot_team scripted_operator``)."""
    # Single-threaded: the timer and subscription share the pending answers and never block
    # (the service is called with call_async), so one thread serves the node.
    return spin_node('scripted_operator', ScriptedOperatorNode, SingleThreadedExecutor, args)


if __name__ == '__main__':
    raise SystemExit(main())
