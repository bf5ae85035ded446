"""The ED workflow and its deadlines, enforced as pure logic (no ROS): the supervisor's rulebook.

:class:`WorkflowPolicy` decides whether a delegation may start (:meth:`WorkflowPolicy.authorize`),
records robots' reports, runs the deadlines (the manager's: first step after the patient cue,
next step after a report or a human decision, issue handling after a failure, the whole
onboarding; the robots': longest task duration) and keeps the escalations and the humans'
decisions. Every refusal carries an
explanation the manager (possibly an LLM) can act on: what rule, what state, what to do next.

All times are ROS times in seconds (sim time in runs); the caller passes ``now_s``.
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Iterable, Literal, Mapping, NamedTuple

from pydantic import BaseModel, Field

from robot_team.config import Deadlines
from robot_team.escalation_model import EscalationRecord, LifecycleAction, transition
from robot_team.names import Role, role_name
from robot_team.reports import OPERATIONAL_TASKS, WORKFLOW_ORDER, IssueCode, TaskReportModel, TaskStatus, TaskType
from robot_team.catalog import TASK_OWNER

MANAGER = Role.MANAGER.value

TASK_ID_PREFIX: dict[TaskType, str] = {
    TaskType.NAVIGATION: 'nav',
    TaskType.INFO_COLLECTION: 'info',
    TaskType.DISPLAY: 'display',
    TaskType.REFLECTION: 'reflection',
}
"""Task IDs are ``<prefix>-<n>``, numbered per task type from 1 (``nav-1``, ``info-2``...)."""

DECISIONS = ('reassign', 'retry', 'abort')
"""Decisions a human may take on an escalation."""


class WorkflowRule(str, Enum):
    """The rule an authorization was decided by; the values are ``AuthorizeTask``'s ``RULE_*`` constants.

    Numbers refer to the rules of :class:`WorkflowPolicy`; ``OK`` means approved.
    """

    OK = 'ok'
    REQUESTER = 'requester'                  # 1
    UNKNOWN_TASK_TYPE = 'unknown_task_type'  # 2
    ROLE = 'role'                            # 3
    CLOSED = 'closed'                        # 4
    ORDER = 'order'                          # 5
    RUNNING = 'running'                      # 6
    REPEAT_REASON = 'repeat_reason'          # 7
    REFLECTION = 'reflection'                # 8
    HCW = 'hcw'                              # 9
    HELD = 'held'                            # the team is held (robot_team.core.escalations.TeamHold)
    CASE = 'case'                            # another case is in progress (robot_team.cases)
    ROBOT_BUSY = 'robot_busy'                # the robot runs another case's task (one task at a time)


WORKFLOW_RULES: frozenset[WorkflowRule] = frozenset(
    {WorkflowRule.CLOSED, WorkflowRule.ORDER, WorkflowRule.RUNNING, WorkflowRule.REFLECTION})
"""Rules whose breach is a workflow violation (the others are refused delegations)."""


class Authorization(BaseModel):
    """The supervisor's answer to a delegation request."""

    approved: bool
    task_id: str = Field('', description="The new task's ID when approved, else ''.")
    explanation: str = Field(description='Why, in words the manager can act on.')
    rule: WorkflowRule = Field(WorkflowRule.OK, description='The rule that decided (see WORKFLOW_RULES).')
    task_type: str = ''
    robot: str = ''
    hcw_id: str = Field('', description="The HCW the approved task is about (rule 9): the one named for a "
                                        "navigation, the one the latest navigation escorted for the later steps.")
    case_id: str = Field('', description="The case the team serves now (its patient's ID; '' before any arrival).")

    @property
    def violation(self) -> bool:
        """Whether the refusal breaches the workflow itself (order, running task, closed, reflection)."""
        return not self.approved and self.rule in WORKFLOW_RULES


class DuplicateReport(ValueError):
    """The same report on a task already recorded (a robot asked again: its first answer was lost)."""


class TaskState(BaseModel):
    """One authorized task and what became of it."""

    task_id: str
    task_type: TaskType
    robot: str
    requested_by: str = MANAGER
    reason: str = ''
    status: Literal['running', 'success', 'failure'] = 'running'
    issue: str = ''
    issue_code: IssueCode = IssueCode.NONE
    summary: str = ''
    hcw_id: str = Field('', description='The HCW the task is about (rule 9; empty for the reflection).')
    started_s: float
    finished_s: float | None = None


DeadlineKind = Literal['issue_handling', 'task', 'decision', 'onboarding']

MANAGER_DEADLINES = frozenset({'issue_handling', 'decision', 'onboarding'})
"""Deadlines only the manager can meet: missing one is a stall of the team (safe default applies)."""


class Deadline(BaseModel):
    """One deadline the supervisor watches.

    ``kind='issue_handling'``: after ``task_id`` failed, the manager must delegate that task type
    again or escalate ``task_id`` before ``due_s``. ``kind='task'``: ``task_id`` must report
    before ``due_s``. ``kind='decision'``: after ``cue`` (the patient's arrival, a successful
    report on ``task_id``, a human decision), the manager must get a delegation (or the
    reflection) authorized, or a human must be paged (any escalation), before ``due_s``.
    ``kind='onboarding'``: the reflection must be recorded before ``due_s`` (from the patient cue).
    """

    kind: DeadlineKind
    task_id: str = Field('', description="The task it is about ('' for the patient-level deadlines).")
    task_type: TaskType | None = None
    cue: str = Field('', description="What started it, e.g. 'patient P-0001 arrived', 'report nav-2'.")
    started_s: float
    duration_s: float
    state: Literal['pending', 'met', 'missed'] = 'pending'
    met_by: str = Field('', description="What met it, e.g. 'delegation nav-2', 'escalation esc-1', 'report'.")
    closed_s: float | None = None

    @property
    def due_s(self) -> float:
        """ROS time after which the deadline is missed, s."""
        return self.started_s + self.duration_s


class DeadlineChange(BaseModel):
    """A deadline that started or was met (for the event record)."""

    change: Literal['started', 'met']
    deadline: Deadline


