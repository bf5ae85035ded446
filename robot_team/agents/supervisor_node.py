"""The supervisor: enforces the ED workflow and its deadlines, and escalates to humans.

A thin ROS 2 wiring around :class:`robot_team.core.supervisor.SupervisorCore` (which wraps the
pure rulebook :class:`robot_team.workflow.WorkflowPolicy`). Names are relative to the team
namespace:

- ``team/supervisor/authorize_task`` (robot_team/srv/AuthorizeTask): the workflow gate every
  delegation passes (order, roles, repeats, reflection); the answer carries the deciding rule
  (``RULE_*``) for programs and an explanation for people;
- ``team/supervisor/submit_report`` (SubmitReport): robots (and the manager, for its
  reflection) submit their reports here, the one place they are recorded; a report that does
  not validate or does not match its authorization is recorded as ``report_rejected``;
- ``team/supervisor/request_escalation`` (RequestEscalation): the manager escalates a task;
- ``team/supervisor/resolve_escalation`` (ResolveEscalation): a human decides (rqt's Service
  Caller works: a refusal comes back with ``accepted: false`` and a clear ``message``);
- ``team/task_reports`` (TaskReport), ``team/escalations`` (Escalation) and
  ``team/human_decisions`` (HumanDecision): published (recorded reports, escalations, decisions);
- ``ed/patient_arrivals`` (PatientArrival): the patient cue starts the manager's first-step and
  whole-onboarding deadlines;
- ``team/supervisor/directives`` (SupervisorDirective): published when the manager misses one of
  its deadlines and the safe default is a takeover or a hold;
- a timer on ROS time (sim time under ``use_sim_time``) checks the deadlines every 0.5 s and
  escalates each missed one (and applies the safe default to a stall of the manager).

Every authorization, report, deadline change, escalation and human decision is an event on
``team/events``.
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
from robot_team.core.supervisor import SupervisorCore, parse_report
from robot_team.reports import TaskReportModel
from robot_team.workflow import WorkflowPolicy, WorkflowState

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
        As for :class:`rclpy.node.Node`. Parameters: ``scenario``, ``issue_handling_deadline_s``,
        ``task_deadline_s``, ``decision_deadline_s``, ``onboarding_deadline_s`` (s) and
        ``safe_default`` (``takeover``, ``hold`` or ``escalate``), each defaulting to the
        scenario's :class:`~robot_team.config.Deadlines`; ``use_sim_time`` (expected true in runs:
        deadlines run on sim time).

    Raises
    ------
    ConfigError
        If the scenario cannot be loaded, a deadline is not a positive number or the safe default
        is unknown (also recorded as an ``input_error`` event).

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
                                  task_s=self._seconds('task_deadline_s', defaults.task_s),
                                  decision_s=self._seconds('decision_deadline_s', defaults.decision_s),
                                  onboarding_s=self._seconds('onboarding_deadline_s', defaults.onboarding_s),
                                  safe_default=self._safe_default(defaults.safe_default))
        except ConfigError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'supervisor cannot start', reason=str(exc))
            raise
        from robot_team.msg import Escalation, HumanDecision, PatientArrival, SupervisorDirective, TaskReport
        from robot_team.srv import AuthorizeTask, RequestEscalation, ResolveEscalation, SubmitReport
        self._group = MutuallyExclusiveCallbackGroup()
        self._escalation_pub = self.create_publisher(Escalation, names.ESCALATIONS, reliable_qos())
        self._decision_pub = self.create_publisher(HumanDecision, names.HUMAN_DECISIONS, reliable_qos())
        self._report_pub = self.create_publisher(TaskReport, names.TASK_REPORTS, reliable_qos())
        self._directive_pub = self.create_publisher(SupervisorDirective, names.SUPERVISOR_DIRECTIVES, reliable_qos())
        self.core = SupervisorCore(WorkflowPolicy(deadlines), self.events.emit, self._publish_escalation,
                                   self._publish_decision, self._publish_report, self._publish_directive)
        self.policy = self.core.policy
        self.create_service(SubmitReport, names.SUBMIT_REPORT, self.submit_report_callback,
                            callback_group=self._group)
        self.create_service(AuthorizeTask, names.AUTHORIZE_TASK, self.authorize_callback,
                            callback_group=self._group)
        self.create_service(RequestEscalation, names.REQUEST_ESCALATION, self.request_escalation_callback,
                            callback_group=self._group)
        self.create_service(ResolveEscalation, names.RESOLVE_ESCALATION, self.resolve_escalation_callback,
                            callback_group=self._group)
        self.create_subscription(PatientArrival, names.PATIENT_ARRIVALS, self.arrival_callback, reliable_qos(),
                                 callback_group=self._group)
        # The node's clock is ROS time: sim time when use_sim_time is true.
        self._deadline_timer = self.create_timer(DEADLINE_CHECK_PERIOD_S, self.deadline_callback,
                                                 callback_group=self._group)
        self.events.emit(EventKind.NODE_STARTED, 'supervisor ready: workflow gate, deadlines, escalations',
                         scenario=scenario.name if scenario is not None else '',
                         issue_handling_deadline_s=deadlines.issue_handling_s,
                         task_deadline_s=deadlines.task_s, decision_deadline_s=deadlines.decision_s,
                         onboarding_deadline_s=deadlines.onboarding_s, safe_default=deadlines.safe_default,
                         use_sim_time=bool(self.get_parameter('use_sim_time').value))

    def snapshot(self) -> WorkflowState:
        """Return a copy of the workflow state (tasks, escalations, deadlines, closed flag)."""
        return self.policy.snapshot()

    # --- Callbacks ----------------------------------------------------------------------------

    def authorize_callback(self, request, response):
        """Approve or refuse a delegation against the workflow rules; answer with the rule."""
        auth = self.core.authorize(request.task_type, request.robot, request.reason, request.requested_by,
                                   self._now())
        response.approved = auth.approved
        response.task_id = auth.task_id
        response.rule = auth.rule.value
        response.explanation = auth.explanation
        return response

    def submit_report_callback(self, request, response):
        """Validate and record a report (the one place reports are recorded); reject, never drop, a bad one."""
        msg = request.report
        report = parse_report(lambda: TaskReportModel.from_msg(msg), lambda: _raw_report(msg), self.core)
        if report is None:
            response.accepted, response.explanation = False, 'the report does not validate (see report_rejected)'
            return response
        response.accepted, response.explanation = self.core.submit_report(report, self._now(), _raw_report(msg))
        if response.accepted:
            self.get_logger().info(f'{report.task_id} ({report.task_type.value}) reported {report.status.value}'
                                   + (f': {report.issue}' if report.issue else ''))
        return response

    def request_escalation_callback(self, request, response):
        """Open an escalation the manager asked for and publish it; refuse unknown tasks or no reason."""
        response.accepted, response.escalation_id, response.message = self.core.request_escalation(
            request.task_id, request.reason, list(request.options), self._now())
        return response

    def resolve_escalation_callback(self, request, response):
        """Record a human's decision on an escalation and publish it; refuse invalid decisions."""
        response.accepted, response.message = self.core.resolve(
            request.escalation_id, request.decision, request.hcw_id, request.note, request.operator_id, self._now())
        return response

    def arrival_callback(self, msg) -> None:
        """Start the onboarding's deadlines at the patient cue."""
        self.core.on_patient_arrival(msg.patient_id, self._now())

    def deadline_callback(self) -> None:
        """Escalate every deadline missed by now (ROS time)."""
        self.core.check_deadlines(self._now())

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

    def _safe_default(self, default: str) -> str:
        value = str(self.declare_parameter('safe_default', default, ParameterDescriptor(
            description='What the supervisor applies when the manager misses a deadline: takeover, hold or '
                        'escalate.')).value)
        if value not in ('takeover', 'hold', 'escalate'):
            raise ConfigError(f"supervisor parameter safe_default: expected 'takeover', 'hold' or 'escalate', "
                              f'got {value!r}')
        return value

    def _publish_directive(self, directive) -> None:
        from robot_team.msg import SupervisorDirective
        self._directive_pub.publish(SupervisorDirective(
            stamp=self.get_clock().now().to_msg(), directive_id=directive.directive_id, directive=directive.directive,
            target=directive.target, escalation_id=directive.escalation_id, deadline=directive.deadline,
            reason=directive.reason))

    def _publish_escalation(self, esc) -> None:
        from robot_team.msg import Escalation
        self._escalation_pub.publish(Escalation(
            stamp=self.get_clock().now().to_msg(), escalation_id=esc.escalation_id, task_id=esc.task_id,
            task_type=esc.task_type, raised_by=esc.raised_by, reason=esc.reason, options=esc.options))

    def _publish_decision(self, esc) -> None:
        from robot_team.msg import HumanDecision
        self._decision_pub.publish(HumanDecision(
            stamp=self.get_clock().now().to_msg(), escalation_id=esc.escalation_id, decision=esc.decision,
            hcw_id=esc.hcw_id, note=esc.note, operator_id=esc.operator_id))

    def _publish_report(self, report: TaskReportModel) -> None:
        self._report_pub.publish(report.to_msg())


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
