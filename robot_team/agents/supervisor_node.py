"""The supervisor: enforces the ED workflow and its deadlines, and escalates to humans.

A thin ROS 2 wiring around :class:`robot_team.workflow.WorkflowPolicy`:

- ``/team/supervisor/authorize_task`` (robot_team/srv/AuthorizeTask): the workflow gate every
  delegation passes (order, roles, repeats, reflection);
- ``/team/supervisor/request_escalation`` (RequestEscalation): the manager escalates a task;
- ``/team/supervisor/resolve_escalation`` (ResolveEscalation): a human decides (rqt's Service
  Caller works: a refusal comes back with ``accepted: false`` and a clear ``message``);
- ``/team/task_reports`` (robot_team/msg/TaskReport): robots' reports, validated; a report that
  does not validate or does not match its authorization is recorded as ``report_rejected``;
- ``/team/escalations`` (Escalation) and ``/team/human_decisions`` (HumanDecision): published;
- a timer on ROS time (sim time under ``use_sim_time``) checks the deadlines every 0.5 s and
  escalates each missed one.

Every authorization, deadline change, escalation and human decision is an event on
``/team/events``.
"""

from __future__ import annotations


from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from robot_team import names
from robot_team.config import ConfigError, Deadlines, Scenario, load_scenario
from robot_team.rosutil import spin_node
from robot_team.events import EventEmitter, EventKind, reliable_qos
from robot_team.reports import ReportError, TaskReportModel
from robot_team.workflow import Deadline, WorkflowPolicy, WorkflowState

DELEGATION_AUTHORIZED = 'delegation_authorized'
"""Event kind of an approved authorization (not in EventKind: the manager's ``delegation`` is the goal)."""

DEADLINE_CHECK_PERIOD_S = 0.5
"""Period of the deadline check, s of ROS time."""

RAW_TEXT_LIMIT = 2000
"""Longest raw field of a rejected report kept in the event record, characters."""