class WorkflowState(BaseModel):
    """A read-only snapshot of the policy (a copy: changing it changes nothing)."""

    tasks: list[TaskState]
    escalations: list[EscalationRecord]
    deadlines: list[Deadline]
    patient_id: str = Field('', description='The patient whose arrival started the onboarding deadlines.')
    id_prefix: str = Field('', description="Before every task and escalation ID of the case ('' for the first "
                                           "case of a run, the patient's ID and '/' for later ones).")
    assigned_hcw_id: str = Field('', description="The HCW the hospital assigned to the patient (a person's choice).")
    required_specialty: str = Field('', description="The specialty the patient needs, e.g. 'Physician'.")
    closed: bool = Field(description="Whether a human closed the episode with an 'abort' decision.")
    closed_by: str = Field('', description="The escalation whose 'abort' closed the episode.")

    def task(self, task_id: str) -> TaskState | None:
        """Return the task ``task_id``, if any."""
        return next((t for t in self.tasks if t.task_id == task_id), None)

    def escalation(self, escalation_id: str) -> EscalationRecord | None:
        """Return the escalation ``escalation_id``, if any."""
        return next((e for e in self.escalations if e.escalation_id == escalation_id), None)


class WorkflowPolicy:
    """Enforce the ED workflow (navigation -> info collection -> display -> reflection) and deadlines.

    Parameters
    ----------
    deadlines
        Issue-handling and task deadlines, s (``robot_team.config.Deadlines``).

    Notes
    -----
    Rules of :meth:`authorize`, checked in this order:

    1. only the manager may request a delegation;
    2. the task type must be one of the workflow's;
    3. the robot must own the task type (``reports.TASK_OWNER``): the manager only reflects;
    4. after a human's ``abort`` only the reflection may start;
    5. every earlier operational task type's latest task must have succeeded;
    6. no second task of a type while one of that type runs;
    7. a type whose latest task succeeded is repeated only to recover a later step that failed
       (e.g. the HCW left before the badge scan), and with a reason; otherwise the workflow moves
       on (a failed type is retried freely: recovery);
    8. the reflection needs no task running and either all three operational tasks succeeded or
       the episode closed by ``abort`` (a person's ``retry`` or ``reassign`` on a failure is work
       for the team); once a reflection runs or succeeded, no second one;
    9. the HCW (:func:`task_hcw_refusal`): a navigation names an HCW of the patient's required
       specialty who is on shift, unless a person chose them (the hospital's assignment, a
       ``reassign`` decision); the later steps are about the HCW the latest navigation escorted.

    Deadlines (:class:`Deadline`; durations from :class:`~robot_team.config.Deadlines`):

    - ``decision``: started by the patient cue (:meth:`patient_arrived`), a successful report
      and a human decision, unless a task runs or one is pending; met by any approved
      authorization (a delegation, the reflection) or any escalation (a human is paged);
    - ``issue_handling``: started by a failure report; met by a delegation of that task type or
      the manager's escalation of that task;
    - ``onboarding``: started by the patient cue; met by the reflection's report;
    - ``task``: started by each operational delegation; met by its report.

    Thread-safe (one lock); pure logic, no ROS. Deadline starts and met deadlines are queued for
    :meth:`take_deadline_changes`; missed ones are returned by :meth:`due`.
    """

    def __init__(self, deadlines: Deadlines | None = None, *, id_prefix: str = ''):
        self.deadlines = deadlines or Deadlines()
        self.id_prefix = _text(id_prefix)
        """Put before every task and escalation ID (a later case's ``'P-0777/'``: ``P-0777/nav-1``)."""
        self._lock = threading.RLock()
        self._tasks: dict[str, TaskState] = {}
        self._counters: dict[TaskType, int] = {t: 0 for t in WORKFLOW_ORDER}
        self._escalations: dict[str, EscalationRecord] = {}
        self._deadlines: list[Deadline] = []
        self._changes: list[DeadlineChange] = []
        self._closed_by = ''
        self._patient_id = ''
        self._assigned_hcw_id = ''
        self._required_specialty = ''

    # --- Authorization ------------------------------------------------------------------------

    def authorize(self, task_type: str, robot: str, reason: str, requested_by: str,
                  now_s: float, *, hcw_id: str = '', staff: Mapping[str, StaffFacts] | None = None,
                  engaged: Mapping[str, str] | None = None) -> Authorization:
        """Decide whether ``requested_by`` may delegate ``task_type`` to ``robot`` at ROS time ``now_s`` (s).

        ``hcw_id``: the HCW the delegation names; ``staff``: what is known of each HCW (the staff
        directory and the RTLS, by HCW ID) for rule 9; ``None``: no staff view, so a navigation's
        HCW is not checked for specialty and shift (the supervisor node always gives one);
        ``engaged``: the HCWs other open cases have (HCW ID -> that case's patient), for rule 9.

        An approved request creates a running task (its ID in the answer, with the HCW it is
        about), starts its task deadline (operational tasks only: the reflection is the manager's
        own work) and meets a pending issue-handling deadline of that task type.
        """
        with self._lock:
            task_type, robot, requested_by = _text(task_type), _text(robot), _text(requested_by)
            reason, hcw_id = _text(reason), _text(hcw_id).strip()
            refusal = self._check(task_type, robot, reason, requested_by)
            if refusal is None and task_type != TaskType.REFLECTION.value:
                refusal = self._check_hcw(TaskType(task_type), robot, hcw_id, staff, engaged)
            if refusal is not None:
                return refusal
            kind = TaskType(task_type)
            hcw_id = task_hcw(kind, hcw_id, self._outlines())
            self._counters[kind] += 1
            task_id = f'{self.id_prefix}{TASK_ID_PREFIX[kind]}-{self._counters[kind]}'
            previous = self._latest(kind)
            self._tasks[task_id] = TaskState(task_id=task_id, task_type=kind, robot=robot, hcw_id=hcw_id,
                                             requested_by=requested_by, reason=reason, started_s=now_s)
            for deadline in self._pending('issue_handling'):
                if deadline.task_type is kind:
                    self._close(deadline, 'met', f'delegation {task_id}', now_s)
            for deadline in self._pending('decision'):
                self._close(deadline, 'met', f'delegation {task_id}', now_s)
            if kind in OPERATIONAL_TASKS:   # the reflection is the manager's own work, not a robot's
                self._start(Deadline(kind='task', task_id=task_id, task_type=kind, started_s=now_s,
                                     duration_s=self.deadlines.task_s))
            if previous is None:
                why = f'{kind.value} is next in the workflow'
            elif previous.status == 'failure':
                why = f'retry of {kind.value} after {previous.task_id} failed ({previous.issue})'
            else:
                why = f'repeat of {kind.value} ({reason.strip()})'
            if kind in OPERATIONAL_TASKS:
                why += f'; report on {task_id} within {self.deadlines.task_s:g} s'
            return Authorization(approved=True, task_id=task_id, rule='ok', task_type=kind.value, robot=robot,
                                 hcw_id=hcw_id, explanation=f'approved {task_id} for {robot}: {why}')

    def _check(self, task_type: str, robot: str, reason: str, requested_by: str) -> Authorization | None:
        def refuse(rule: str, explanation: str) -> Authorization:
            return Authorization(approved=False, rule=rule, explanation=explanation,
                                 task_type=task_type, robot=robot)

        if requested_by != MANAGER:
            return refuse('requester', f"only the manager may request delegations; '{requested_by}' is not "
                                       f"the manager")
        try:
            kind = TaskType(task_type)
        except ValueError:
            return refuse('unknown_task_type', f"unknown task type '{task_type}'; the workflow's task types "
                                               f"are {', '.join(t.value for t in WORKFLOW_ORDER)}")
        owner = TASK_OWNER[kind]
        if role_name(robot) != owner:
            if robot == MANAGER:
                why = f'the manager delegates and never operates: {kind.value} must be delegated to {owner}'
            elif kind is TaskType.REFLECTION:
                why = f"reflection is the manager's own task ('{MANAGER}'), not {robot}'s"
            else:
                why = f"{kind.value} is done only by {owner}, not '{robot}'"
            return refuse('role', why)
        if self._closed_by and kind is not TaskType.REFLECTION:
            return refuse('closed', f"a human closed the episode with 'abort' on {self._closed_by}; no more "
                                    f"operational tasks: only the reflection may start")
        if kind is TaskType.REFLECTION:
            return self._check_reflection(refuse)
        refusal = delegation_refusal(kind, self._outlines())
        if refusal is not None:
            return refuse(*refusal)
        latest = self._latest(kind)
        if latest is not None and latest.status == 'success' and not reason.strip():
            return refuse('repeat_reason', f'{kind.value} already succeeded ({latest.task_id}); to repeat '
                                           f'it (a later step failed), give a reason')
        return None

    def _check_hcw(self, kind: TaskType, robot: str, hcw_id: str, staff: Mapping[str, StaffFacts] | None,
                   engaged: Mapping[str, str] | None = None) -> Authorization | None:
        """Rule 9 (:func:`task_hcw_refusal`) with what this policy knows: the patient, people's choices."""
        refusal = task_hcw_refusal(kind, hcw_id, self._outlines(), required_specialty=self._required_specialty,
                                   chosen=people_chose(self._assigned_hcw_id, self._escalations.values()),
                                   staff=staff, engaged=engaged)
        if refusal is None:
            return None
        return Authorization(approved=False, rule=refusal[0], explanation=refusal[1], task_type=kind.value,
                             robot=robot)

    def outlines(self) -> list['TaskOutline']:
        """Return every task as the shared rules see them (:class:`TaskOutline`), in authorization order."""
        with self._lock:
            return self._outlines()

    def _outlines(self) -> list['TaskOutline']:
        """Return every task as the shared rules see them, in authorization order (lock held)."""
        return [TaskOutline(t.task_id, t.task_type, t.status, t.issue, t.robot, t.hcw_id) for t in self._tasks.values()]

    def _check_reflection(self, refuse) -> Authorization | None:
        done = [t for t in self._tasks.values()
                if t.task_type is TaskType.REFLECTION and t.status != 'failure']
        if done:
            return refuse('reflection', f'the reflection is already {done[0].status} ({done[0].task_id}); '
                                        f'there is only one reflection per episode')
        why = reflection_wait(self._outlines(), closed=bool(self._closed_by))
        return None if why is None else refuse('reflection', why)

    # --- Reports ------------------------------------------------------------------------------

    def record_report(self, report: TaskReportModel, now_s: float) -> TaskState:
        """Record a robot's report on its task at ROS time ``now_s`` (s); return the updated task.

        A report meets the task's deadline; a failed operational task starts an issue-handling
        deadline. The manager may report on its reflection (robot ``'manager'``) to close it.

        Raises
        ------
        DuplicateReport
            If the task already ended with this very report (status, issue and summary).
        ValueError
            If the task ID is unknown, the task already reported (or timed out), or the report's
            robot or task type is not the one authorized.
        """
        with self._lock:
            task = self._tasks.get(report.task_id)
            if task is None:
                known = ', '.join(self._tasks) or 'none yet'
                raise ValueError(f"report for unknown task ID '{report.task_id}' (authorized tasks: {known})")
            if report.robot != task.robot:
                raise ValueError(f"report on {task.task_id} comes from '{report.robot}', but {task.task_id} "
                                 f'was authorized for {task.robot}')
            if report.task_type is not task.task_type:
                raise ValueError(f"report on {task.task_id} says task type '{report.task_type.value}', but "
                                 f'{task.task_id} is {task.task_type.value}')
            if task.status != 'running':
                if (task.issue_code is IssueCode.NONE and task.status == report.status.value
                        and task.issue == report.issue and task.summary == report.summary):
                    raise DuplicateReport(f'{task.task_id} is already recorded as {task.status} with this report')
                raise ValueError(f'{task.task_id} is already closed ({task.status}'
                                 + (f': {task.issue}' if task.issue else '') + '); one report per task')
            if report.issue_code is not IssueCode.NONE:
                raise ValueError(f"report on {task.task_id} sets issue_code '{report.issue_code.value}': only the "
                                 f"supervisor closes a task with it (robot_lost); a robot's report leaves it ''")
            return self._finish(task, report.status, report.issue, report.summary, IssueCode.NONE, 'report', now_s)

    def robot_lost(self, robot: str, now_s: float) -> TaskState | None:
        """Close the task ``robot`` was running when it was lost, at ROS time ``now_s`` (s); return it, or None.

        The task recovery rule: a task whose robot's node was lost (:mod:`robot_team.liveness`) ends
        as a ``failure`` with issue code ``robot_lost``, as a failure report would end it, so the
        issue-handling deadline starts at once and the manager's choices apply (retry on the
        restarted robot, reassign, escalate) instead of waiting out the task deadline. A report the
        robot sends later on that task (a host back on the network) is refused: one end per task.
        """
        with self._lock:
            task = next((t for t in self._tasks.values() if t.robot == robot and t.status == 'running'
                         and t.task_type in OPERATIONAL_TASKS), None)
            if task is None:
                return None
            issue = f'{robot} was lost while it ran {task.task_id} (its node stopped answering)'
            return self._finish(task, TaskStatus.FAILURE, issue, f'{task.task_id} closed by the supervisor: '
                                f'{robot} was lost', IssueCode.ROBOT_LOST, 'robot_lost', now_s)

    def _finish(self, task: TaskState, status: TaskStatus, issue: str, summary: str, issue_code: IssueCode,
                met_by: str, now_s: float) -> TaskState:
        """End running ``task`` (lock held): its task deadline closes, a failure starts issue handling."""
        task.status = 'success' if status is TaskStatus.SUCCESS else 'failure'
        task.issue = issue
        task.issue_code = issue_code
        task.summary = summary
        task.finished_s = now_s
        for deadline in self._pending('task'):
            if deadline.task_id == task.task_id:
                self._close(deadline, 'met', met_by, now_s)
        if task.status == 'failure' and task.task_type in OPERATIONAL_TASKS:
            self._start(Deadline(kind='issue_handling', task_id=task.task_id, task_type=task.task_type,
                                 cue=(f'failure report {task.task_id}' if met_by == 'report' else
                                      f'{task.robot} lost ({task.task_id})'), started_s=now_s,
                                 duration_s=self.deadlines.issue_handling_s))
        elif task.task_type in OPERATIONAL_TASKS:
            self._start_decision(f'report {task.task_id}', now_s, task)
        elif task.status == 'success':   # the reflection: the onboarding is done
            for deadline in self._pending('onboarding'):
                self._close(deadline, 'met', f'reflection {task.task_id}', now_s)
        return task.model_copy(deep=True)

    # --- Deadlines ----------------------------------------------------------------------------

    def due(self, now_s: float) -> list[Deadline]:
        """Return the deadlines missed by ROS time ``now_s`` (s) that were not returned before.

        A task that missed its deadline is closed as a failure ('no report within N s'); a
        late report on it is refused.
        """
        with self._lock:
            missed = []
            for deadline in self._pending():
                if now_s > deadline.due_s:
                    self._close(deadline, 'missed', '', now_s)
                    if deadline.kind == 'task':
                        task = self._tasks[deadline.task_id]
                        task.status = 'failure'
                        task.issue = f'no report within {deadline.duration_s:g} s (task deadline)'
                        task.finished_s = now_s
                    missed.append(deadline.model_copy(deep=True))
            return missed

    def take_deadline_changes(self) -> list[DeadlineChange]:
        """Return and forget the deadlines started or met since the last call, oldest first."""
        with self._lock:
            changes, self._changes = self._changes, []
            return changes

    # --- The patient cue and the manager's deadlines -------------------------------------------

    @property
    def patient_id(self) -> str:
        """The patient this onboarding serves ('' before the patient cue)."""
        with self._lock:
            return self._patient_id

    def patient_arrived(self, patient_id: str, now_s: float, *, assigned_hcw_id: str = '',
                        required_specialty: str = '', arrived_s: float | None = None) -> bool:
        """Start the onboarding's deadlines for ``patient_id``'s case at ROS time ``now_s`` (s).

        ``assigned_hcw_id`` and ``required_specialty`` (the arrival's) are what rule 9 checks a
        navigation's HCW against. Starts a ``decision`` deadline (the manager's first step,
        ``deadlines.decision_s``, from ``now_s``) and the ``onboarding`` deadline (the reflection,
        ``deadlines.onboarding_s``, from ``arrived_s``: the arrival of a patient whose case waited
        for the team's previous one; default ``now_s``). Returns False, changing nothing, for a
        repeat of the same cue or a second patient (one policy per case).

        Raises
        ------
        ValueError
            If ``patient_id`` is empty.
        """
        patient_id = _text(patient_id).strip()
        if not patient_id:
            raise ValueError('a patient cue needs a patient ID')
        with self._lock:
            if self._patient_id:
                return False
            self._patient_id = patient_id
            self._assigned_hcw_id = _text(assigned_hcw_id).strip()
            self._required_specialty = _text(required_specialty).strip()
            arrived_s = now_s if arrived_s is None else min(float(arrived_s), now_s)
            cue = f'patient {patient_id} arrived'
            self._start_decision(cue if arrived_s == now_s else f"patient {patient_id}'s turn (arrived at "
                                 f'{arrived_s:.0f} s)', now_s)
            self._start(Deadline(kind='onboarding', cue=cue, started_s=arrived_s,
                                 duration_s=self.deadlines.onboarding_s))
            return True

    def _start_decision(self, cue: str, now_s: float, task: TaskState | None = None) -> None:
        """Start a ``decision`` deadline after ``cue``, unless one is pending or a task runs (lock held).

        A pending one keeps its earlier start: the patient has been waiting since then.
        """
        if self._pending('decision') or any(t.status == 'running' for t in self._tasks.values()):
            return
        self._start(Deadline(kind='decision', task_id=task.task_id if task else '',
                             task_type=task.task_type if task else None, cue=cue, started_s=now_s,
                             duration_s=self.deadlines.decision_s))

    # --- Escalations --------------------------------------------------------------------------

    def open_escalation(self, task_id: str, raised_by: str, reason: str, options: list[str] | None = None,
                        now_s: float = 0.0) -> str:
        """Open an escalation about ``task_id`` ('' for none) raised by ``raised_by``; return its ID.

        IDs are ``esc-1``, ``esc-2``... An escalation by the manager meets a pending
        issue-handling deadline of that task.

        Raises
        ------
        ValueError
            If ``task_id`` is not an authorized task, ``reason`` is empty, or the manager escalates
            a task that succeeded while a failure waits (:func:`manager_may_escalate`), while one
            of its escalations is open (:func:`open_escalation_of`) or after a human's ``abort``
            closed the episode (:func:`~robot_team.escalation_model.closing_abort`).
        """
        with self._lock:
            task_id, raised_by = _text(task_id), _text(raised_by)
            task = self._tasks.get(task_id) if task_id else None
            if task_id and task is None:
                raise ValueError(f"cannot escalate unknown task ID '{task_id}' (authorized tasks: "
                                 f"{', '.join(self._tasks) or 'none yet'})")
            waiting = [d.task_id for d in self._pending('issue_handling') if d.task_id != task_id]
            if raised_by == MANAGER and task is not None and not manager_may_escalate(task.status, bool(waiting)):
                raise ValueError(f"{task_id} succeeded while the failure of {', '.join(waiting)} waits to be "
                                 f"handled: escalate that failure, or the episode ('')")
            if raised_by == MANAGER and self._closed_by:
                raise ValueError(f"a human closed the episode with 'abort' on {self._closed_by}: nothing is left "
                                 f'to escalate; submit the reflection')
            pending = open_escalation_of(self._escalations.values()) if raised_by == MANAGER else None
            if pending is not None:
                about = pending.task_id or 'the episode'
                raise ValueError(f'the manager already has {pending.escalation_id} open (about {about}); one '
                                 f"escalation at a time: wait for the human's decision")
            if not str(reason or '').strip():
                raise ValueError('an escalation needs a reason the human can read')
            escalation_id = f'{self.id_prefix}esc-{len(self._escalations) + 1}'
            self._escalations[escalation_id] = EscalationRecord(
                escalation_id=escalation_id, task_id=task_id or '',
                task_type=task.task_type.value if task else '', raised_by=raised_by, reason=reason,
                options=list(options or []), opened_s=now_s, patient_id=self._patient_id)
            if raised_by == MANAGER and task is not None:
                for deadline in self._pending('issue_handling'):
                    if deadline.task_id == task_id:
                        self._close(deadline, 'met', f'escalation {escalation_id}', now_s)
            for deadline in self._pending('decision'):   # a human is paged
                self._close(deadline, 'met', f'escalation {escalation_id}', now_s)
            return escalation_id

    def resolve(self, escalation_id: str, decision: str, hcw_id: str = '', note: str = '',
                operator_id: str = '', now_s: float = 0.0) -> tuple[bool, str]:
        """Record a human's decision on an open escalation; return ``(accepted, message)``.

        ``decision`` is one of :data:`DECISIONS`; ``reassign`` needs ``hcw_id``; ``abort``
        closes the episode (only the reflection may start afterwards). A refused decision
        changes nothing and the message says why.
        """
        with self._lock:
            escalation = self._escalations.get(escalation_id)
            if escalation is None:
                open_ids = [e.escalation_id for e in self._escalations.values() if e.is_open]
                return False, (f"no escalation '{escalation_id}'; open escalations: "
                               f"{', '.join(open_ids) or 'none'}")
            if not escalation.is_open:
                return False, (f"{escalation_id} is already resolved ({escalation.decision} by "
                               f'{escalation.decided_by or "an unnamed operator"})')
            if decision not in DECISIONS:
                return False, f"unknown decision '{decision}'; expected one of {', '.join(DECISIONS)}"
            if decision == 'reassign' and not str(hcw_id or '').strip():
                return False, "decision 'reassign' needs hcw_id: the HCW to assign instead"
            transition(escalation, LifecycleAction.RESOLVE)
            escalation.decision = decision
            escalation.hcw_id = str(hcw_id or '').strip()
            escalation.note = note or ''
            escalation.decided_by = operator_id or ''
            escalation.closed_s = now_s
            self._start_decision(f'decision on {escalation_id}', now_s)
            about = f' on {escalation.task_id}' if escalation.task_id else ''
            if decision == 'abort':
                self._closed_by = escalation_id
                return True, (f'{escalation_id}{about}: abort accepted; the episode is closed '
                              f'(reflection only)')
            if decision == 'reassign':
                return True, f'{escalation_id}{about}: reassign to HCW {escalation.hcw_id} accepted'
            return True, f'{escalation_id}{about}: retry accepted'

    def restore_escalation(self, escalation: EscalationRecord) -> None:
        """Take back an escalation a previous supervisor opened (restart from the escalation store).

        Its ID keeps its number (the next one opened follows it); a resolved ``abort`` closes
        the episode again. Tasks are not restored: an escalation may name a task this policy
        does not know.
        """
        with self._lock:
            self._escalations[escalation.escalation_id] = escalation.model_copy(deep=True)
            if not escalation.is_open and escalation.decision == 'abort' and not self._closed_by:
                self._closed_by = escalation.escalation_id

    def postpone_deadlines(self, by_s: float, kind: str | None = None) -> None:
        """Move every pending deadline (of ``kind``; None: all) ``by_s`` s later (nobody could act meanwhile).

        All of them: the team was held. ``'decision'``: the case waited for a robot another case held.
        """
        with self._lock:
            for deadline in self._pending(kind):
                deadline.started_s += by_s

    def next_steps(self) -> list[TaskType]:
        """Return the operational task types the order and running rules accept now (empty while one runs).

        What the case waits to delegate: ``[navigation]`` after the patient cue, the failed
        type's retry after a failure; empty while a task runs, once the case is closed by
        ``abort`` or when the reflection is next.
        """
        with self._lock:
            if self._closed_by or any(t.status == 'running' for t in self._tasks.values()):
                return []
            outlines = self._outlines()
            return [kind for kind in OPERATIONAL_TASKS if delegation_refusal(kind, outlines) is None]

    # --- State --------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether a human closed the episode with an 'abort' decision."""
        with self._lock:
            return bool(self._closed_by)

    @property
    def done(self) -> bool:
        """Whether the case is over: its reflection was recorded as a success (after every step, or an abort)."""
        with self._lock:
            return any(t.task_type is TaskType.REFLECTION and t.status == 'success' for t in self._tasks.values())

    def snapshot(self) -> WorkflowState:
        """Return a copy of the tasks (in authorization order), escalations, deadlines and closed flag."""
        with self._lock:
            return WorkflowState(
                tasks=[t.model_copy(deep=True) for t in self._tasks.values()],
                escalations=[e.model_copy(deep=True) for e in self._escalations.values()],
                deadlines=[d.model_copy(deep=True) for d in self._deadlines],
                closed=bool(self._closed_by), closed_by=self._closed_by, patient_id=self._patient_id,
                id_prefix=self.id_prefix,
                assigned_hcw_id=self._assigned_hcw_id, required_specialty=self._required_specialty)

    def state(self) -> WorkflowState:
        """Return the whole state to store for a restart (:meth:`restore` takes it back); as :meth:`snapshot`.

        The per-type task counters are not stored: :meth:`restore` derives them from the task IDs.
        """
        return self.snapshot()

    def restore(self, state: WorkflowState) -> None:
        """Take up a stored state (:meth:`state` of a previous supervisor) after a restart.

        Tasks (running and closed, in authorization order), escalations, deadlines (pending ones
        keep their start and due time in ROS time: one that passed while the supervisor was down
        is returned by the first :meth:`due` after the restart), the patient cue and the closed
        state come back as they were. Task IDs continue per type (``nav-3`` after ``nav-2``) and
        escalation IDs after the last one. Nothing is queued for :meth:`take_deadline_changes`:
        the deadlines were announced when they started.

        Raises
        ------
        ValueError
            If this policy already has tasks, escalations, deadlines or a patient cue (restore
            only into a fresh policy), or ``state`` is inconsistent: a task ID that is not
            ``<prefix>-<n>`` of its task type or repeats, escalation IDs other than ``esc-1`` to
            ``esc-N`` in order, a deadline about an unknown task, or ``closed_by`` naming no
            escalation. Nothing changes then.
        """
        with self._lock:
            if self._tasks or self._escalations or self._deadlines or self._patient_id or self._closed_by:
                raise ValueError('a workflow state is restored only into a fresh policy (this one already has '
                                 f'{len(self._tasks)} task(s), {len(self._escalations)} escalation(s), '
                                 f'{len(self._deadlines)} deadline(s))')
            counters = {t: 0 for t in WORKFLOW_ORDER}
            tasks: dict[str, TaskState] = {}
            for task in state.tasks:
                prefix, _, number = task.task_id.rpartition('-')
                if (prefix != state.id_prefix + TASK_ID_PREFIX[task.task_type] or not number.isdigit()
                        or int(number) < 1):
                    raise ValueError(f"stored task ID '{task.task_id}' is not '{state.id_prefix}"
                                     f"{TASK_ID_PREFIX[task.task_type]}-<n>' of its type {task.task_type.value}")
                if task.task_id in tasks:
                    raise ValueError(f"stored task ID '{task.task_id}' appears twice")
                tasks[task.task_id] = task.model_copy(deep=True)
                counters[task.task_type] = max(counters[task.task_type], int(number))
            expected = [f'{state.id_prefix}esc-{n}' for n in range(1, len(state.escalations) + 1)]
            got = [e.escalation_id for e in state.escalations]
            if got != expected:
                raise ValueError(f"stored escalation IDs {', '.join(got)} are not {state.id_prefix}esc-1 to "
                                 f"{state.id_prefix}esc-{len(got)} in order")
            for deadline in state.deadlines:
                if deadline.task_id and deadline.task_id not in tasks:
                    raise ValueError(f"stored {deadline.kind} deadline is about unknown task '{deadline.task_id}'")
            if state.closed_by and state.closed_by not in got:
                raise ValueError(f"stored closed_by '{state.closed_by}' names no stored escalation")
            self.id_prefix = state.id_prefix
            self._tasks = tasks
            self._counters = counters
            self._escalations = {e.escalation_id: e.model_copy(deep=True) for e in state.escalations}
            self._deadlines = [d.model_copy(deep=True) for d in state.deadlines]
            self._patient_id = state.patient_id
            self._assigned_hcw_id = state.assigned_hcw_id
            self._required_specialty = state.required_specialty
            self._closed_by = state.closed_by
            self._changes = []

    # --- Internals ----------------------------------------------------------------------------

    def _latest(self, kind: TaskType) -> TaskState | None:
        for task in reversed(list(self._tasks.values())):
            if task.task_type is kind:
                return task
        return None

    def _pending(self, kind: str | None = None) -> list[Deadline]:
        return [d for d in self._deadlines if d.state == 'pending' and (kind is None or d.kind == kind)]

    def _start(self, deadline: Deadline) -> None:
        self._deadlines.append(deadline)
        self._changes.append(DeadlineChange(change='started', deadline=deadline.model_copy(deep=True)))

    def _close(self, deadline: Deadline, state: str, met_by: str, now_s: float) -> None:
        deadline.state = state
        deadline.met_by = met_by
        deadline.closed_s = now_s
        if state == 'met':
            self._changes.append(DeadlineChange(change='met', deadline=deadline.model_copy(deep=True)))


