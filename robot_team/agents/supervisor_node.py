"""The supervisor: enforces the ED workflow and its deadlines, and escalates to humans.

A thin ROS 2 wiring around :class:`robot_team.core.supervisor.SupervisorCore` (which wraps the
pure rulebook :class:`robot_team.rules.workflow.policy.WorkflowPolicy`). Names are relative to the team
namespace:

- ``team/supervisor/authorize_task`` (robot_team/srv/AuthorizeTask): the workflow gate every
  delegation passes (order, roles, repeats, reflection); the answer carries the deciding rule
  (``RULE_*``) for programs and an explanation for people;
- ``team/supervisor/submit_report`` (SubmitReport): robots (and the manager, for its
  reflection) submit their reports here, the one place they are recorded; a report that does
  not validate or does not match its authorization is recorded as ``report_rejected``;
- ``team/supervisor/request_escalation`` (RequestEscalation): the manager escalates a task;
- ``team/supervisor/resolve_escalation`` (ResolveEscalation), ``.../acknowledge_escalation``
  (AcknowledgeEscalation), ``.../raise_escalation`` (RaiseEscalation: a person's concern or
  stop-and-hold) and ``.../send_instruction`` (SendInstruction): people (rqt's Service Caller
  works: a refusal comes back with ``accepted: false``, a ``refusal`` code and a clear
  ``message``); the lifecycle and policy are :class:`~robot_team.core.escalations.EscalationDesk`'s;
- ``team/task_reports`` (TaskReport), ``team/escalations`` (Escalation, at every lifecycle step),
  ``team/human_decisions`` (HumanDecision), ``team/hold`` (TeamHold), ``team/instructions``
  (Instruction) and ``team/staff`` (StaffBoard: the directory with RTLS availability): published,
  reliable and transient local (any subscriber QoS matches);
- a timer on ROS time (sim time under ``use_sim_time``) checks the deadlines every 0.5 s,
  escalates each missed one, expires and re-notifies escalations; a wall-clock timer asks the
  RTLS (``ed/rtls/locate_staff``) for availability every 2 s;
- a hold cancels every goal of each robot's ``execute_task`` and of the navigation robot's Nav2
  actions (``<action>/_action/cancel_goal`` with a zero goal ID: all goals).
- ``team/supervisor/close_case`` (CloseCase): the hospital's record ended a case (the FHIR gateway:
  an Encounter ``finished`` or ``cancelled``); closed through the workflow's rules by an ``abort``
  the record's actor (``ehr``) decides (:meth:`EscalationDesk.close_case
  <robot_team.core.escalations.EscalationDesk.close_case>`);
- ``ed/patient_arrivals`` (PatientArrival): the patient cue starts the manager's first-step and
  whole-onboarding deadlines;
- ``team/supervisor/directives`` (SupervisorDirective): published when the manager misses one of
  its deadlines and the safe default is a takeover or a hold (a hold also holds the team: see
  :class:`~robot_team.core.escalations.TeamHold`);

Every authorization, report, deadline change, escalation step, hold and human decision is an
event on ``team/events``; escalations and, after every change, the workflow (tasks, deadlines,
patient cue, directives) persist in ``escalation_db`` (SQLite), so a restarted supervisor takes
up the tasks in flight, the pending deadlines (due at their ROS times), the open escalations and
the holds (``workflow_restored``, ``escalation_restored``).
"""

from __future__ import annotations

import threading
import time

from action_msgs.srv import CancelGoal
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import InvalidHandle
from rclpy.executors import SingleThreadedExecutor
from rclpy.logging import LoggingSeverity
from rclpy.node import Node