class SupervisorNode(Node):
    """The supervisor node (``supervisor``): workflow gate, deadlines, escalations.

    Parameters
    ----------
    scenario
        The episode's scenario (its deadlines); ``None``: load the ``scenario`` parameter (name
        or path; empty: default deadlines).
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameters: ``scenario``, ``issue_handling_deadline_s``
        and ``task_deadline_s`` (s, default: the scenario's deadlines), ``use_sim_time``
        (expected true in runs: deadlines run on sim time).

    Raises
    ------
    ConfigError
        If the scenario cannot be loaded or a deadline is not a positive number (also recorded
        as an ``input_error`` event).

    Notes
    -----
    Every callback that touches the policy is in one ``MutuallyExclusiveCallbackGroup``, so
    under any executor they run one at a time; no callback blocks. :attr:`policy` is also
    thread-safe on its own, so :meth:`snapshot` may be called from any thread.
    """

    def __init__(self, scenario: Scenario | None = None, *, context=None, parameter_overrides=None):
        super().__init__(names.SUPERVISOR, context=context, parameter_overrides=parameter_overrides or [])
        self.events = EventEmitter(self, names.SUPERVISOR)
        self.declare_parameter('scenario', '')
        try:
            if scenario is None:
                scenario_name = str(self.get_parameter('scenario').value or '')
                scenario = load_scenario(scenario_name) if scenario_name else None
            defaults = scenario.deadlines if scenario is not None else Deadlines()
            deadlines = Deadlines(issue_handling_s=self._seconds('issue_handling_deadline_s',
                                                                 defaults.issue_handling_s),
                                  task_s=self._seconds('task_deadline_s', defaults.task_s))
        except ConfigError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'supervisor cannot start', reason=str(exc))
            raise
        self.policy = WorkflowPolicy(deadlines)

        from robot_team.msg import Escalation, HumanDecision, TaskReport
        from robot_team.srv import AuthorizeTask, RequestEscalation, ResolveEscalation
        self._group = MutuallyExclusiveCallbackGroup()
        self._escalation_pub = self.create_publisher(Escalation, names.ESCALATIONS, reliable_qos())
        self._decision_pub = self.create_publisher(HumanDecision, names.HUMAN_DECISIONS, reliable_qos())
        self.create_subscription(TaskReport, names.TASK_REPORTS, self.report_callback, reliable_qos(),
                                 callback_group=self._group)
        self.create_service(AuthorizeTask, names.AUTHORIZE_TASK, self.authorize_callback,
                            callback_group=self._group)
        self.create_service(RequestEscalation, names.REQUEST_ESCALATION, self.request_escalation_callback,
                            callback_group=self._group)
        self.create_service(ResolveEscalation, names.RESOLVE_ESCALATION, self.resolve_escalation_callback,
                            callback_group=self._group)
        # The node's clock is ROS time: sim time when use_sim_time is true.
        self._deadline_timer = self.create_timer(DEADLINE_CHECK_PERIOD_S, self.deadline_callback,
                                                 callback_group=self._group)
        self.events.emit(EventKind.NODE_STARTED, 'supervisor ready: workflow gate, deadlines, escalations',
                         scenario=scenario.name if scenario is not None else '',
                         issue_handling_deadline_s=deadlines.issue_handling_s,
                         task_deadline_s=deadlines.task_s,
                         use_sim_time=bool(self.get_parameter('use_sim_time').value))

    def snapshot(self) -> WorkflowState:
        """Return a copy of the workflow state (tasks, escalations, deadlines, closed flag)."""
        return self.policy.snapshot()

    # --- Callbacks ----------------------------------------------------------------------------

    def authorize_callback(self, request, response):
        """Approve or refuse a delegation against the workflow rules; record the decision."""
        auth = self.policy.authorize(request.task_type, request.robot, request.reason, request.requested_by,
                                     self._now())
        data = dict(task_type=request.task_type, robot=request.robot, requested_by=request.requested_by,
                    request_reason=request.reason, rule=auth.rule)
        if auth.approved:
            self.events.emit(DELEGATION_AUTHORIZED, f'authorized {auth.task_id} ({request.task_type}) for '
                             f'{request.robot}', target=request.robot, reason=auth.explanation,
                             task_id=auth.task_id, **data)
        else:
            kind = EventKind.WORKFLOW_VIOLATION if auth.violation else EventKind.DELEGATION_REFUSED
            self.events.emit(kind, f'refused {request.task_type!r} for {request.robot!r} requested by '
                             f'{request.requested_by!r}', target=request.robot, reason=auth.explanation,
                             **data)
        self._record_deadline_changes()
        response.approved = auth.approved
        response.task_id = auth.task_id
        response.explanation = auth.explanation
        return response

    def request_escalation_callback(self, request, response):
        """Open an escalation the manager asked for and publish it; refuse unknown tasks or no reason."""
        try:
            escalation_id = self.policy.open_escalation(request.task_id, names.Robot.MANAGER.value,
                                                        request.reason, list(request.options), self._now())
        except ValueError as exc:
            self.events.emit(EventKind.INPUT_ERROR, f'refused an escalation of {request.task_id!r}',
                             target=request.task_id, reason=str(exc), task_id=request.task_id,
                             request_reason=request.reason, options=list(request.options))
            response.accepted, response.escalation_id, response.message = False, '', str(exc)
            return response
        self._record_deadline_changes()
        self._publish_escalation(escalation_id)
        response.accepted, response.escalation_id = True, escalation_id
        response.message = f'{escalation_id} opened and sent to the human operators'
        return response

    def resolve_escalation_callback(self, request, response):
        """Record a human's decision on an escalation and publish it; refuse invalid decisions."""
        accepted, message = self.policy.resolve(request.escalation_id, request.decision, request.hcw_id,
                                                request.note, request.operator_id, self._now())
        if accepted:
            esc = self.policy.snapshot().escalation(request.escalation_id)
            self.events.emit(EventKind.HUMAN_DECISION, f'{esc.operator_id or "an operator"} decided '
                             f'{esc.decision} on {esc.escalation_id}', target=esc.task_id, reason=esc.note,
                             escalation_id=esc.escalation_id, task_id=esc.task_id, decision=esc.decision,
                             hcw_id=esc.hcw_id, note=esc.note, operator_id=esc.operator_id,
                             closed=self.policy.closed)
            from robot_team.msg import HumanDecision
            self._decision_pub.publish(HumanDecision(
                stamp=self.get_clock().now().to_msg(), escalation_id=esc.escalation_id, decision=esc.decision,
                hcw_id=esc.hcw_id, note=esc.note, operator_id=esc.operator_id))
        else:
            self.events.emit(EventKind.INPUT_ERROR, f'refused a decision on {request.escalation_id!r}',
                             target=request.escalation_id, reason=message,
                             escalation_id=request.escalation_id, decision=request.decision,
                             hcw_id=request.hcw_id, operator_id=request.operator_id)
        response.accepted = accepted
        response.message = message
        return response

    def report_callback(self, msg) -> None:
        """Validate a robot's report and record it; reject (never drop) a bad one."""
        try:
            report = TaskReportModel.from_msg(msg)
            task = self.policy.record_report(report, self._now())
        except (ReportError, ValueError) as exc:
            self.events.emit(EventKind.REPORT_REJECTED, f'rejected a report on {msg.task_id!r} from '
                             f'{msg.robot!r}', target=msg.task_id, reason=str(exc), error=str(exc),
                             raw=_raw_report(msg))
            return
        self.get_logger().info(f'{task.task_id} ({task.task_type.value}) reported {task.status}'
                               + (f': {task.issue}' if task.issue else ''))
        self._record_deadline_changes()

    def deadline_callback(self) -> None:
        """Escalate every deadline missed by now (ROS time)."""
        now = self._now()
        for deadline in self.policy.due(now):
            if deadline.kind == 'issue_handling':
                reason = (f'manager did not handle the failure of {deadline.task_id} within '
                          f'{deadline.duration_s:g} s')
            else:
                task = self.policy.snapshot().task(deadline.task_id)
                reason = (f'{task.robot} did not report on {deadline.task_id} ({deadline.task_type.value}) '
                          f'within {deadline.duration_s:g} s')
            summary = f'{deadline.kind} deadline of {deadline.task_id} missed'
            self.events.emit(EventKind.DEADLINE_MISSED, summary, target=deadline.task_id, reason=reason,
                             **_deadline_data(deadline))
            escalation_id = self.policy.open_escalation(deadline.task_id, names.SUPERVISOR, reason,
                                                        ['retry', 'reassign', 'abort'], now)
            self._publish_escalation(escalation_id)

    # --- Helpers ------------------------------------------------------------------------------

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _seconds(self, name: str, default: float) -> float:
        value = self.declare_parameter(name, float(default),
                                       ParameterDescriptor(dynamic_typing=True,
                                                           description='Deadline, s of ROS time.')).value
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = float('nan')
        if not seconds > 0:
            raise ConfigError(f'supervisor parameter {name}: expected a positive number of seconds, '
                              f'got {value!r}')
        return seconds

    def _record_deadline_changes(self) -> None:
        for change in self.policy.take_deadline_changes():
            deadline = change.deadline
            if change.change == 'started':
                self.events.emit(EventKind.DEADLINE_STARTED,
                                 f'{deadline.kind} deadline of {deadline.task_id}: {deadline.duration_s:g} s',
                                 target=deadline.task_id,
                                 reason=_deadline_reason(deadline), **_deadline_data(deadline))
            else:
                self.events.emit(EventKind.DEADLINE_MET,
                                 f'{deadline.kind} deadline of {deadline.task_id} met by {deadline.met_by}',
                                 target=deadline.task_id, **_deadline_data(deadline))

    def _publish_escalation(self, escalation_id: str) -> None:
        from robot_team.msg import Escalation
        esc = self.policy.snapshot().escalation(escalation_id)
        self.events.emit(EventKind.ESCALATION, f'{escalation_id} on {esc.task_id or "the episode"} raised by '
                         f'{esc.raised_by}', target=esc.task_id, reason=esc.reason,
                         escalation_id=escalation_id, task_id=esc.task_id, task_type=esc.task_type,
                         raised_by=esc.raised_by, options=esc.options)
        self._escalation_pub.publish(Escalation(
            stamp=self.get_clock().now().to_msg(), escalation_id=escalation_id, task_id=esc.task_id,
            task_type=esc.task_type, raised_by=esc.raised_by, reason=esc.reason, options=esc.options))