def _text(value) -> str:
    """Return an argument as text: an enum member's value (``TaskType``, ``Role``), '' for None."""
    if value is None:
        return ''
    return str(value.value) if isinstance(value, Enum) else str(value)


class TaskOutline(NamedTuple):
    """A task as :func:`reflection_wait` and :func:`delegation_refusal` see it (status: running, success, failure)."""

    task_id: str
    task_type: TaskType
    status: str
    issue: str
    robot: str = ''
    hcw_id: str = ''


class StaffFacts(NamedTuple):
    """What the gate knows of one HCW (rule 9): specialty (staff directory, else RTLS) and availability (RTLS)."""

    specialty: str
    availability: str = 'unknown'   # available | busy | off_shift | unknown (no RTLS answer yet)


def people_chose(assigned_hcw_id: str, escalations: Iterable[EscalationRecord]) -> set[str]:
    """Return the HCWs a person chose for the patient: the hospital's assignment and every ``reassign`` decision."""
    chosen = {e.hcw_id for e in escalations if e.decision == 'reassign' and e.hcw_id}
    return chosen | ({assigned_hcw_id} if assigned_hcw_id else set())


def escorted_hcw(tasks: list[TaskOutline]) -> str:
    """Return the HCW the latest navigation in ``tasks`` escorted, if it succeeded, else ``''``."""
    nav = _latest_outline(TaskType.NAVIGATION, tasks)
    return nav.hcw_id if nav is not None and nav.status == 'success' else ''