from robot_team.contracts import names
from robot_team.contracts.clock_sync import BUSY, served_at_s
from robot_team.contracts.errors import ToolError
from robot_team.contracts.config import ConfigError, Deadlines, Scenario, load_scenario
from robot_team.contracts.names import NO_ROBOT, RobotId
from robot_team.core.escalations import (
    EscalationDesk,
    EscalationPolicy,
    EscalationStore,
    StaffCheck,
    load_escalation_policy,
)
from robot_team.core.supervisor import SupervisorCore
from robot_team.core.supervisor_reports import parse_report
from robot_team.directory import StaffDirectory
from robot_team.llm.lockstep import BACK_NOTICE, ClockHoldPublisher
from robot_team.contracts.events import EventKind
from robot_team.msg import (
    Escalation,
    HumanDecision,
    Instruction,
    NodeLiveness,
    PatientArrival,
    StaffBoard,
    StaffMember,
    SupervisorDirective,
    TaskReport,
    TeamHold,
)
from robot_team.contracts.reports import TaskReportModel
from robot_team.contracts.liveness import BackNotices, LivenessChange, watched
from robot_team.ros.clock import follow_clock
from robot_team.ros.liveness import LivenessWatch, announce_alive
from robot_team.ros.emitter import EventEmitter, log_line
from robot_team.ros.messages import reliable_qos, report_from_msg, report_to_msg
from robot_team.ros.services import reported_deliveries
from robot_team.ros.stamps import now_s, s_to_stamp, stamp_to_s
from robot_team.ros.util import call_service, declare_robots, spin_node
from robot_team.srv import (
    AcknowledgeEscalation,
    AuthorizeTask,
    CloseCase,
    LocateStaff,
    RaiseEscalation,
    RequestEscalation,
    ResolveEscalation,
    SendInstruction,
    SubmitReport,
)
from robot_team.rules.workflow.policy import WorkflowPolicy
from robot_team.rules.workflow.state import WorkflowState

DEADLINE_CHECK_PERIOD_S = 0.5
"""Period of the deadline check, s of ROS time."""

RAW_TEXT_LIMIT = 2000
"""Longest raw field of a rejected report kept in the event record, characters."""

STAFF_REFRESH_S = 2.0
"""How often the RTLS is asked for availability, wall s."""

BACK_NOTICE_WAIT_S = 5.0
"""Wall s a robot back on the network waits at most for its action servers to be discovered again
and its goals' cancels to be answered before the team hears it is back
(:meth:`SupervisorNode.liveness_callback`)."""

NAV2_GOALS = (names.NAVIGATE_TO_POSE, names.NAVIGATE_THROUGH_POSES, names.FOLLOW_PATH)
"""A navigation robot's Nav2 actions whose goals a team hold cancels."""


def hold_cancels(robots) -> tuple[str, ...]:
    """Return the actions whose goals a team hold cancels: each robot's tasks, each navigation robot's Nav2 goals."""
    return tuple(names.robot_name(r, names.EXECUTE_TASK) for r in robots) + tuple(
        names.robot_name(r, a) for r in robots if names.role_name(r) == names.Role.NAVIGATION.value
        for a in NAV2_GOALS)


HOLD_CANCELS = hold_cancels(names.OPERATIONAL_ROLES)
"""The actions :func:`hold_cancels` gives for the team of one robot per role."""


def _back_pause(robot: RobotId, number: int) -> str:
    """Return why the deadlines are paused while ``robot``'s back notice (its change ``number``) waits.

    One pause per notice: a notice superseded while it waits (the robot lost and back again) ends
    its own pause, not the next one's (:meth:`EscalationDesk.pause_deadlines
    <robot_team.core.escalations.EscalationDesk.pause_deadlines>` keys pauses by their reason).
    """
    return f'{robot} is back (liveness change {number}): its goals are cancelled before the team hears it'