def _deadline_data(deadline: Deadline) -> dict:
    return {'task_id': deadline.task_id, 'task_type': deadline.task_type.value, 'deadline': deadline.kind,
            'deadline_s': deadline.duration_s, 'started_s': deadline.started_s, 'due_s': deadline.due_s,
            'met_by': deadline.met_by}


def _deadline_reason(deadline: Deadline) -> str:
    if deadline.kind == 'issue_handling':
        return (f'{deadline.task_id} failed: the manager must delegate {deadline.task_type.value} again or '
                f'escalate {deadline.task_id}')
    return f'{deadline.task_id} must report'


def _raw_report(msg) -> dict:
    """Return a rejected report's fields as received (long text cut to RAW_TEXT_LIMIT characters)."""
    fields = ('task_id', 'task_type', 'robot', 'status', 'issue', 'summary', 'data_json', 'evidence_json')
    raw = {name: getattr(msg, name) for name in fields}
    raw = {k: v if len(v) <= RAW_TEXT_LIMIT else v[:RAW_TEXT_LIMIT] + '...' for k, v in raw.items()}
    raw['stamp_s'] = msg.stamp.sec + msg.stamp.nanosec * 1e-9
    return raw


def main(args=None) -> int:
    """Run the supervisor (``ros2 run robot_team supervisor``)."""
    # Single-threaded: every callback is short and never waits on another one (services answer
    # from the policy's state), so one thread serves the whole node.
    return spin_node('supervisor', SupervisorNode, SingleThreadedExecutor, args)


if __name__ == '__main__':
    raise SystemExit(main())