def task_hcw(kind: TaskType, hcw_id: str, tasks: list[TaskOutline]) -> str:
    """Return the HCW a task of ``kind`` delegated with ``hcw_id`` is about, given ``tasks`` (authorization order).

    A navigation is about the HCW it names; info collection and display about the HCW the
    latest navigation escorted (:func:`escorted_hcw`): whose badge is read, who joins the care
    team shown. The reflection is about no HCW.
    """
    if kind is TaskType.NAVIGATION:
        return hcw_id
    return escorted_hcw(tasks) if kind in OPERATIONAL_TASKS else ''


def task_hcw_refusal(kind: TaskType, hcw_id: str, tasks: list[TaskOutline], *, required_specialty: str,
                     chosen: set[str], staff: Mapping[str, StaffFacts] | None,
                     engaged: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """Return ``('hcw', explanation)`` if rule 9 refuses a ``kind`` delegation naming ``hcw_id``, else ``None``.

    - A navigation escorts an HCW: it must name one; a person's choice (``chosen``: the hospital's
      assignment, a ``reassign`` decision; :func:`people_chose`) stands; anyone else must be known
      to ``staff`` (the staff directory, or the RTLS), of ``required_specialty`` (compared without
      case; none given: any) and on shift (availability not ``off_shift``; ``busy`` is on shift:
      the page tells whether they can come). ``staff`` ``None``: no staff view, only the name is
      required.
    - A navigation may not name an HCW another open case has (``engaged``, HCW ID -> that case's
      patient: :func:`engaged_hcws`): a person is in one room at a time, whoever chose them.
    - Info collection and display are about the HCW the latest navigation escorted
      (:func:`task_hcw`): a delegation naming another is refused; naming none is fine.

    The one rule behind the supervisor's gate and the LLM manager's offer
    (``robot_team.llm.decoding``): an escort of technician #55 for a patient who needs a
    physician was accepted before it.
    """
    if kind is TaskType.NAVIGATION:
        if not hcw_id:
            return ('hcw', 'a navigation escorts an HCW: name the HCW (hcw_id)')
        if engaged and hcw_id in engaged:
            return ('hcw', f'HCW #{hcw_id} is with case {engaged[hcw_id]} (escorted, or being escorted, to its '
                           'room): a person is in one room at a time; name another HCW of the specialty, or wait '
                           'for that case to close')
        if hcw_id in chosen or staff is None:
            return None
        facts = staff.get(hcw_id)
        if facts is None:
            known = ', '.join(f'#{h}' for h in staff) or 'none yet'
            return ('hcw', f'HCW #{hcw_id} is not known to the staff directory or the location system '
                           f'(known: {known})')
        wanted = required_specialty.strip()
        if wanted and facts.specialty.strip().casefold() != wanted.casefold():
            return ('hcw', f"HCW #{hcw_id} is a {facts.specialty or 'HCW of unknown specialty'}; the patient needs "
                           f'a {wanted}: name an HCW of that specialty, or escalate for a person to choose')
        if facts.availability == 'off_shift':
            return ('hcw', f'HCW #{hcw_id} is off shift: name an HCW on shift, or escalate for a person to choose')
        return None
    escorted = task_hcw(kind, hcw_id, tasks)
    if kind in OPERATIONAL_TASKS and hcw_id and hcw_id != escorted:
        nav = _latest_outline(TaskType.NAVIGATION, tasks)
        return ('hcw', f'{kind.value} is about the HCW navigation escorted'
                       + (f' ({nav.task_id}): HCW #{escorted}' if escorted and nav is not None else ' (none yet)')
                       + f', not #{hcw_id}')
    return None


def engaged_hcws(cases: Mapping[str, list[TaskOutline]]) -> dict[str, str]:
    """Return the HCWs open cases have: HCW ID -> the case (patient ID) whose latest navigation runs or succeeded.

    ``cases``: each open case's tasks (case ID -> its outlines). An HCW being escorted to a
    patient's room, or escorted there, is with that patient until the case closes. One rule for
    the gate and the manager (its observation's ``engaged_hcws``).
    """
    engaged = {}
    for case, tasks in cases.items():
        nav = _latest_outline(TaskType.NAVIGATION, tasks)
        if nav is not None and nav.hcw_id and nav.status in ('running', 'success'):
            engaged[nav.hcw_id] = case
    return engaged


def manager_may_escalate(status: str, failure_waits: bool) -> bool:
    """Return whether the manager may escalate a task in ``status`` ('running', 'success', 'failure').

    ``failure_waits``: another task's failure waits to be handled (its issue-handling deadline
    runs). Then a task that succeeded may not be escalated: that would leave the failure unhandled
    while a human is paged about something else (seen from a 0.5B model); the failure itself, or
    the episode, may. Otherwise any task may (e.g. a concern about an escort that succeeded).
    Shared by the supervisor's gate and the manager's LLM bridge (which offers only these task IDs).
    """
    return status != 'success' or not failure_waits


def open_escalation_of(escalations, raised_by: str = MANAGER) -> EscalationRecord | None:
    """Return an open escalation raised by ``raised_by`` among ``escalations``, else None.

    The manager has one escalation open at a time: it may not escalate again (about any task, or
    the episode) until a human decided on it or it expired (:meth:`WorkflowPolicy.open_escalation`;
    the human is paged once, and the team holds for the decision). The manager's LLM bridge does
    not offer ``escalate_to_supervisor`` meanwhile.
    """
    return next((e for e in escalations if e.is_open and e.raised_by == raised_by), None)


def _latest_outline(task_type: TaskType, tasks: list[TaskOutline]) -> TaskOutline | None:
    """Return the latest task of ``task_type`` in ``tasks`` (authorization order), or None."""
    return next((t for t in reversed(tasks) if t.task_type is task_type), None)


def delegation_refusal(kind: TaskType, tasks: list[TaskOutline]) -> tuple[str, str] | None:
    """Return ``(rule, explanation)`` if the gate refuses delegating operational task ``kind`` now, else ``None``.

    The gate's order and running rules (:class:`WorkflowPolicy`) over ``tasks`` (every task, in
    authorization order): each earlier task type of the workflow must have succeeded last, and
    ``kind`` must not be running; a succeeded ``kind`` is repeated only to recover a later step
    that failed since it last succeeded (once that repeat succeeded, the failed step is next).
    Shared by the supervisor's gate and the manager's LLM bridge (which offers only the task types
    this accepts: guards at decode time).
    """
    for earlier in OPERATIONAL_TASKS[:OPERATIONAL_TASKS.index(kind)]:
        latest = _latest_outline(earlier, tasks)
        if latest is None:
            return ('order', f'{kind.value} must wait: {earlier.value} has not been delegated yet '
                             f'(workflow: {_order()}); delegate {earlier.value} first')
        if latest.status == 'running':
            return ('order', f'{kind.value} must wait: {earlier.value} {latest.task_id} is still '
                             f'running; wait for its report')
        if latest.status == 'failure':
            return ('order', f'{kind.value} must wait: {earlier.value} {latest.task_id} failed '
                             f'({latest.issue}); recover {earlier.value} first (retry, reassign or '
                             f'escalate)')
    latest = _latest_outline(kind, tasks)
    if latest is not None and latest.status == 'running':
        return ('running', f'{kind.value} {latest.task_id} is still running on {latest.robot}; '
                           f'wait for its report before delegating {kind.value} again')
    if latest is not None and latest.status == 'success':
        if not failed_since_success(kind, tasks):
            later = [_latest_outline(k, tasks) for k in OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:]]
            following = next((k.value for k, t in zip(OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:], later)
                              if t is None or t.status != 'success'), 'the reflection')
            return ('repeat_reason', f'{kind.value} already succeeded ({latest.task_id}) and no later step failed '
                                     f'since: '
                                     f'the workflow moves on to {following}; repeat {kind.value} only to recover '
                                     f'a later step that failed, with a reason')
    return None