class SupervisorNode(Node):
    """The supervisor node (``supervisor``): workflow gate, deadlines, escalations.

    Parameters
    ----------
    scenario
        The episode's scenario (its deadlines); ``None``: load the ``scenario`` parameter (name
        or path; empty: default deadlines).
    escalation_policy
        Who may decide, escalation deadlines, safe default; ``None``: load the
        ``escalation_policy`` parameter (a YAML path; empty: ``config/escalations.yaml``).
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameters: ``scenario``, ``issue_handling_deadline_s``,
        ``task_deadline_s``, ``decision_deadline_s``, ``onboarding_deadline_s`` (s) and
        ``safe_default`` (``takeover``, ``hold`` or ``escalate``), each defaulting to the
        scenario's :class:`~robot_team.contracts.config.Deadlines`; ``use_sim_time`` (expected true in runs:
        deadlines run on sim time), ``escalation_policy``, ``escalation_db`` (SQLite file of the
        escalations, e.g. beside the run's record; empty: in memory), ``staff_db`` (the run's staff
        directory, to check ``reassign`` decisions; empty: no directory check).

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

    def __init__(self, scenario: Scenario | None = None, *, escalation_policy: EscalationPolicy | None = None,
                 context=None, parameter_overrides=None):
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
            self.declare_parameter('escalation_policy', '')
            self.declare_parameter('escalation_db', '')
            self.declare_parameter('staff_db', '')
            escalation_policy = escalation_policy or load_escalation_policy(
                self.get_parameter('escalation_policy').value or None)
            store = EscalationStore(self.get_parameter('escalation_db').value or None)
            cases_at_once = self._cases_at_once(scenario.cases_at_once if scenario is not None else 1)
            robots = declare_robots(self, scenario.robots if scenario is not None else names.OPERATIONAL_ROLES)
            staff = self._staff_check(self.get_parameter('staff_db').value)
        except ConfigError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'supervisor cannot start', reason=str(exc))
            raise

        self._group = MutuallyExclusiveCallbackGroup()
        self._escalation_pub = self.create_publisher(Escalation, names.ESCALATIONS, reliable_qos())
        self._decision_pub = self.create_publisher(HumanDecision, names.HUMAN_DECISIONS, reliable_qos())
        self._report_pub = self.create_publisher(TaskReport, names.TASK_REPORTS, reliable_qos())
        self._hold_pub = self.create_publisher(TeamHold, names.TEAM_HOLD, reliable_qos(depth=1))
        self._instruction_pub = self.create_publisher(Instruction, names.INSTRUCTIONS, reliable_qos())
        self._staff_pub = self.create_publisher(StaffBoard, names.STAFF_BOARD, reliable_qos(depth=1))
        self._cancel_clients = {action: self.create_client(CancelGoal, f'{action}/_action/cancel_goal',
                                                           callback_group=self._group)
                                for action in hold_cancels(robots)}
        self._back_holds = ClockHoldPublisher(self, self.get_name(), BACK_NOTICE)   # sim time held per back notice
        self._back_notices = BackNotices()   # a back notice superseded while it waits is not sent
        self._rtls = self.create_client(LocateStaff, names.LOCATE_STAFF, callback_group=self._group)
        self._rtls_pending = False
        self._directive_pub = self.create_publisher(SupervisorDirective, names.SUPERVISOR_DIRECTIVES, reliable_qos())
        self.core = SupervisorCore(WorkflowPolicy(deadlines), self.events.emit,
                                   lambda esc: self.desk.announce(esc), self._publish_decision, self._publish_report,
                                   self._publish_directive, cases_at_once=cases_at_once, robots=robots)
        self.desk = EscalationDesk(self.core, escalation_policy, store, self.events.emit, self, staff)
        deliver = reported_deliveries(self.get_logger(), self.events.emit)   # responses that survive late matching
        for srv_type, name, callback in (
                (SubmitReport, names.SUBMIT_REPORT, self.submit_report_callback),
                (AuthorizeTask, names.AUTHORIZE_TASK, self.authorize_callback),
                (RequestEscalation, names.REQUEST_ESCALATION, self.request_escalation_callback),
                (ResolveEscalation, names.RESOLVE_ESCALATION, self.resolve_escalation_callback),
                (AcknowledgeEscalation, names.ACKNOWLEDGE_ESCALATION, self.acknowledge_escalation_callback),
                (RaiseEscalation, names.RAISE_ESCALATION, self.raise_escalation_callback),
                (SendInstruction, names.SEND_INSTRUCTION, self.send_instruction_callback),
                (CloseCase, names.CLOSE_CASE, self.close_case_callback)):
            deliver(self.create_service(srv_type, name, callback, callback_group=self._group))
        self.create_subscription(PatientArrival, names.PATIENT_ARRIVALS, self.arrival_callback, reliable_qos(),
                                 callback_group=self._group)
        # The node's clock is ROS time: sim time when use_sim_time is true.
        self._deadline_timer = self.create_timer(DEADLINE_CHECK_PERIOD_S, self.deadline_callback,
                                                 callback_group=self._group)
        # Availability is for people deciding now: asked on the wall clock, whatever the sim's speed.
        self._staff_timer = self.create_timer(STAFF_REFRESH_S, self.staff_callback, callback_group=self._group,
                                              clock=Clock(clock_type=ClockType.STEADY_TIME))
        workflow = self.desk.restore_state(now_s(self))   # first: the workflow, then the escalations and holds
        restored = self.desk.restore(now_s(self))
        self._save_state()
        self._publish_staff()
        self._liveness_pub = self.create_publisher(NodeLiveness, names.LIVENESS, reliable_qos())
        self.liveness = LivenessWatch(self, watched(robots), self.liveness_callback,
                                      callback_group=self._group)
        # the follow clock waits for this node, and jumps ahead no further than its next deadline,
        # expiry or re-notification, never in a step it acted in (ros.clock)
        self._clock_follower = follow_clock(self, self._next_event, activity=lambda: self.events.count)
        self._heartbeat = announce_alive(self)
        self.events.emit(EventKind.NODE_STARTED, 'supervisor ready: workflow gate, deadlines, escalations',
                         scenario=scenario.name if scenario is not None else '',
                         issue_handling_deadline_s=deadlines.issue_handling_s,
                         task_deadline_s=deadlines.task_s, decision_deadline_s=deadlines.decision_s,
                         onboarding_deadline_s=deadlines.onboarding_s, safe_default=deadlines.safe_default,
                         use_sim_time=bool(self.get_parameter('use_sim_time').value),
                         operators=escalation_policy.operators,
                         escalation_deadlines_s={k.value: v for k, v in escalation_policy.deadlines_s.items()},
                         on_expiry=escalation_policy.on_expiry, renotify_s=escalation_policy.renotify_s,
                         escalation_db=str(store.path or ''), restored_escalations=restored,
                         restored_tasks=[t.task_id for t in workflow.workflow.tasks] if workflow else [],
                         hcw_directory_check=staff.checks_directory)

    @property
    def policy(self) -> WorkflowPolicy:
        """The workflow policy of the case in progress (a new one for each later case)."""
        return self.core.policy

    def snapshot(self) -> WorkflowState:
        """Return a copy of the case in progress's workflow state (tasks, escalations, deadlines, closed flag)."""
        return self.policy.snapshot()

    # --- Callbacks ----------------------------------------------------------------------------

    def authorize_callback(self, request, response):
        """Approve or refuse a delegation against the workflow rules (and the team hold); answer with the rule.

        A request whose ``request_id`` was answered before gets that answer again (:meth:`SupervisorCore.answer_once
        <robot_team.core.supervisor.SupervisorCore.answer_once>`).
        """
        def serve() -> dict:
            auth = self.desk.authorize(request.task_type, request.robot, request.reason, request.requested_by,
                                       now_s(self), hcw_id=request.hcw_id, case_id=request.case_id)
            return {'approved': auth.approved, 'task_id': auth.task_id, 'hcw_id': auth.hcw_id,
                    'case_id': auth.case_id, 'rule': auth.rule.value, 'explanation': auth.explanation}
        return self._answer(names.AUTHORIZE_TASK, request.request_id, serve, response)

    def submit_report_callback(self, request, response):
        """Validate and record a report (the one place reports are recorded); reject, never drop, a bad one."""
        msg = request.report
        report = parse_report(lambda: report_from_msg(msg), lambda: _raw_report(msg), self.core)
        if report is None:
            response.accepted, response.explanation = False, 'the report does not validate (see report_rejected)'
            return response
        response.accepted, response.explanation = self.core.submit_report(report, self._served_s(msg.stamp),
                                                                          _raw_report(msg))
        self._save_state()
        if response.accepted:
            log_line(self.get_logger(), LoggingSeverity.INFO,
                     f'{report.task_id} ({report.task_type.value}) reported {report.status.value}'
                     + (f': {report.issue}' if report.issue else ''))
        return response

    def request_escalation_callback(self, request, response):
        """Open an escalation the manager asked for and publish it; refuse unknown tasks or no reason.

        A request whose ``request_id`` was answered before gets that answer again, and no second escalation.
        """
        def serve() -> dict:
            accepted, escalation_id, message = self.core.request_escalation(
                request.task_id, request.reason, list(request.options), now_s(self))
            return {'accepted': accepted, 'escalation_id': escalation_id, 'message': message}
        return self._answer(names.REQUEST_ESCALATION, request.request_id, serve, response)

    def _answer(self, service: str, request_id: str, serve, response):
        """Fill ``response`` with ``serve()``'s fields, or with the answer kept for ``request_id``; store the state.

        The answer is stored with the workflow before the response leaves, so a supervisor restarted
        after this point answers a resent request the same way.
        """
        for field, value in self.core.answer_once(service, request_id, serve).items():
            setattr(response, field, value)
        self._save_state()
        return response

    def resolve_escalation_callback(self, request, response):
        """Record a person's decision on an escalation and publish it; refuse (and record) bad ones."""
        answer = self.desk.resolve(request.escalation_id, request.decision, request.hcw_id, request.note,
                                   request.operator_id, now_s(self))
        self._save_state()
        response.accepted, response.refusal, response.message = answer.accepted, answer.refusal.value, answer.message
        return response

    def acknowledge_escalation_callback(self, request, response):
        """Record that an authorised operator has an escalation; refuse (and record) anyone else."""
        answer = self.desk.acknowledge(request.escalation_id, request.operator_id, request.note, now_s(self))
        response.accepted, response.refusal, response.message = answer.accepted, answer.refusal.value, answer.message
        return response

    def raise_escalation_callback(self, request, response):
        """Open a person's concern or stop-and-hold; refuse (and record) bad input."""
        answer = self.desk.raise_escalation(request.operator_id, request.kind, request.task_id, request.reason,
                                            request.severity, now_s(self))
        self._save_state()
        response.accepted, response.escalation_id = answer.accepted, answer.escalation_id
        response.refusal, response.message = answer.refusal.value, answer.message
        return response

    def send_instruction_callback(self, request, response):
        """Publish an authorised person's instruction to the team; refuse (and record) bad input."""
        answer = self.desk.instruct(request.operator_id, request.task_id, request.text, now_s(self))
        response.accepted, response.instruction_id = answer.accepted, answer.instruction_id
        response.refusal, response.message = answer.refusal.value, answer.message
        return response

    def arrival_callback(self, msg) -> None:
        """Open the patient's case at the patient cue (it starts now, or waits for the case in progress)."""
        self.core.on_patient_arrival(msg.patient_id, self._served_s(msg.header.stamp),
                                     assigned_hcw_id=msg.assigned_hcw_id,
                                     required_specialty=msg.required_specialty, room=msg.room,
                                     esi_level=msg.esi_level)
        self._save_state()

    def _served_s(self, stamp) -> float:
        """Return when a message stamped ``stamp`` is served: now, or its stamp up to a clock step ahead.

        The supervisor's clock may lag the sender's by a step (:func:`~robot_team.contracts.clock_sync.served_at_s`):
        a deadline the message starts then starts when the world's event happened, never before.
        A negative stamp is not believed (now).
        """
        now = now_s(self)
        try:
            return served_at_s(now, stamp_to_s(stamp))
        except ValueError:
            return now

    def close_case_callback(self, request, response):
        """Close a case the hospital's record ended (an Encounter finished or cancelled); say what became of it."""
        end = self.desk.close_case(request.patient_id, request.status, request.reference, request.requested_by,
                                   now_s(self))
        self._save_state()
        response.accepted, response.result, response.message = end.accepted, end.result, end.message
        response.escalation_id = end.escalation_id
        return response

    def _next_event(self) -> float:
        """Return the ROS time (s) of the supervisor's next work of its own, for the follow clock's jump ahead.

        :data:`~robot_team.contracts.clock_sync.BUSY` while a node it watches is lost: whether and
        when it comes back (a restart, a host back on the network) is a matter of wall time, and
        the team waits on it; else :meth:`EscalationDesk.next_event_s
        <robot_team.core.escalations.EscalationDesk.next_event_s>`.
        """
        if self.liveness.tracker.lost():
            return BUSY
        return self.desk.next_event_s(now_s(self))

    def deadline_callback(self) -> None:
        """Escalate every deadline missed by now (ROS time); expire and re-notify escalations."""
        self.desk.tick(now_s(self))
        self._save_state()

    def liveness_callback(self, change: LivenessChange) -> None:
        """Record a team node lost, back or heard first; recover a lost robot's task, stop its goals, tell the team.

        A robot back as the same incarnation (its host was cut off the network) may still run the
        task that was closed when it was lost: the cancel sent then could not reach it. A restarted
        robot holds no goal of its predecessor, but the cancel sent when it was lost may wait in its
        new process, which takes it with the next goal and runs the goal first: the new task is
        cancelled (CI rehearsal, 2026-12-03: an info-collection robot restarted before its lease ran
        out, its next task cancelled 0.2 s after it started, the case held for a person). Either
        way its goals are cancelled again, and the team hears that it is back once the cancels are
        answered (at most :data:`BACK_NOTICE_WAIT_S` later): a server answers requests in the order
        they came, so a cancel still waiting is served before, and a new delegation never reaches
        the robot before them.
        The workflow's deadlines are paused meanwhile (:meth:`EscalationDesk.pause_deadlines`): the
        manager cannot act on the robot's closed task before it hears, however long the cancels take.
        """
        now = now_s(self)
        recovered = self.core.liveness_changed(change, now)
        self._save_state()
        if change.state == 'seen':
            return   # on the record only: the team was never told that it was lost
        task = recovered.task_id if recovered is not None else ''
        notice = NodeLiveness(
            stamp=s_to_stamp(now), node=change.node, state=change.state, instance_id=change.instance_id,
            restarted=change.restarted, task_id=task, noticed_by=change.noticed_by, lost_for_s=change.lost_for_s)
        if change.node in self.core.robots:
            number = self._back_notices.changed(change.node)   # (a back notice still waiting is superseded)
            if change.state == 'lost':
                self.stop_robots(f'{change.node} was lost', robot=change.node)
            else:   # 'back': announced once its goals are cancelled
                self.desk.pause_deadlines(_back_pause(change.node, number), now)
                hold = self._back_holds.begin()
                threading.Thread(target=self._cancel_then_announce, args=(change.node, notice, hold, number),
                                 name=f'back-{change.node}', daemon=True).start()
                return
        self._liveness_pub.publish(notice)

    def _cancel_then_announce(self, robot: RobotId, notice: NodeLiveness, hold: str, number: int) -> None:
        """Cancel a ``robot``'s goals once it is back (reconnected or restarted), then announce it (within 5 s).

        ``number`` is the change that brought it back (:class:`~robot_team.contracts.liveness.BackNotices`):
        a robot lost again while its cancels wait was announced lost at once, and this notice is not
        sent after that (recorded ``back_notice_withdrawn``), so the team never hears "back" last
        about a robot that is gone.

        Its action servers may be discovered again a moment after its liveliness: the cancel waits
        for them (within the same bound), so that it is never skipped as unreachable, and is sent
        again to a server that appears while it waits (:func:`~robot_team.ros.util.call_service`:
        the graph may still show a restarted robot's dead server, which never answers). Sim time is
        held meanwhile (``hold``, begun by the caller, reason
        :data:`~robot_team.llm.lockstep.BACK_NOTICE`): the wait is wall time.
        """
        deadline = time.monotonic() + BACK_NOTICE_WAIT_S
        reason = f'{robot} is back: the task closed when it was lost must not go on'
        try:
            mine = self._cancel_clients_of(robot)
            while time.monotonic() < deadline and not all(c.service_is_ready() for c in mine.values()):
                time.sleep(0.05)

            def cancel(action: str, client, left: float) -> None:
                try:
                    response = call_service(self, client, CancelGoal.Request(), left, f'the cancel of {action}')
                except ToolError as exc:
                    self._record_cancel(action, reason, None, exc)
                else:
                    self._record_cancel(action, reason, response, None)
            calls = []   # one thread per action, as stop_robots sends them all at once: none waits on another
            left = deadline - time.monotonic()
            for action, client in mine.items():
                if not client.service_is_ready() or left <= 0:
                    self._record_unreachable(action, reason)
                    continue
                calls.append(threading.Thread(target=cancel, args=(action, client, left), daemon=True,
                                              name=f'back-{robot}-cancel'))
                calls[-1].start()
            for call in calls:
                call.join()   # (each ends by the deadline: call_service's timeout)
            if not self._back_notices.announce_if_current(robot, number, lambda: self._publish_liveness(notice)):
                self.events.emit(EventKind.BACK_NOTICE_WITHDRAWN, f'{robot} was lost again before the team '
                                 'heard it was back: not announced back', target=robot, node=robot,
                                 instance_id=notice.instance_id, restarted=notice.restarted)
        finally:
            try:
                self.desk.resume_deadlines(_back_pause(robot, number), now_s(self))
            finally:   # (a node destroyed meanwhile: the hold still ends)
                self._back_holds.end(hold)

    def _publish_liveness(self, notice: NodeLiveness) -> None:
        """Publish ``notice`` on ``team/liveness`` (from a worker thread too; nothing once the node is gone)."""
        try:
            self._liveness_pub.publish(notice)
        except InvalidHandle:   # the episode ended while the notice waited
            pass

    def staff_callback(self) -> None:
        """Ask the RTLS where everyone is and whether they are available (answer in :meth:`_located`)."""
        if self._rtls_pending or not self._rtls.service_is_ready():
            return
        self._rtls_pending = True
        self._rtls.call_async(LocateStaff.Request()).add_done_callback(self._located)

    # --- DeskPorts ----------------------------------------------------------------------------

    def publish_escalation(self, record, now_s: float) -> None:
        """Publish an escalation's lifecycle state on ``team/escalations``."""
        self._escalation_pub.publish(Escalation(
            stamp=s_to_stamp(now_s), escalation_id=record.escalation_id, task_id=record.task_id,
            task_type=record.task_type, raised_by=record.raised_by, reason=record.reason, options=record.options,
            kind=record.kind.value, severity=record.severity.value, state=record.state.value,
            proposal=record.proposal, opened=s_to_stamp(record.opened_s), opened_wall=record.opened_wall,
            due=s_to_stamp(record.due_s or 0.0), notifications=record.notifications,
            acknowledged_by=record.acknowledged_by, decision=record.decision, hcw_id=record.hcw_id,
            decided_by=record.decided_by, note=record.note, holds_team=record.holds_team,
            patient_id=record.patient_id))

    def publish_instruction(self, instruction) -> None:
        """Publish an accepted instruction on ``team/instructions``."""
        self._instruction_pub.publish(Instruction(
            stamp=s_to_stamp(instruction.sim_s), instruction_id=instruction.instruction_id,
            operator_id=instruction.operator_id, task_id=instruction.task_id, text=instruction.text))

    def publish_hold(self, hold) -> None:
        """Publish the team hold on ``team/hold``."""
        self._hold_pub.publish(TeamHold(stamp=self.get_clock().now().to_msg(), active=hold.active,
                                        escalation_ids=hold.escalation_ids, reason=hold.reason,
                                        held_by=hold.held_by, since=s_to_stamp(hold.since_s or 0.0)))

    def stop_robots(self, reason: str, robot: RobotId = NO_ROBOT) -> list:
        """Cancel every goal of every robot's (or only ``robot``'s) task and Nav2 actions (zero goal ID: all goals).

        Returns the cancel requests' futures (servers not reachable now are recorded and skipped).
        """
        sent = []
        for action, client in self._cancel_clients_of(robot).items():
            if not client.service_is_ready():
                self._record_unreachable(action, reason)
                continue
            future = client.call_async(CancelGoal.Request())
            future.add_done_callback(lambda future, action=action: self._cancelled(action, reason, future))
            sent.append(future)
        return sent

    # --- Helpers ------------------------------------------------------------------------------

    def _cancel_clients_of(self, robot: RobotId = NO_ROBOT) -> dict:
        """Return the cancel clients of ``robot``'s actions (its task's, its Nav2 goals'), by action; all for none."""
        return {action: client for action, client in self._cancel_clients.items()
                if not robot or action.startswith(f'{robot}/')}

    def _cancelled(self, action: str, reason: str, future) -> None:
        """Record a cancel-all answer (which goals are cancelling)."""
        exc = future.exception()
        self._record_cancel(action, reason, None if exc is not None else future.result(), exc)

    def _record_unreachable(self, action: str, reason: str) -> None:
        """Record that no server of ``action`` was there to cancel its goals."""
        self.events.emit(EventKind.GOALS_CANCELLED, f'no {action} server to cancel', target=action,
                         reason=reason, action=action, reachable=False, goals=[])

    def _record_cancel(self, action: str, reason: str, response, exc: BaseException | None) -> None:
        """Record a cancel-all's ``response`` (which goals are cancelling), or its failure ``exc``."""
        if exc is not None:
            self.events.emit(EventKind.GOALS_CANCELLED, f'cancelling {action} failed', target=action,
                             reason=f'{reason}; {exc}', action=action, reachable=True, goals=[], error=str(exc))
            return
        goals = [bytes(g.goal_id.uuid).hex() for g in response.goals_canceling]
        self.events.emit(EventKind.GOALS_CANCELLED, f'{len(goals)} goal(s) of {action} cancelling', target=action,
                         reason=reason, action=action, reachable=True, goals=goals,
                         return_code=int(response.return_code))

    def _located(self, future) -> None:
        """Take the RTLS answer into the staff check; publish the board if it changed."""
        self._rtls_pending = False
        if future.exception() is not None:
            log_line(self.get_logger(), LoggingSeverity.WARN, f'{names.LOCATE_STAFF} failed: {future.exception()}')
            return
        located = [{'hcw_id': s.hcw_id, 'area': s.area, 'availability': s.availability, 'detail': s.detail,
                    'specialty': s.specialty} for s in future.result().staff]
        if self.desk.staff.update(located, now_s(self)):
            self._publish_staff()

    def _publish_staff(self) -> None:
        staff = self.desk.staff
        self._staff_pub.publish(StaffBoard(
            stamp=self.get_clock().now().to_msg(), availability_stamp=s_to_stamp(staff.located_s or 0.0),
            staff=[StaffMember(**entry.model_dump()) for entry in staff.entries()]))

    def _staff_check(self, staff_db: str) -> StaffCheck:
        if not staff_db:
            return StaffCheck()
        return StaffCheck(StaffDirectory(staff_db))

    # --- Helpers ------------------------------------------------------------------------------

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

    def _cases_at_once(self, default: int) -> int:
        value = self.declare_parameter('cases_at_once', default, ParameterDescriptor(
            dynamic_typing=True, description='How many cases may be open at once (robot_team.contracts.cases); 1: one '
                                             'case at a time, 0: no limit. Default: the scenario\'s.')).value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f'supervisor parameter cases_at_once: expected an integer >= 0 (0: no limit), '
                              f'got {value!r}')
        return value

    def _safe_default(self, default: str) -> str:
        value = str(self.declare_parameter('safe_default', default, ParameterDescriptor(
            description='What the supervisor applies when the manager misses a deadline: takeover, hold or '
                        'escalate.')).value)
        if value not in ('takeover', 'hold', 'escalate'):
            raise ConfigError(f"supervisor parameter safe_default: expected 'takeover', 'hold' or 'escalate', "
                              f'got {value!r}')
        return value

    def _save_state(self) -> None:
        """Store the workflow for a restart if the last callback changed it (``EscalationDesk.save_state``)."""
        self.desk.save_state(now_s(self))

    def _publish_directive(self, directive) -> None:
        self._directive_pub.publish(SupervisorDirective(
            stamp=self.get_clock().now().to_msg(), directive_id=directive.directive_id, directive=directive.directive,
            target=directive.target, escalation_id=directive.escalation_id, deadline=directive.deadline,
            reason=directive.reason))

    def _publish_decision(self, esc) -> None:
        self._decision_pub.publish(HumanDecision(
            stamp=self.get_clock().now().to_msg(), escalation_id=esc.escalation_id, decision=esc.decision,
            hcw_id=esc.hcw_id, note=esc.note, operator_id=esc.decided_by))

    def _publish_report(self, report: TaskReportModel) -> None:
        self._report_pub.publish(report_to_msg(report))


def _raw_report(msg) -> dict:
    """Return a rejected report's fields as received (long text cut to RAW_TEXT_LIMIT characters)."""
    fields = ('task_id', 'task_type', 'robot', 'status', 'issue', 'summary', 'data_json', 'evidence_json')
    raw = {name: getattr(msg, name) for name in fields}
    raw = {k: v if len(v) <= RAW_TEXT_LIMIT else v[:RAW_TEXT_LIMIT] + '...' for k, v in raw.items()}
    try:
        raw['stamp_s'] = stamp_to_s(msg.stamp)
    except ValueError:   # a stamp before 0: kept as received
        raw['stamp_s'] = f'{msg.stamp.sec} s {msg.stamp.nanosec} ns'
    return raw


def main(args=None) -> int:
    """Run the supervisor (``ros2 run robot_team supervisor``)."""
    # Single-threaded: every callback is short and never waits on another one (services answer
    # from the policy's state), so one thread serves the whole node.
    return spin_node('supervisor', SupervisorNode, SingleThreadedExecutor, args)


if __name__ == '__main__':
    raise SystemExit(main())
