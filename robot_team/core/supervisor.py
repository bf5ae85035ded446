"""The supervisor's loop: workflow gate, the one record of reports, deadlines, escalations (no rclpy).

:class:`SupervisorCore` wraps :class:`~robot_team.rules.workflow.policy.WorkflowPolicy` (the pure rulebook)
with what the supervisor does about each decision: record it as an event, publish escalations
and human decisions through injected callables, and escalate every missed deadline. When the
manager misses one of its deadlines (the team stalls), the supervisor also applies the
configured safe default (:attr:`~robot_team.contracts.config.Deadlines.safe_default`): the protocol brain
takes over the manager's role (a ``takeover`` directive), or the team holds (:meth:`SupervisorCore.hold_team`,
the hook of the stop-and-hold), or nothing beyond the escalation. The supervisor node
(``robot_team.agents.supervisor_node``) maps its services, subscriptions and timer onto these
methods; offline harnesses call them directly.

The core composes: the book of its cases (:class:`~robot_team.core.supervisor_cases.SupervisorCases`),
the deadlines' events (:mod:`robot_team.core.supervisor_deadlines`), the directives
(:class:`~robot_team.core.supervisor_directives.Directives`) and the reports it closes itself
(:mod:`robot_team.core.supervisor_reports`).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Callable, Mapping, Sequence

from robot_team.catalog import TASK_OWNER
from robot_team.core.supervisor_cases import SupervisorCases
from robot_team.core.supervisor_deadlines import missed_escalation, record_deadline_changes, record_missed
from robot_team.core.supervisor_directives import HOLD, Directive, Directives
from robot_team.core.supervisor_reports import closed_task_report, lost_task_report, record_closed_task, record_liveness
from robot_team.core.supervisor_state import AnsweredRequests, CaseArrival, SupervisorState
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.events import EventKind, case_emitter
from robot_team.contracts.liveness import LivenessChange
from robot_team.contracts.names import OPERATIONAL_ROLES, SUPERVISOR, RobotId, Role, role_name
from robot_team.contracts.reports import TaskReportModel, TaskType
from robot_team.rules.workflow.deadlines import MANAGER_DEADLINES, Deadline
from robot_team.rules.workflow.policy import DuplicateReport, WorkflowPolicy
from robot_team.rules.workflow.rules import StaffFacts
from robot_team.rules.workflow.state import Authorization, WorkflowRule

Emit = Callable[..., object]
"""``emit(kind, summary, *, target='', reason='', **data)``, as :meth:`EventEmitter.emit`."""


class SupervisorCore:
    """The supervisor's decisions around the workflow policy.

    Parameters
    ----------
    policy
        The workflow rulebook and state.
    emit
        Event sink.
    publish_escalation, publish_decision
        Called with the :class:`~robot_team.contracts.escalation_model.EscalationRecord` of each escalation opened
        and each human decision accepted (the node publishes them on ``team/escalations`` and
        ``team/human_decisions``).
    publish_report
        Called with each report recorded (the node republishes it on ``team/task_reports``).
    publish_directive
        Called with each :class:`Directive` (the node publishes it on ``team/supervisor/directives``).
    cases_at_once
        How many cases may be open at once (1: one at a time; 0: no limit). Each open case has its
        own policy; a robot runs one task at a time, so a task for a robot that runs another
        case's task is refused (rule ``robot_busy``), and a case waiting for such a robot has its
        ``decision`` and ``issue_handling`` deadlines moved on meanwhile (its onboarding deadline
        still runs).
    robots
        The team's operational robots (default one per role, named after it; a fleet's are
        ``<role>_<n>``, :func:`robot_team.contracts.names.fleet_robots`). A task for another name is
        refused (rule ``role``); a case waits for a robot only while every robot of the role
        runs another case's task.

    Notes
    -----
    Not thread-safe on its own beyond what the policy guarantees: the node calls it from one
    mutually exclusive callback group. Times are ROS times, s. Bounded over a shift: a closed
    case's policy is let go once no escalation of it is open (:attr:`cases_kept`); its patient
    stays served.

    Raises
    ------
    ValueError
        If ``cases_at_once`` is negative.
    """

    def __init__(self, policy: WorkflowPolicy, emit: Emit,
                 publish_escalation: Callable[[EscalationRecord], None],
                 publish_decision: Callable[[EscalationRecord], None],
                 publish_report: Callable[[TaskReportModel], None] | None = None,
                 publish_directive: Callable[[Directive], None] | None = None, cases_at_once: int = 1,
                 robots: Sequence[RobotId] = OPERATIONAL_ROLES):
        if int(cases_at_once) < 0:
            raise ValueError(f'cases_at_once must be 0 (no limit) or more (got {cases_at_once!r})')
        self.cases_at_once = int(cases_at_once)
        self.robots = tuple(robots)
        self._book = SupervisorCases(policy)          # the cases kept, waiting, opened, served, asked about
        self._about: WorkflowPolicy | None = None   # the case an operation is about (None: the latest opened)
        self._emit = case_emitter(emit, lambda: (self._about or self.policy).patient_id)
        self._publish_escalation = publish_escalation
        self._publish_decision = publish_decision
        self._publish_report = publish_report or (lambda _report: None)
        self.on_escalation_opened: Callable[[EscalationRecord], dict] | None = None
        """Called with each escalation before it is announced; returns more fields for its event
        (the escalation desk sets it: lifecycle, severity, deadline; ``robot_team.core.escalations``)."""
        self.on_task_closed: Callable[[TaskReportModel], None] | None = None
        """Called with the report of each task the supervisor closed because its task deadline passed
        (the escalation desk sets it: it stops the task's robot)."""
        self.on_hold_team: Callable[[str, str], None] | None = None
        """Called with (escalation ID, reason) when the safe default ``hold`` holds the team (the
        escalation desk sets it: :meth:`robot_team.core.escalations.EscalationDesk.hold_on`)."""
        self.on_takeover: Callable[[str], None] | None = None
        """Called with the escalation's ID when the safe default ``takeover`` gives the manager's
        role to the protocol brain (the escalation desk sets it:
        :meth:`robot_team.core.escalations.EscalationDesk.covered_by_takeover`)."""
        self.on_unserved_patient: Callable[..., object] | None = None
        """Called with the ``patient_unserved`` event's fields (``patient_id``, ``room``,
        ``esi_level``, ``assigned_hcw_id``, ``required_specialty``, ``serving``, ``waited_s``) and
        ``now_s`` when a waiting case's patient has waited ``deadlines.onboarding_s`` without the
        team starting their case (the escalation desk sets it: a person is asked to take them,
        :meth:`robot_team.core.escalations.EscalationDesk.ask_for_patient`)."""
        self.escalation_settled: Callable[[str], bool] | None = None
        """Called with an escalation's ID: whether its lifecycle ended outside the workflow, which
        keeps an expired escalation as it was (the escalation desk sets it: an escalation it expired).
        A closed case is let go once none of its escalations is open and unsettled (:attr:`cases_kept`)."""
        self.on_case_opened: Callable[[str, float], object] | None = None
        """Called with (patient ID, ROS time s) each time a case opens (the escalation desk sets it: a
        waiting case the hospital's record ended meanwhile is closed at once,
        :meth:`robot_team.core.escalations.EscalationDesk.close_case`)."""
        self._directives = Directives(self._emit, publish_directive or (lambda _directive: None))
        self._checked_s: float | None = None          # ROS time of the last deadline check, s
        self._answers = AnsweredRequests()            # answers to requests with a caller's ID

    @property
    def policy(self) -> WorkflowPolicy:
        """The policy of the latest case opened (the one given before the first patient)."""
        return self._book.latest

    @property
    def _cases(self) -> dict[str, WorkflowPolicy]:
        """The cases kept, by patient (the book's): the open ones, closed ones with an escalation open."""
        return self._book.kept

    @property
    def cases_kept(self) -> list[str]:
        """The patients whose case's policy this core keeps, in the order kept.

        The open cases, and closed ones (reflection recorded) with an escalation still open: a
        closed case is let go once none is (decided, or expired at the escalation desk), so what
        the core keeps stays bounded over a shift. A let-go case's patient stays served
        (a repeat of their arrival opens nothing); anything that names it later (a report, a
        delegation, a decision, a stored escalation) is refused and recorded, never applied to
        another case (:meth:`closed_case_of`).
        """
        return list(self._book.kept)

    @property
    def open_policies(self) -> list[WorkflowPolicy]:
        """The policies of the open cases (opened, reflection not recorded), in the order they opened."""
        return self._book.open_policies

    @contextmanager
    def _on(self, policy: WorkflowPolicy | None):
        """Record the events of the block as ``policy``'s case's (None: the latest opened)."""
        previous, self._about = self._about, policy
        try:
            yield policy
        finally:
            self._about = previous

    def tasks(self) -> list:
        """Return the tasks of every open case (``TaskState``), or of the latest case when none is open."""
        return self._book.tasks()

    def postpone_deadlines(self, by_s: float) -> None:
        """Move every open case's pending deadlines ``by_s`` s later (the team was held: nobody could act)."""
        for policy in self._book.live_policies():
            policy.postpone_deadlines(by_s)

    def restore_escalation(self, record: EscalationRecord) -> bool:
        """Give a stored escalation back to its case's policy; return whether a case took it.

        Its case is the kept one whose restored workflow has it, else the kept case of its
        ``patient_id``, else the latest case's when that is its patient's or when no case was
        restored (a fresh workflow: the IDs continue). An escalation of a case that closed and
        was let go goes to no other case: an open one is recorded (``input_error``), a closed
        one needs nothing (the escalation desk keeps its record).
        """
        policy = self._book.holder(record.escalation_id) or self._book.kept.get(record.patient_id)
        if policy is None and (record.patient_id == self.policy.patient_id or not self._book.served):
            policy = self.policy
        if policy is None:
            if record.is_open:
                closed = self.closed_case_of(record.escalation_id) or record.patient_id
                self._emit(EventKind.INPUT_ERROR, f'stored {record.escalation_id} names no case kept here',
                           target=record.escalation_id, reason=f'case {closed or "?"} is closed and was let go: '
                           f'{record.escalation_id} is given to no other case', escalation_id=record.escalation_id,
                           case_id=closed)
            return False
        policy.restore_escalation(record)
        return True

    def state(self) -> SupervisorState:
        """Return what a restarted supervisor takes up (:meth:`restore`): the cases kept and waiting, the answers."""
        return self._book.state(self._directives.sent, self._directives.took_over).model_copy(
            update={'answered': self._answers.items()})

    def restore(self, state: SupervisorState) -> None:
        """Take up a stored :class:`SupervisorState` after a restart, recording nothing.

        The workflow goes back into the policy (:meth:`WorkflowPolicy.restore
        <robot_team.rules.workflow.policy.WorkflowPolicy.restore>`: no deadline is announced again);
        directive IDs continue and a takeover stays in force.

        Raises
        ------
        ValueError
            If the policy is not fresh or the workflow state is inconsistent (nothing changes then).
        """
        self._book.restore(state)
        self._directives.sent = state.directives
        self._directives.took_over = state.took_over
        self._answers = AnsweredRequests(state.answered)
        self.let_go_closed()

    def answer_once(self, service: str, request_id: str, serve: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Serve a request that carries its caller's ID once: a repeat gets the answer kept, not a second serving.

        ``serve()`` decides the request and returns the response's fields. A request whose
        ``request_id`` was answered before, by this supervisor or by the one it was restarted
        from (:meth:`state`), is answered with those fields again, recorded as
        ``request_answered_again``: a caller sends a request again to a restarted server
        (:func:`robot_team.ros.util.call_service`), and served twice an approval would be refused
        (its task now runs) and an escalation opened twice. An empty ``request_id`` is always served.

        Parameters
        ----------
        service
            The service's name (``robot_team.contracts.names``), kept with the answer.
        request_id
            The caller's ID of the request (surrounding whitespace ignored); '' for none.
        serve
            Decides the request; returns the response's fields (JSON values).
        """
        request_id = str(request_id or '').strip()
        answer = self._answers.find(service, request_id)
        if answer is not None:
            self._emit(EventKind.REQUEST_ANSWERED_AGAIN, f'{service}: request {request_id} was answered before; '
                       'the same answer again', reason='a request sent again (to a restarted supervisor) is '
                       'served once', service=service, request_id=request_id, answer=answer)
            return answer
        answer = serve()
        self._answers.keep(service, request_id, answer)
        return answer

    def on_patient_arrival(self, patient_id: str, now_s: float, *, assigned_hcw_id: str = '',
                           required_specialty: str = '', room: str = '', esi_level: int = 0) -> bool:
        """Open the patient's case (a repeat of a known patient changes nothing); return whether it started now.

        With fewer than ``cases_at_once`` cases open (or no limit) the case starts: its
        onboarding's deadlines run from ``now_s`` (``assigned_hcw_id`` and ``required_specialty``
        are what the gate checks a navigation's HCW against). Otherwise it waits (``case_waiting``, with ``room``,
        ``esi_level`` (ESI 1-5, 0 unknown) and the cases open): a patient never replaces another.
        When an open case closes, the most urgent waiting case starts (:func:`robot_team.contracts.cases.next_case`).
        """
        patient_id = str(patient_id or '').strip()
        if not patient_id:
            self._emit(EventKind.INPUT_ERROR, 'ignored a patient cue without an ID',
                       reason='a patient cue needs a patient ID')
            return False
        if patient_id in self._book.served or patient_id in self._book.waiting:
            return False
        try:
            arrival = CaseArrival(patient_id=patient_id, room=str(room), esi_level=int(esi_level),
                                  assigned_hcw_id=str(assigned_hcw_id), required_specialty=str(required_specialty),
                                  arrived_s=now_s)
        except ValueError as exc:
            self._emit(EventKind.INPUT_ERROR, f'ignored the arrival of {patient_id}: bad ESI level',
                       reason=str(exc), patient_id=patient_id, esi_level=esi_level)
            return False
        open_cases = [p.patient_id for p in self.open_policies]
        if self._book.full(self.cases_at_once):
            serving = ', '.join(open_cases)
            self._book.waiting[patient_id] = arrival
            self._emit(EventKind.CASE_WAITING, f'case {patient_id} ({room or "?"}, ESI {esi_level or "?"}) waits: the '
                       f'team serves {serving}', target=room, reason=f'{self.cases_at_once} case(s) at once; '
                       f'{serving} in progress, never replaced by another patient', case_id=patient_id,
                       serving=serving, **arrival.model_dump())
            return False
        self._start_case(arrival, now_s)
        return True

    def _start_case(self, arrival: CaseArrival, now_s: float) -> None:
        """Give ``arrival``'s case the gate (a fresh policy after the first case) and start its deadlines."""
        policy = self._book.start(arrival)
        policy.patient_arrived(arrival.patient_id, now_s, assigned_hcw_id=arrival.assigned_hcw_id,
                               required_specialty=arrival.required_specialty,
                               arrived_s=None if arrival.patient_id in self._book.asked else arrival.arrived_s)
        self._emit(EventKind.CASE_OPENED, f'case {arrival.patient_id} opened ({arrival.room or "?"}, ESI '
                   f'{arrival.esi_level or "?"})', target=arrival.room, case_id=arrival.patient_id,
                   waited_s=round(now_s - arrival.arrived_s, 3), id_prefix=policy.id_prefix,
                   **arrival.model_dump())
        self._record_deadline_changes()
        if self.on_case_opened is not None:
            self.on_case_opened(arrival.patient_id, now_s)

    def case_state(self, patient_id: str) -> str:
        """Return where ``patient_id``'s case is.

        ``'open'``, ``'closing'`` (an ``abort`` was decided, the reflection is not recorded yet),
        ``'closed'``, ``'waiting'`` or ``'unknown'`` (no case here).
        """
        return self._book.case_state(patient_id)

    def _next_case(self, now_s: float) -> None:
        """Start the most urgent waiting cases while fewer than ``cases_at_once`` are open."""
        while self._book.waiting and not self._book.full(self.cases_at_once):
            self._start_case(self._book.most_urgent_waiting(), now_s)

    @property
    def waiting(self) -> list[CaseArrival]:
        """The cases waiting for a place (``cases_at_once``), in arrival order."""
        return list(self._book.waiting.values())

    def closed_case_of(self, item_id: str) -> str:
        """Return the patient whose closed case a task or escalation ID belongs to ('' if open or none).

        A case is closed once its reflection was recorded: kept while an escalation of it is open
        (:attr:`cases_kept`), else let go. An ID no case has is placed by its prefix (e.g.
        ``P-0777/esc-2``: case ``P-0777``).
        """
        return self._book.closed_case_of(item_id)

    def _let_go(self, policy: WorkflowPolicy) -> bool:
        """Drop ``policy``'s case if it is kept, closed, and none of its escalations is open; return whether.

        Its patient stays served. An escalation the desk expired is no longer open
        (:attr:`escalation_settled`), though the workflow keeps it as it was.
        """
        return self._book.let_go(policy, self.escalation_settled)

    def let_go_closed(self) -> list[str]:
        """Let go of every closed case kept with no escalation open any more; return their patients.

        For after a restart (the escalation desk calls it once the stored escalations are back:
        :meth:`robot_team.core.escalations.EscalationDesk.restore`); a live core lets a case go
        when it closes, when a person decides on its escalation and when one expires.
        """
        return [p.patient_id for p in list(self._book.kept.values()) if self._let_go(p)]

    def escalation_expired(self, escalation_id: str) -> bool:
        """Take note that the escalation desk expired ``escalation_id``; return whether its case was let go.

        The workflow keeps the escalation as it was (an expiry is no person's decision); a closed
        case whose last open escalation it was is let go. An unknown ID changes nothing.
        """
        holder = self._book.holder(escalation_id)
        return holder is not None and self._let_go(holder)

    def authorize(self, task_type: str, robot: RobotId, reason: str, requested_by: str, now_s: float, *,
                  hcw_id: str = '', staff: Mapping[str, StaffFacts] | None = None,
                  case_id: str = '') -> Authorization:
        """Decide a delegation request against the workflow rules; record the decision.

        ``hcw_id`` and ``staff``: as
        :meth:`WorkflowPolicy.authorize <robot_team.rules.workflow.policy.WorkflowPolicy.authorize>`.
        ``case_id``: the patient whose case the task serves ('' the latest case opened); a case
        that is not open here is refused (rule ``case``) and the answer names the open case with
        no task yet (the one that took its place), or the case itself when it closed and was let
        go. A task for a robot that runs another open case's task is refused (rule ``robot_busy``).
        """
        policy = self._book.kept.get(case_id) if case_id else self.policy
        with self._on(policy):
            return self._authorize(policy, task_type, robot, reason, requested_by, now_s, hcw_id, staff, case_id)

    def _authorize(self, policy: WorkflowPolicy | None, task_type: str, robot: RobotId, reason: str, requested_by: str,
                   now_s: float, hcw_id: str, staff: Mapping[str, StaffFacts] | None, case_id: str) -> Authorization:
        """:meth:`authorize` for ``policy``'s case (None: ``case_id`` is not open here)."""
        owns = task_type in {t.value for t in TaskType} and role_name(robot) == TASK_OWNER[TaskType(task_type)]
        busy = (self._book.busy_elsewhere(robot, policy)   # a robot not of the role: rule role
                if policy is not None and owns and robot != Role.MANAGER.value else '')
        if robot not in (*self.robots, Role.MANAGER.value) and requested_by == Role.MANAGER.value:
            mates = [r for r in self.robots if role_name(r) == role_name(robot)]
            auth = Authorization(approved=False, rule=WorkflowRule.ROLE, task_type=task_type, robot=robot,
                                 case_id=case_id, explanation=f"no robot '{robot}' in the team: "
                                 + (f"{robot}'s robots are {', '.join(mates)}" if mates else
                                    f"expected one of {', '.join(self.robots)}"))
        elif policy is None and case_id in self._book.served:   # closed, and let go
            serving = ', '.join(p.patient_id for p in self.open_policies) or 'no case'
            auth = Authorization(approved=False, rule=WorkflowRule.CASE, task_type=task_type, robot=robot,
                                 case_id=case_id, explanation=f'case {case_id} is closed (its reflection was '
                                 f'recorded): nothing more is delegated for it; the team serves {serving} now')
        elif policy is None:
            serving = self._book.gate_case()
            auth = Authorization(approved=False, rule=WorkflowRule.CASE, task_type=task_type, robot=robot,
                                 case_id=serving, explanation=f'the team serves case {serving or "(none yet)"} now; '
                                 f'case {case_id} waits until a case closes (the most urgent waiting case is next)')
        elif busy:
            auth = Authorization(approved=False, rule=WorkflowRule.ROBOT_BUSY, task_type=task_type, robot=robot,
                                 case_id=policy.patient_id, explanation=f'{robot} runs {busy} of another case: a '
                                 f'robot runs one task at a time; case {policy.patient_id} waits for it')
        else:
            auth = policy.authorize(task_type, robot, reason, requested_by, now_s, hcw_id=hcw_id, staff=staff,
                                    engaged=self._book.engaged_elsewhere(policy))
            auth.case_id = policy.patient_id
        data = dict(task_type=task_type, robot=robot, requested_by=requested_by, request_reason=reason,
                    rule=auth.rule.value, requested_hcw_id=hcw_id, hcw_id=auth.hcw_id)
        if auth.approved:
            self._emit(EventKind.DELEGATION_AUTHORIZED, f'authorized {auth.task_id} ({task_type}) for {robot}',
                       target=robot, reason=auth.explanation, task_id=auth.task_id, **data)
        else:
            kind = EventKind.WORKFLOW_VIOLATION if auth.violation else EventKind.DELEGATION_REFUSED
            self._emit(kind, f'refused {task_type!r} for {robot!r} requested by {requested_by!r}', target=robot,
                       reason=auth.explanation, **data)
        self._record_deadline_changes()
        return auth

    def submit_report(self, report: TaskReportModel, now_s: float, raw: dict | None = None) -> tuple[bool, str]:
        """Record a validated report; return ``(accepted, explanation)``.

        A report that matches no running task (unknown ID, wrong robot or type, already
        reported) is rejected and recorded as ``report_rejected`` with ``raw`` (the report as
        received; default: the report's fields), never dropped. A report on a task of a case that
        closed and was let go is rejected so too, naming that case (never given to another case).
        """
        policy = self._book.policy_of_task(report.task_id)
        if policy is None:
            closed = self.closed_case_of(report.task_id)
            why = (f'case {closed} is closed: the report on {report.task_id} comes after its reflection was '
                   f'recorded and its state let go; nothing changes')
            self.reject_report(why, raw if raw is not None else report.model_dump(mode='json'), case_id=closed)
            return False, why
        with self._on(policy):
            try:
                task = policy.record_report(report, now_s)
            except DuplicateReport as exc:   # its first answer was lost (e.g. with a supervisor that died): no news
                return True, str(exc)
            except ValueError as exc:
                self.reject_report(str(exc), raw if raw is not None else report.model_dump(mode='json'))
                return False, str(exc)
            self._record_deadline_changes()
            self._publish_report(report)
            if policy.done and task.task_type is TaskType.REFLECTION:
                self._emit(EventKind.CASE_CLOSED, f'case {policy.patient_id} closed by {task.task_id}',
                           target=task.task_id, case_id=policy.patient_id, task_id=task.task_id,
                           closed_by_abort=policy.closed)
                self._book.opened.pop(policy.patient_id, None)
                self._book.asked.discard(policy.patient_id)
                self._let_go(policy)
        self._next_case(now_s)
        return True, f'{task.task_id} ({task.task_type.value}) recorded as {task.status}'

    def reject_report(self, error: str, raw: dict, *, case_id: str = '') -> None:
        """Record a report that could not be used (did not validate or matched no task).

        ``case_id``: the case it names ('' the latest case opened).
        """
        self._emit(EventKind.REPORT_REJECTED, f"rejected a report on {raw.get('task_id')!r} from "
                   f"{raw.get('robot')!r}", target=str(raw.get('task_id', '')), reason=error, error=error, raw=raw,
                   **({'case_id': case_id} if case_id else {}))

    def liveness_changed(self, change: LivenessChange, now_s: float) -> TaskReportModel | None:
        """Record a team node lost or back (ROS time ``now_s``, s); recover the task a lost robot held.

        A lost operational robot's running task is closed by the workflow's recovery rule
        (:meth:`~robot_team.rules.workflow.policy.WorkflowPolicy.robot_lost`): recorded as that task's report
        (actor ``supervisor``, issue code ``robot_lost``), published like any accepted report, and
        returned. Returns None when no task was recovered.
        """
        task, about = None, None
        if change.state == 'lost' and change.node in self.robots:
            for policy in self._book.live_policies():
                task = policy.robot_lost(change.node, now_s)
                if task is not None:
                    about = policy
                    break
        with self._on(about):
            return self._record_liveness(change, task, now_s)

    def _record_liveness(self, change: LivenessChange, task, now_s: float) -> TaskReportModel | None:
        """:meth:`liveness_changed`'s record, with ``task`` the lost robot's task it recovered (None: none)."""
        report = lost_task_report(task, change, now_s) if task is not None else None
        record_liveness(change, report, self._emit)
        if report is not None:
            self._record_deadline_changes()
            self._publish_report(report)
        return report

    def request_escalation(self, task_id: str, reason: str, options: list[str], now_s: float,
                           raised_by: str = Role.MANAGER.value, *, case_id: str = '') -> tuple[bool, str, str]:
        """Open an escalation and publish it; return ``(accepted, escalation_id, message)``.

        It belongs to the case of ``task_id`` ('' : the case ``case_id`` when it is kept here, else
        the latest case opened; a closed one is kept until the escalation is decided or expires).
        A task of a case that closed and was let go is refused (recorded as ``input_error``).
        """
        policy = self._book.kept.get(case_id) if case_id and not task_id else None
        policy = policy or self._book.policy_of_task(task_id)
        if policy is None:
            closed = self.closed_case_of(task_id)
            why = f'case {closed} is closed: {task_id} cannot be escalated (its reflection was recorded)'
            self._emit(EventKind.INPUT_ERROR, f'refused an escalation of {task_id!r}', target=task_id, reason=why,
                       task_id=task_id, request_reason=reason, options=list(options), case_id=closed)
            return False, '', why
        with self._on(policy):
            try:
                escalation_id = policy.open_escalation(task_id, raised_by, reason, list(options), now_s)
            except ValueError as exc:
                self._emit(EventKind.INPUT_ERROR, f'refused an escalation of {task_id!r}', target=task_id,
                           reason=str(exc), task_id=task_id, request_reason=reason, options=list(options))
                return False, '', str(exc)
            self._book.keep(policy)
            self._record_deadline_changes()
            self._announce(escalation_id, policy)
        return True, escalation_id, f'{escalation_id} opened and sent to the human operators'

    def resolve(self, escalation_id: str, decision: str, hcw_id: str, note: str, operator_id: str,
                now_s: float) -> tuple[bool, str]:
        """Record a human's decision and publish it; refuse (and record) an invalid one; return ``(accepted, message)``.

        A decision on an escalation of a case that closed and was let go is refused (recorded as
        ``input_error`` naming that case) and changes no case. A decision that leaves a closed
        case with no escalation open lets the case go.
        """
        policy = self._book.holder(escalation_id)
        if policy is None:
            closed = self.closed_case_of(escalation_id)
            if closed:
                message = (f'case {closed} is closed: nothing of it is left to decide ({escalation_id} was settled '
                           f'before its state was let go); no other case changes')
                self._emit(EventKind.INPUT_ERROR, f'refused a decision on {escalation_id!r}', target=escalation_id,
                           reason=message, escalation_id=escalation_id, decision=decision, hcw_id=hcw_id,
                           operator_id=operator_id, case_id=closed)
                return False, message
            policy = self.policy
        accepted, message = policy.resolve(escalation_id, decision, hcw_id, note, operator_id, now_s)
        if not accepted:
            self._emit(EventKind.INPUT_ERROR, f'refused a decision on {escalation_id!r}', target=escalation_id,
                       reason=message, escalation_id=escalation_id, decision=decision, hcw_id=hcw_id,
                       operator_id=operator_id)
            return False, message
        esc = policy.snapshot().escalation(escalation_id)
        self._emit(EventKind.HUMAN_DECISION, f'{esc.decided_by or "an operator"} decided {esc.decision} on '
                   f'{esc.escalation_id}', target=esc.task_id, reason=esc.note, escalation_id=esc.escalation_id,
                   task_id=esc.task_id, decision=esc.decision, hcw_id=esc.hcw_id, note=esc.note,
                   operator_id=esc.decided_by, closed=policy.closed, source='human', case_id=policy.patient_id)
        self._record_deadline_changes()
        self._publish_decision(esc)
        self._let_go(policy)
        return True, message

    def check_deadlines(self, now_s: float) -> list[str]:
        """Escalate every deadline missed by ``now_s``; return the escalation IDs opened.

        Then every patient who has waited ``deadlines.onboarding_s`` since arriving with nobody
        asked (:meth:`check_waiting`) is recorded (``patient_unserved``, once per patient) and a
        person is asked to take them (:attr:`on_unserved_patient`); a waiting case keeps its
        place in the queue.
        """
        self._wait_for_robots(now_s)
        opened = []
        for policy in self._book.live_policies():
            if policy.done:   # a closed case (the latest, none open) has no deadline left to miss
                continue
            with self._on(policy):
                opened += self._check_case(policy, now_s)
        self.check_waiting(now_s)
        return opened

    def _wait_for_robots(self, now_s: float) -> None:
        """Move on the ``decision`` and ``issue_handling`` deadlines of each open case waiting for a robot or an HCW.

        A case waits for a robot when no task of its own runs and every task type it may
        delegate next (:meth:`~robot_team.rules.workflow.policy.WorkflowPolicy.next_steps`) is owned by a
        robot running another open case's task: the manager cannot step until it is free. It
        waits for its HCW when it has no task yet and the HCW assigned to its patient is with
        another open case (rule 9 refuses them until it closes). Its ``onboarding`` deadline
        (from arrival) still runs.
        """
        since, self._checked_s = self._checked_s, now_s
        if since is None or now_s <= since or len(self.open_policies) < 2:
            return
        for policy in self.open_policies:
            steps = policy.next_steps()
            waits = steps and all(self._book.busy_elsewhere(r, policy) for kind in steps for r in self.robots
                                  if role_name(r) == TASK_OWNER[kind])
            if not waits and not policy.outlines():   # ... or for its assigned HCW, whom another open case has
                waits = policy.snapshot().assigned_hcw_id in self._book.engaged_elsewhere(policy)
            if waits:
                for kind in ('decision', 'issue_handling'):
                    policy.postpone_deadlines(now_s - since, kind)

    def _check_case(self, policy: WorkflowPolicy, now_s: float) -> list[str]:
        """Escalate every deadline of ``policy``'s case missed by ``now_s``; return the escalation IDs opened."""
        opened = []
        for deadline in policy.due(now_s):
            reason = record_missed(policy, deadline, self._emit)
            self._report_closed_by_deadline(policy, deadline, now_s)
            task_id, options = missed_escalation(deadline)   # about its task, else about the onboarding
            escalation_id = policy.open_escalation(task_id, SUPERVISOR, reason, options, now_s)
            self._record_deadline_changes()
            self._announce(escalation_id, policy)
            opened.append(escalation_id)
            if deadline.kind in MANAGER_DEADLINES:
                self._apply_safe_default(deadline, escalation_id, reason)
        return opened

    def _report_closed_by_deadline(self, policy: WorkflowPolicy, deadline: Deadline, now_s: float) -> None:
        """Record, publish and stop the task a missed task ``deadline`` closed (none for another deadline).

        The task's report (``task_report``, actor ``supervisor``, issue code ``task_deadline``) is
        published like any accepted report: the manager knows the task ended (else it waits for it,
        and a person's decision on the deadline's escalation could not be carried out: the CI of
        cb3ab05), and :attr:`on_task_closed` stops its robot.
        """
        task = policy.closed_by_deadline(deadline)
        if task is None:
            return
        report = closed_task_report(task, now_s, deadline_s=deadline.duration_s)
        record_closed_task(report, 'no report within the task deadline', self._emit)
        self._publish_report(report)
        if self.on_task_closed is not None:
            self.on_task_closed(report)

    def next_scheduled_s(self, now_s: float, deadlines: bool = True) -> float:
        """Return the ROS time (s) of the core's next work of its own, after ``now_s``: ``inf`` for none.

        The earliest of the pending deadlines of the cases :meth:`check_deadlines` checks (with
        ``deadlines``; while the team is held only :meth:`check_waiting` runs), and of the times a
        patient not asked about yet will have waited ``deadlines.onboarding_s`` since arriving.
        Between ``now_s`` and it, :meth:`check_deadlines` and :meth:`check_waiting` find nothing
        to do unless a message changes the cases first (the follow clock's jump ahead:
        :mod:`robot_team.contracts.clock_sync`). A deadline a case waiting for a robot moves on
        (:meth:`_wait_for_robots`) is given where it is now: the clock then jumps less far.
        """
        times = []
        if deadlines:
            times += [p.next_due_s() for p in self._book.live_policies() if not p.done]
        limit = self.policy.deadlines.onboarding_s
        arrivals = [*self._book.waiting.values(),
                    *(self._book.opened[p.patient_id] for p in self.open_policies if p.patient_id in self._book.opened)]
        times += [a.arrived_s + limit for a in arrivals
                  if a.patient_id not in self._book.asked and a.arrived_s + limit > now_s]
        return min(times, default=math.inf)

    def check_waiting(self, now_s: float) -> None:
        """Give a person every patient who has waited ``deadlines.onboarding_s`` since arriving with nobody asked.

        Once per patient (``patient_unserved``, then :attr:`on_unserved_patient`): a waiting
        case's patient (their case has not started), and an open case's patient whose onboarding
        deadline has not been missed though that long has passed since they arrived, with no
        escalation about their case open or decided since then. That happens when the team is
        held: the deadlines wait for the hold (the escalation desk calls this alone meanwhile)
        and move on after it, so a case the hold is not about would otherwise wait unseen.
        """
        limit = self.policy.deadlines.onboarding_s
        for case in [*self._book.waiting.values(), *self._book.unasked_open(now_s, limit)]:
            waited = now_s - case.arrived_s
            if case.patient_id in self._book.asked or waited < limit:
                continue
            self._book.asked.add(case.patient_id)
            serving = ', '.join(p.patient_id for p in self.open_policies if p.patient_id != case.patient_id)
            unserved = dict(patient_id=case.patient_id, room=case.room, esi_level=case.esi_level,
                            assigned_hcw_id=case.assigned_hcw_id, required_specialty=case.required_specialty,
                            serving=serving, waited_s=round(waited, 3))
            started = 'did not start' if case.patient_id in self._book.waiting else 'did not end'
            self._emit(EventKind.PATIENT_UNSERVED, f'patient {case.patient_id} has waited {waited:.0f} s for the '
                       f'team (serving {serving or "their case"}): a person is asked to take them', target=case.room,
                       reason=f'case {case.patient_id} {started} within the onboarding deadline '
                              f'({limit:g} s from arrival) and no person was asked', case_id=case.patient_id,
                       **unserved)
            if self.on_unserved_patient is not None:
                self.on_unserved_patient(**unserved, now_s=now_s)

    def _apply_safe_default(self, deadline: Deadline, escalation_id: str, reason: str) -> None:
        """Apply the configured safe default for a stall of the manager (after its escalation)."""
        self._directives.apply_safe_default(self.policy.deadlines.safe_default, deadline, escalation_id, reason,
                                            hold_team=self.hold_team, on_takeover=self.on_takeover)

    def hold_team(self, escalation_id: str, reason: str, deadline: Deadline | None = None) -> Directive:
        """Hold the team until a human decides on ``escalation_id``: the safe default ``hold``.

        The manager stops deciding until that decision (a ``hold`` directive), and
        :attr:`on_hold_team` (set by the escalation desk: the team hold, which cancels the
        robots' goals and refuses delegations until the escalation is resolved) is called with
        the escalation's ID and the reason.
        """
        if self.on_hold_team is not None:
            self.on_hold_team(escalation_id, reason)
        return self._directives.direct(HOLD, Role.MANAGER.value, escalation_id, deadline, reason)

    def _announce(self, escalation_id: str, policy: WorkflowPolicy) -> None:
        esc = policy.snapshot().escalation(escalation_id)
        lifecycle = self.on_escalation_opened(esc) if self.on_escalation_opened is not None else {}
        self._emit(EventKind.ESCALATION, f'{escalation_id} on {esc.task_id or "the episode"} raised by '
                   f'{esc.raised_by}', target=esc.task_id, reason=esc.reason, escalation_id=escalation_id,
                   task_id=esc.task_id, task_type=esc.task_type, raised_by=esc.raised_by, options=esc.options,
                   patient_id=esc.patient_id, **lifecycle)
        self._publish_escalation(esc)

    def _record_deadline_changes(self) -> None:
        about = [self._about] if self._about is not None else []
        for policy in {id(p): p for p in (*self.open_policies, self.policy, *about)}.values():
            with self._on(policy):
                record_deadline_changes(policy, self._emit)
