"""The manager robot as a ROS 2 node: it delegates and judges, never operates.

The manager observes environment cues (``ed/patient_arrivals``), robot reports (ExecuteTask
results), escalations and human decisions, and asks its brain what to do. It can only:

- delegate a task: the supervisor's ``authorize_task`` gate first (workflow order, right
  robot, no unexplained repeats), then an ExecuteTask goal to that robot;
- escalate a problem through the supervisor's ``request_escalation``;
- write the reflection (authorized as the last workflow step, refused if incomplete).

It owns no robot tool and no client to the floor's infrastructure. Every decision, refusal
and judgment is an event on ``team/events``. The logic is :class:`~robot_team.core.manager.ManagerCore`;
this node is its ROS side (:class:`~robot_team.core.manager_ports.ManagerPorts`): subscriptions feed
the core's observation, clients carry out its actions.

The supervisor's safe defaults arrive on ``team/supervisor/directives`` (SupervisorDirective):
``takeover`` hands the manager's role to the protocol brain for the rest of the episode,
``hold`` stops its decisions until a human answers the named escalation.

Threading model: subscriptions and client callbacks run on a ``MultiThreadedExecutor``; the
brain runs on a dedicated worker thread that is woken when the observation changes, so a slow
brain (an LLM) never blocks ROS callbacks. The worker waits on futures the executor completes.
:meth:`ManagerNode.stop` ends the worker (cancelling an LLM request in flight) while the
executor still spins; :meth:`ManagerNode.destroy_node` stops first, so no brain callback ever
reaches a destroyed node.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.logging import LoggingSeverity
from rclpy.node import Node

from robot_team.ros.action_client import TeamActionClient
from robot_team.contracts import names
from robot_team.action import ExecuteTask
from robot_team.brains.base import ManagerBrain, PatientInfo, StaffInfo, SupervisorInstruction, TaskSpec
from robot_team.brains.protocol import ManagerProtocolBrain
from robot_team.catalog import MANAGER_TOOLS, TASK_OWNER
from robot_team.contracts.config import ConfigError
from robot_team.core.manager import ManagerCore
from robot_team.core.manager_store import ManagerStore
from robot_team.contracts.errors import ToolError
from robot_team.contracts.geometry import path_length
from robot_team.contracts.escalation_model import EscalationKind, EscalationRecord
from robot_team.contracts.events import EventKind
from robot_team.agents.discovery import DiscoveryHold
from robot_team.llm.factory import LLM_BRAINS, clock_hold, llm_manager_brain
from robot_team.msg import (
    Escalation, HumanDecision, Instruction, NodeLiveness, PatientArrival, StaffBoard, SupervisorDirective, TaskReport,
    TeamHold)
from robot_team.contracts.names import RobotId, Role
from robot_team.contracts.reports import (
    OPERATIONAL_TASKS, EscalationAnswer, IssueCode, ReportAnswer, ReportError, TaskReportModel)
from robot_team.contracts.clock_sync import unscheduled
from robot_team.ros.clock import follow_clock
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.liveness import announce_alive
from robot_team.ros.emitter import EventEmitter, log_line
from robot_team.ros.messages import reliable_qos, report_from_msg
from robot_team.ros.stamps import now_s
from robot_team.ros.util import SERVER_WAIT_S, call_service, declare_robots, spin_node, submit_report, wait_for_server
from robot_team.srv import AuthorizeTask, LocateStaff, RequestEscalation, SubmitReport
from robot_team.tools.navigation import ComputePathClient
from robot_team.rules.workflow.state import Authorization, WorkflowRule

ROBOTS = [TASK_OWNER[t] for t in OPERATIONAL_TASKS]


def make_manager_brain(kind: str, issue_handling: str = 'propose_alternative', *, events=None,
                       kb: bool = True, base_url: str = '', hold=None, model: str = '',
                       decoding: str = '') -> ManagerBrain:
    """Return the manager brain of kind ``kind`` ('protocol', or an LLM brain: 'openai', 'local', 'random').

    ``events`` (the node's EventEmitter) records the LLM brain's requests, replies and refused
    tool calls; ``kb`` gives an LLM brain its knowledge-base sections; ``base_url`` (the
    ``llm_base_url`` parameter), ``model`` (``llm_model``: the local endpoint's model), ``decoding``
    (``llm_decoding``) and ``hold`` (lockstep clock) as in :mod:`robot_team.llm.factory`.

    Raises
    ------
    ValueError
        If the kind is unknown.
    """
    if kind == 'protocol':
        return ManagerProtocolBrain(issue_handling=issue_handling)
    if kind in LLM_BRAINS:
        return llm_manager_brain(kind, emit=events.emit if events is not None else None, kb=kb, base_url=base_url,
                                 hold=hold, model=model, decoding=decoding,
                                 fallback_brain=lambda: ManagerProtocolBrain(issue_handling=issue_handling))
    raise ValueError(f"unknown brain '{kind}' for the manager: expected {', '.join(('protocol', *LLM_BRAINS))}")


RESULT_GRACE_S = 2.0
"""Wall time (s) an ExecuteTask result may trail the supervisor's copy of its report before that copy is taken."""


class _AwaitedResult:
    """A delegated task whose report the manager's core still waits for.

    It comes as the robot's ExecuteTask result or, when that is lost, as the supervisor's
    recorded copy on ``team/task_reports``; :meth:`deliver` lets the first one through.
    """

    def __init__(self, task_id: str, robot: RobotId, done):
        self.task_id, self.robot, self.done = task_id, robot, done
        self.delivered = threading.Event()
        self.recorded = False   # the supervisor's copy came: the result's grace (wall time) runs
        self.response_owed = True   # its ExecuteTask goal has no response yet (the follow clock does not jump)
        self._lock = threading.Lock()

    def deliver(self) -> bool:
        """Return True exactly once: for the first copy of the report to reach the core."""
        with self._lock:
            if self.delivered.is_set():
                return False
            self.delivered.set()
            return True


class ManagerNode(Node):
    """The manager robot: ROS wiring around :class:`~robot_team.core.manager.ManagerCore`.

    Parameters
    ----------
    brain
        Its brain; default from the ``brain`` and ``issue_handling`` parameters.
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameters: ``brain``, ``issue_handling``,
        ``service_timeout_s`` (wall s to wait for an answer of the supervisor, the RTLS or a robot's
        planner; a server not discovered yet is waited for :data:`~robot_team.ros.util.SERVER_WAIT_S`
        with sim time held), ``kb``,
        ``state_db`` (SQLite file of what the manager knows, e.g. beside the run's record, taken up
        by a restarted manager: :mod:`robot_team.core.manager_store`; empty: nothing kept),
        ``robots`` (the team's operational robots, default one per role; a fleet's are
        ``<role>_<n>``: :func:`robot_team.ros.util.declare_robots`).

    Attributes
    ----------
    core : ManagerCore
        The manager's logic; ``core.finished`` is set when the episode ends (``core.outcome``).
    discovery_hold : DiscoveryHold
        Holds the team's sim time while the manager waits for DDS to discover a server, and
        records the wait (:mod:`robot_team.agents.discovery`).
    """

    def __init__(self, brain: ManagerBrain | None = None, *, context=None, parameter_overrides=None):
        super().__init__(Role.MANAGER.value, context=context, parameter_overrides=parameter_overrides or [])
        self.declare_parameter('brain', 'protocol')
        self.declare_parameter('issue_handling', 'propose_alternative')
        self.declare_parameter('service_timeout_s', 15.0)
        self.declare_parameter('kb', True)
        self.declare_parameter('cases', 1)
        self.declare_parameter('cases_at_once', 1)
        self.declare_parameter('lessons', True)
        self.events = EventEmitter(self, Role.MANAGER.value)
        make_brain = None   # one brain per open case (cases_at_once)
        if brain is None:   # LLM brains: endpoint and LLM clock (robot_team.llm.factory, robot_team.llm.lockstep)
            llm_clock = self.declare_parameter('llm_clock', 'realtime').value
            options = dict(events=self.events, kb=bool(self.get_parameter('kb').value),
                           base_url=self.declare_parameter('llm_base_url', '').value,
                           model=self.declare_parameter('llm_model', '').value,
                           decoding=self.declare_parameter('llm_decoding', '').value,
                           hold=clock_hold(self, Role.MANAGER.value, llm_clock))

            make_brain = functools.partial(make_manager_brain, self.get_parameter('brain').value,
                                           self.get_parameter('issue_handling').value, **options)
            brain = make_brain()
        self._first_brain = brain
        self._timeout = float(self.get_parameter('service_timeout_s').value)
        self._group = ReentrantCallbackGroup()
        self._stop = threading.Event()
        self._restarted: set[str] = set()   # robots back as a new incarnation (their goals wait for one server)
        self._awaited: dict[str, _AwaitedResult] = {}   # task_id -> its goal whose ExecuteTask result is owed
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.discovery_hold = DiscoveryHold(self, Role.MANAGER.value, self.events.emit)

        qos = reliable_qos()
        self._authorize = self.create_client(AuthorizeTask, names.AUTHORIZE_TASK, callback_group=self._group)
        self._escalate = self.create_client(RequestEscalation, names.REQUEST_ESCALATION,
                                            callback_group=self._group)
        self._submit = self.create_client(SubmitReport, names.SUBMIT_REPORT, callback_group=self._group)
        try:
            robots = declare_robots(self, ROBOTS)
        except ConfigError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'manager cannot start', reason=str(exc))
            raise
        self._robots = {robot: TeamActionClient(self, ExecuteTask, names.robot_name(robot, names.EXECUTE_TASK),
                                                callback_group=self._group) for robot in robots}
        # choosing among a fleet's idle navigation robots: where the HCW is, each robot's planned path there
        self._rtls = self.create_client(LocateStaff, names.LOCATE_STAFF, callback_group=self._group)
        self._planners = {robot: ComputePathClient(self, names.robot_name(robot, names.COMPUTE_PATH_TO_POSE),
                                                   self._group)
                          for robot in robots if names.role_name(robot) == Role.NAVIGATION.value}
        issue_handling = self.get_parameter('issue_handling').value

        def protocol_brain() -> ManagerBrain:   # the brain that takes over on a supervisor's directive
            return ManagerProtocolBrain(issue_handling=issue_handling)
        state_db = self.declare_parameter('state_db', '').value
        try:
            store = ManagerStore(state_db)
        except ConfigError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'manager cannot open its state store', reason=str(exc))
            raise
        try:
            self.core = ManagerCore(brain, self, self.events.emit, robots, fallback=protocol_brain, store=store,
                                    cases=int(self.get_parameter('cases').value),
                                    cases_at_once=int(self.get_parameter('cases_at_once').value), make_brain=make_brain,
                                    lessons=bool(self.get_parameter('lessons').value))
        except ValueError as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'manager cannot start', reason=f'parameter cases_at_once: {exc}')
            raise ConfigError(f'manager parameter cases_at_once: {exc}') from exc
        self.create_subscription(PatientArrival, names.PATIENT_ARRIVALS, self.arrival_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(Escalation, names.ESCALATIONS, self.escalation_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(HumanDecision, names.HUMAN_DECISIONS, self.decision_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(Instruction, names.INSTRUCTIONS, self.instruction_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(TeamHold, names.TEAM_HOLD, self.hold_callback, reliable_qos(depth=1),
                                 callback_group=self._group)
        self.create_subscription(SupervisorDirective, names.SUPERVISOR_DIRECTIVES, self.directive_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(StaffBoard, names.STAFF_BOARD, self.staff_callback, reliable_qos(depth=1),
                                 callback_group=self._group)
        self.create_subscription(TaskReport, names.TASK_REPORTS, self.task_report_callback, qos,
                                 callback_group=self._group)
        self.create_subscription(NodeLiveness, names.LIVENESS, self.liveness_callback, qos,
                                 callback_group=self._group)
        self._worker = threading.Thread(target=self.core.run, args=(self._stop,), name='manager-brain', daemon=True)
        self._worker.start()
        # the follow clock waits for this node, and jumps ahead only while it waits for a message and
        # did not act since its last acknowledgement (ros.clock)
        self._clock_follower = follow_clock(self, self._next_event, activity=lambda: self.events.count)
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)
        self.events.emit(EventKind.NODE_STARTED, f'manager ready with brain {type(self.core.brain).__name__}'
                         + (' (restarted: its record taken up)' if self.core.restored else ''),
                         brain=type(self.core.brain).__name__, tools=list(MANAGER_TOOLS), state_db=state_db,
                         restored=self.core.restored)

    @property
    def brain(self) -> ManagerBrain:
        """The manager's brain."""
        return self.core.brain

    @property
    def finished(self) -> threading.Event:
        """Set when the brain finishes the episode."""
        return self.core.finished

    @property
    def outcome(self) -> str:
        """The episode's outcome once finished ('' before)."""
        return self.core.outcome

    # -- subscriptions (executor threads) --

    def arrival_callback(self, msg) -> None:
        """Pass the patient-arrival cue to the core."""
        self.core.on_arrival(PatientInfo(patient_id=msg.patient_id, room=msg.room, presentation=msg.presentation,
                                         esi_level=msg.esi_level, assigned_hcw_id=msg.assigned_hcw_id,
                                         required_specialty=msg.required_specialty))

    def escalation_callback(self, msg) -> None:
        """Pass an escalation (the manager's own or the supervisor's) to the core."""
        self.core.on_escalation(EscalationRecord(escalation_id=msg.escalation_id, task_id=msg.task_id,
                                                 task_type=msg.task_type, raised_by=msg.raised_by,
                                                 reason=msg.reason, kind=_kind(msg.kind), patient_id=msg.patient_id))

    def decision_callback(self, msg) -> None:
        """Pass a human decision on an escalation to the core."""
        self.core.on_decision(msg.escalation_id, msg.decision, msg.hcw_id, msg.note, msg.operator_id)

    def instruction_callback(self, msg) -> None:
        """Pass a person's instruction to the core (a flagged, advisory observation)."""
        self.core.on_instruction(SupervisorInstruction(instruction_id=msg.instruction_id, operator_id=msg.operator_id,
                                                       task_id=msg.task_id, text=msg.text))

    def staff_callback(self, msg) -> None:
        """Know the staff directory with availability (``team/staff``), for the HCWs a delegation may name."""
        self.core.on_staff([StaffInfo(hcw_id=m.hcw_id, specialty=m.specialty, availability=m.availability)
                            for m in msg.staff])

    def task_report_callback(self, msg) -> None:
        """Take a task the supervisor closed (a lost robot's); other reports come as ExecuteTask results.

        The supervisor republishes every report it recorded; when a robot's own report is on a task
        whose ExecuteTask result has not come :data:`RESULT_GRACE_S` later, that copy is taken
        (:meth:`_take_recorded_report`).
        """
        try:
            report = report_from_msg(msg)
        except ReportError as exc:
            self.events.emit(EventKind.INPUT_ERROR, f'unreadable report on {names.TASK_REPORTS}', target=msg.task_id,
                             reason=str(exc), task_id=msg.task_id)
            return
        awaited = self._awaited.get(report.task_id)
        if awaited is not None and report.issue_code is IssueCode.NONE and not awaited.delivered.is_set():
            awaited.recorded = True
            timer = None

            def fire():
                timer.cancel()
                self.destroy_timer(timer)
                self._take_recorded_report(awaited, report)
            timer = self.create_timer(RESULT_GRACE_S, fire, callback_group=self._group, clock=self._steady)
        elif awaited is not None and report.issue_code is not IssueCode.NONE:
            awaited.response_owed = False   # closed by the supervisor (a lost robot's): no response is owed any more
        self.core.on_task_closed(report)

    def _next_event(self) -> float:
        """Return the manager's ``next_event_s`` for the follow clock: none scheduled while it only waits for a message.

        It has work now (:data:`~robot_team.contracts.clock_sync.BUSY`) while its core is not
        :attr:`~robot_team.core.manager.ManagerCore.idle`, while an ExecuteTask goal it sent has
        no response yet (a robot's new incarnation answers once DDS has matched it: wall time),
        and while a result's grace runs (a report the supervisor recorded whose ExecuteTask result
        has not come: :data:`RESULT_GRACE_S`, wall time).
        """
        owed = any(a.response_owed or (a.recorded and not a.delivered.is_set()) for a in list(self._awaited.values()))
        return unscheduled(self.core.idle and not owed)

    def _take_recorded_report(self, awaited: _AwaitedResult, report: TaskReportModel) -> None:
        """Take the supervisor's recorded copy of a report whose ExecuteTask result did not come.

        The robot submits its report to the supervisor and then returns the same report as its
        ExecuteTask result. A goal response or result request sent to a robot's new incarnation
        before DDS matched its ``execute_task/_action`` endpoints is lost, and rclpy's ActionClient
        sends neither again, so without this the manager would wait for a report the team already
        recorded. The first of the two copies is taken; the other is dropped.
        """
        if not awaited.deliver():
            return
        self._awaited.pop(awaited.task_id, None)   # its goal response, if lost too, is owed no more
        self.events.emit(EventKind.OBSERVATION, f'{awaited.task_id} taken from the supervisor\'s record',
                         target=awaited.task_id, reason=f'its ExecuteTask result from {awaited.robot} did not come '
                         f'within {RESULT_GRACE_S:g} s of the report on {names.TASK_REPORTS}',
                         cue='result_from_record', task_id=awaited.task_id, robot=awaited.robot)
        awaited.done(report, '')

    def liveness_callback(self, msg) -> None:
        """Take the supervisor's notice of a team node lost or back (``team/liveness``)."""
        if msg.state == msg.STATE_BACK and msg.restarted:
            self._restarted.add(msg.node)
        self.core.on_liveness(msg.node, msg.state, msg.restarted, msg.task_id)

    def hold_callback(self, msg) -> None:
        """Pause the core while the supervisor holds the team; resume on release."""
        self.core.on_hold(msg.active, list(msg.escalation_ids), msg.reason)

    def directive_callback(self, msg) -> None:
        """Carry out the supervisor's safe default for the manager: a takeover or a hold."""
        if msg.target != Role.MANAGER.value:
            return
        if msg.directive == msg.TAKEOVER:
            self.core.take_over(msg.escalation_id, msg.reason)
        elif msg.directive == msg.HOLD:
            self.core.hold(msg.escalation_id, msg.reason)
        else:
            self.events.emit(EventKind.INPUT_ERROR, f'unknown supervisor directive {msg.directive!r}',
                             target=msg.directive_id, reason=f"expected '{msg.TAKEOVER}' or '{msg.HOLD}'",
                             directive=msg.directive, directive_id=msg.directive_id)

    # -- ManagerPorts (called from the core's worker thread) --

    def path_lengths(self, robots: list[RobotId], hcw_id: str) -> dict[RobotId, float]:
        """Return each navigation robot of ``robots``' planned path length to HCW ``hcw_id``, m.

        Where the RTLS (``ed/rtls/locate_staff``) locates the HCW, planned by each robot's Nav2
        planner (``<robot>/compute_path_to_pose``, from its pose). A robot without a plan is left
        out; empty if the RTLS does not know the HCW.

        Raises
        ------
        ToolError
            If the RTLS does not answer within ``service_timeout_s``.
        """
        self._find(self._rtls, f'service {names.LOCATE_STAFF}')
        found = call_service(self, self._rtls, LocateStaff.Request(hcw_ids=[hcw_id]), self._timeout,
                             f'response of {names.LOCATE_STAFF}').staff
        where = next((s.pose.pose.position for s in found if s.hcw_id == hcw_id), None)
        lengths = {}
        for robot in robots:
            if where is None or robot not in self._planners:
                continue
            try:
                lengths[robot] = path_length(self._planners[robot].plan((where.x, where.y), timeout_s=self._timeout))
            except ToolError:   # no plan from there: that robot is not the one to send
                continue
        return lengths

    def authorize(self, task_type: str, robot: RobotId, reason: str, hcw_id: str = '',
                  case_id: str = '') -> Authorization:
        """Ask ``team/supervisor/authorize_task`` about case ``case_id``'s delegation naming ``hcw_id``.

        Returns the answer with its rule and the case the gate serves. The request carries a new
        ``request_id``: sent again to a restarted supervisor that had answered it, it gets the same answer.

        Raises
        ------
        ToolError
            If the supervisor does not answer within ``service_timeout_s``, or answers with a
            rule this manager does not know.
        """
        self._find(self._authorize, f'service {names.AUTHORIZE_TASK}')
        response = call_service(self, self._authorize, AuthorizeTask.Request(
            task_type=task_type, robot=robot, reason=reason, requested_by=Role.MANAGER.value, hcw_id=hcw_id,
            case_id=case_id, request_id=uuid.uuid4().hex), self._timeout, f'response of {names.AUTHORIZE_TASK}')
        try:
            rule = WorkflowRule(response.rule)
        except ValueError:
            raise ToolError(f'{names.AUTHORIZE_TASK} answered with unknown rule {response.rule!r}: expected one of '
                            f"{', '.join(r.value for r in WorkflowRule)}") from None
        return Authorization(approved=response.approved, task_id=response.task_id, rule=rule,
                             explanation=response.explanation, task_type=task_type, robot=robot,
                             hcw_id=response.hcw_id, case_id=response.case_id)

    def request_escalation(self, task_id: str, reason: str, options: list[str]) -> EscalationAnswer:
        """Ask ``team/supervisor/request_escalation`` (ToolError on timeout); one escalation however often sent."""
        self._find(self._escalate, f'service {names.REQUEST_ESCALATION}')
        response = call_service(self, self._escalate, RequestEscalation.Request(
            task_id=task_id, reason=reason, options=options, request_id=uuid.uuid4().hex), self._timeout,
            f'response of {names.REQUEST_ESCALATION}')
        return EscalationAnswer(accepted=response.accepted, escalation_id=response.escalation_id,
                                message=response.message)

    def submit_report(self, report: TaskReportModel) -> ReportAnswer:
        """Submit the reflection's report to ``team/supervisor/submit_report`` (raises ToolError on timeout)."""
        return submit_report(self, self._submit, report, self._timeout, self.discovery_hold)

    def send_task(self, robot: RobotId, task: TaskSpec, done) -> None:
        """Send an ExecuteTask goal to ``<robot>/execute_task``; ``done(report, error)`` when it ends."""
        self._find(self._robots[robot], f'action server of {robot}')
        if robot in self._restarted:
            self._wait_one_server(robot)
        client = self._robots[robot]
        goal = ExecuteTask.Goal(task_id=task.task_id, task_type=task.task_type.value, room=task.room,
                                hcw_id=task.hcw_id, instructions=task.instructions,
                                context_json=json.dumps(task.context, default=str))

        awaited = _AwaitedResult(task.task_id, robot, done)
        self._awaited[task.task_id] = awaited

        def on_result(future):
            if not awaited.deliver():
                return   # the supervisor's recorded copy was taken first
            self._awaited.pop(task.task_id, None)
            try:
                done(report_from_msg(future.result().result.report), '')
            except ReportError as exc:
                done(None, f'invalid report from {robot} on {task.task_id}: {exc}')

        def on_goal(future):
            awaited.response_owed = False
            handle = future.result()
            if not handle.accepted:
                if awaited.deliver():
                    self._awaited.pop(task.task_id, None)
                    done(None, f'{robot} rejected goal {task.task_id}')
                return
            handle.get_result_async().add_done_callback(on_result)
        try:
            client.send_goal_async(goal).add_done_callback(on_goal)
        except BaseException:   # nothing was sent: no response is owed (the caller records the error)
            self._awaited.pop(task.task_id, None)
            raise

    def _find(self, client, what: str) -> None:
        """Wait until the server of ``client`` (named ``what``) is available.

        Where it is not ready at once, with the team's sim time held and the wait recorded
        (:mod:`robot_team.agents.discovery`), :data:`~robot_team.ros.util.SERVER_WAIT_S` wall s at
        most. A robot that is gone is noticed by the supervisor by its liveliness
        (:mod:`robot_team.contracts.liveness`), not here.

        Raises
        ------
        ToolError
            If the server does not appear within ``SERVER_WAIT_S`` wall s.
        """
        wait_for_server(client, SERVER_WAIT_S, what, self.discovery_hold)

    def _wait_one_server(self, robot: RobotId) -> None:
        """Wait until the graph shows one ExecuteTask server of ``robot`` (sim time held; service_timeout_s at most).

        Only for a robot the supervisor noticed lost and back: its dead incarnation stays in the graph
        (and matched) until DDS drops its participant (its lease: 3 s with the team's profile,
        :mod:`robot_team.run.restarts`); a goal sent meanwhile may reach only the dead one. The
        supervisor says it is back once the dead one left its own graph; this covers the manager's
        graph lagging behind.
        """
        topic = names.robot_name(robot, f'{names.EXECUTE_TASK}/_action/status')
        if self.count_publishers(topic) <= 1:
            return
        deadline = time.monotonic() + self._timeout
        # one record of the wait (the hold's): found once one server is left; not found, the goal goes anyway
        with self.discovery_hold(f'the graph to drop the dead incarnation of {robot}') as wait:
            while self.count_publishers(topic) > 1 and time.monotonic() < deadline and not self._stop.is_set():
                time.sleep(0.05)
            wait.data['servers'] = servers = self.count_publishers(topic)
            wait.found = servers <= 1

    def now(self) -> float:
        """Return ROS time, s (sim time under use_sim_time)."""
        return now_s(self)

    def stop(self, timeout_s: float = 5.0) -> bool:
        """End the brain thread (cancelling its LLM request in flight); return whether it ended in ``timeout_s``.

        Call it while the executor still spins, so that what the brain records on its way out
        reaches the record; idempotent.
        """
        self._stop.set()
        self.core.stop()
        self._worker.join(timeout=timeout_s)
        if self._worker.is_alive():
            log_line(self.get_logger(), LoggingSeverity.ERROR,
                     f'manager brain thread still running {timeout_s:g} s after stop')
            return False
        return True

    def destroy_node(self) -> None:
        """Stop the brain thread, release the brains (their LLM clients), then destroy the node."""
        if self.stop():
            for brain in {id(b): b for b in (self._first_brain, *self.core.brains)}.values():
                brain.close()
        super().destroy_node()


def _kind(value: str) -> EscalationKind:
    """Return the escalation kind ``value`` names (``Escalation.msg`` ``KIND_*``); an unknown one is an ``issue``."""
    try:
        return EscalationKind(value)
    except ValueError:
        return EscalationKind.ISSUE


def main(args=None) -> int:
    """Run the manager (``ros2 run robot_team manager``)."""
    # Multi-threaded: report results, escalations and human decisions arrive while the brain
    # thread waits on service futures.
    return spin_node(Role.MANAGER.value, ManagerNode, lambda: TeamExecutor(num_threads=4), args)


if __name__ == '__main__':
    raise SystemExit(main())