def failed_since_success(kind: TaskType, tasks: list[TaskOutline]) -> list[TaskOutline]:
    """Return the later steps' latest tasks that failed since ``kind`` last succeeded, in workflow order.

    What a repeat of the succeeded ``kind`` may recover (the gate's repeat rule,
    :func:`delegation_refusal`); ``[]`` when ``kind``'s latest task did not succeed. A later step's
    failure before that success was what it recovered. ``tasks``: every task, in authorization order.
    """
    latest = _latest_outline(kind, tasks)
    if latest is None or latest.status != 'success':
        return []
    since = tasks.index(latest)
    later = (_latest_outline(k, tasks) for k in OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:])
    return [t for t in later if t is not None and t.status == 'failure' and tasks.index(t) > since]


def reflection_wait(tasks: list[TaskOutline], *, closed: bool) -> str | None:
    """Return why the reflection must wait (rule 8 of :class:`WorkflowPolicy`), or ``None`` if it may start.

    Parameters
    ----------
    tasks
        Every task, in authorization order.
    closed
        Whether the episode was closed with ``abort`` (a person's, or an unanswered escalation's safe
        default).

    A failed step ends the onboarding only when the episode is closed: a person's ``retry`` or
    ``reassign`` is work for the team, not its end (a random manager reflected right after the
    human reassigned the failed escort to another physician, and the patient was left unserved
    with the outcome ``failure``). Shared by the supervisor's gate and the manager's LLM bridge
    (which offers the reflection tool only when this returns ``None``). Does not check for an
    earlier reflection.
    """
    running = [t.task_id for t in tasks if t.status == 'running']
    if running:
        return f"reflection must wait until no task runs; still running: {', '.join(running)}"
    if closed:
        return None
    operational = [t for t in tasks if t.task_type in OPERATIONAL_TASKS]
    latest = {kind: next((t for t in reversed(operational) if t.task_type is kind), None)
              for kind in OPERATIONAL_TASKS}
    if all(t is not None and t.status == 'success' for t in latest.values()):
        return None
    last = operational[-1] if operational else None
    if last is not None and last.status == 'failure':
        return (f'reflection must wait: {last.task_id} ({last.task_type.value}) failed ({last.issue}); recover it '
                f"(a person's decision on it says how) or escalate {last.task_id}: the onboarding ends in a "
                f'reflection only when done or closed by abort')
    missing = [kind.value for kind, t in latest.items() if t is None or t.status != 'success']
    return f"reflection must wait: {', '.join(missing)} not yet successful (workflow: {_order()})"


def _order() -> str:
    return ' -> '.join(t.value for t in WORKFLOW_ORDER)
