"""The supervisor's workflow gate: :class:`WorkflowPolicy` (rules, reports, deadlines, escalations, restore).

It keeps a case's tasks in a :class:`~robot_team.rules.workflow.tasks.TaskBook`, its escalations in an
:class:`~robot_team.rules.workflow.escalations.EscalationBook` and its deadlines in a
:class:`~robot_team.rules.workflow.deadlines.DeadlineBook`, and decides with the shared rules of
:mod:`robot_team.rules.workflow.rules`. All times are ROS times in seconds (sim time in runs); the caller
passes ``now_s``.
"""

from __future__ import annotations

import math
import threading
from enum import Enum
from typing import Mapping

from robot_team.catalog import TASK_OWNER
from robot_team.contracts.config import Deadlines
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.names import role_name
from robot_team.contracts.reports import (
    OPERATIONAL_TASKS, WORKFLOW_ORDER, IssueCode, TaskReportModel, TaskStatus, TaskType)
from robot_team.rules.workflow.deadlines import Deadline, DeadlineBook, DeadlineChange
from robot_team.rules.workflow.escalations import EscalationBook
from robot_team.rules.workflow.rules import (
    StaffFacts, TaskOutline, delegation_refusal, manager_may_escalate, open_escalation_of, people_chose,
    reflection_wait, task_hcw, task_hcw_refusal)
from robot_team.rules.workflow.state import MANAGER, Authorization, TaskState, WorkflowState
from robot_team.rules.workflow.tasks import TaskBook


class DuplicateReport(ValueError):
    """The same report on a task already recorded (a robot asked again: its first answer was lost)."""


class WorkflowPolicy:
    """Enforce the ED workflow (navigation -> info collection -> display -> reflection) and deadlines.

    Parameters
    ----------
    deadlines
        Issue-handling and task deadlines, s (``robot_team.contracts.config.Deadlines``).

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
    9. the HCW (:func:`~robot_team.rules.workflow.rules.task_hcw_refusal`): a navigation names an HCW of
       the patient's required specialty who is on shift, unless a person chose them (the
       hospital's assignment, a ``reassign`` decision); the later steps are about the HCW the
       latest navigation escorted.

    Deadlines (:class:`~robot_team.rules.workflow.deadlines.Deadline`; durations from
    :class:`~robot_team.contracts.config.Deadlines`):

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
        self._tasks = TaskBook()
        self._escalations = EscalationBook()
        self._deadlines = DeadlineBook()
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
            hcw_id = task_hcw(kind, hcw_id, self._tasks.outlines())
            previous = self._tasks.latest(kind)
            task_id = self._tasks.add(kind, self.id_prefix, robot=robot, hcw_id=hcw_id, requested_by=requested_by,
                                      reason=reason, started_s=now_s).task_id
            self._deadlines.meet('issue_handling', f'delegation {task_id}', now_s, task_type=kind)
            self._deadlines.meet('decision', f'delegation {task_id}', now_s)
            if kind in OPERATIONAL_TASKS:   # the reflection is the manager's own work, not a robot's
                self._deadlines.start(Deadline(kind='task', task_id=task_id, task_type=kind, started_s=now_s,
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
        refusal = delegation_refusal(kind, self._tasks.outlines())
        if refusal is not None:
            return refuse(*refusal)
        latest = self._tasks.latest(kind)
        if latest is not None and latest.status == 'success' and not reason.strip():
            return refuse('repeat_reason', f'{kind.value} already succeeded ({latest.task_id}); to repeat '
                                           f'it (a later step failed), give a reason')
        return None

    def _check_hcw(self, kind: TaskType, robot: str, hcw_id: str, staff: Mapping[str, StaffFacts] | None,
                   engaged: Mapping[str, str] | None = None) -> Authorization | None:
        """Apply rule 9 with what this policy knows: the patient, people's choices.

        The rule is :func:`~robot_team.rules.workflow.rules.task_hcw_refusal`.
        """
        refusal = task_hcw_refusal(kind, hcw_id, self._tasks.outlines(), required_specialty=self._required_specialty,
                                   chosen=people_chose(self._assigned_hcw_id, self._escalations),
                                   staff=staff, engaged=engaged)
        if refusal is None:
            return None
        return Authorization(approved=False, rule=refusal[0], explanation=refusal[1], task_type=kind.value,
                             robot=robot)

    def outlines(self) -> list[TaskOutline]:
        """Return every task as the shared rules see them, in authorization order.

        Each is a :class:`~robot_team.rules.workflow.rules.TaskOutline`, as the rules of
        :mod:`robot_team.rules.workflow.rules` take them.
        """
        with self._lock:
            return self._tasks.outlines()

    def _check_reflection(self, refuse) -> Authorization | None:
        done = [t for t in self._tasks if t.task_type is TaskType.REFLECTION and t.status != 'failure']
        if done:
            return refuse('reflection', f'the reflection is already {done[0].status} ({done[0].task_id}); '
                                        f'there is only one reflection per episode')
        why = reflection_wait(self._tasks.outlines(), closed=bool(self._closed_by))
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
                known = ', '.join(self._tasks.ids()) or 'none yet'
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

        The task recovery rule: a task whose robot's node was lost (:mod:`robot_team.contracts.liveness`) ends
        as a ``failure`` with issue code ``robot_lost``, as a failure report would end it, so the
        issue-handling deadline starts at once and the manager's choices apply (retry on the
        restarted robot, reassign, escalate) instead of waiting out the task deadline. A report the
        robot sends later on that task (a host back on the network) is refused: one end per task.
        """
        with self._lock:
            task = next((t for t in self._tasks if t.robot == robot and t.status == 'running'
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
        self._deadlines.meet('task', met_by, now_s, task_id=task.task_id)
        if task.status == 'failure' and task.task_type in OPERATIONAL_TASKS:
            self._deadlines.start(Deadline(kind='issue_handling', task_id=task.task_id, task_type=task.task_type,
                                           cue=(f'failure report {task.task_id}' if met_by == 'report' else
                                                f'{task.robot} lost ({task.task_id})'), started_s=now_s,
                                           duration_s=self.deadlines.issue_handling_s))
        elif task.task_type in OPERATIONAL_TASKS:
            self._start_decision(f'report {task.task_id}', now_s, task)
        elif task.status == 'success':   # the reflection: the onboarding is done
            self._deadlines.meet('onboarding', f'reflection {task.task_id}', now_s)
        return task.model_copy(deep=True)

    # --- Deadlines ----------------------------------------------------------------------------

    def due(self, now_s: float) -> list[Deadline]:
        """Return the deadlines missed by ROS time ``now_s`` (s) that were not returned before.

        A task that missed its deadline is closed as a failure ('no report within N s', issue code
        ``task_deadline``: :meth:`closed_by_deadline` gives it); a late report on it is refused.
        """
        with self._lock:
            missed = self._deadlines.miss(now_s)
            for deadline in missed:
                if deadline.kind == 'task':
                    task = self._tasks.get(deadline.task_id)
                    task.status = 'failure'
                    task.issue = f'no report within {deadline.duration_s:g} s (task deadline)'
                    task.issue_code = IssueCode.TASK_DEADLINE
                    task.summary = f'{task.task_id} closed by the supervisor: {task.robot} did not report in time'
                    task.finished_s = now_s
            return missed

    def closed_by_deadline(self, deadline: Deadline) -> TaskState | None:
        """Return (a copy of) the task a missed task ``deadline`` closed (:meth:`due`); None for another deadline."""
        with self._lock:
            task = self._tasks.get(deadline.task_id) if deadline.kind == 'task' else None
            if task is None or task.issue_code is not IssueCode.TASK_DEADLINE:
                return None
            return task.model_copy(deep=True)

    def next_due_s(self) -> float:
        """Return the ROS time (s) the earliest pending deadline falls due (``inf``: none pending).

        A deadline is missed at the first check after it (:meth:`due`: later than ``due_s``), so
        nothing of this case's deadlines happens before this time (the follow clock's jump ahead).
        """
        with self._lock:
            return min((d.due_s for d in self._deadlines.pending()), default=math.inf)

    def take_deadline_changes(self) -> list[DeadlineChange]:
        """Return and forget the deadlines started or met since the last call, oldest first."""
        with self._lock:
            return self._deadlines.take_changes()

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
            self._deadlines.start(Deadline(kind='onboarding', cue=cue, started_s=arrived_s,
                                           duration_s=self.deadlines.onboarding_s))
            return True

    def _start_decision(self, cue: str, now_s: float, task: TaskState | None = None) -> None:
        """Start a ``decision`` deadline after ``cue``, unless one is pending or a task runs (lock held).

        A pending one keeps its earlier start: the patient has been waiting since then.
        """
        if self._deadlines.pending('decision') or self._tasks.running():
            return
        self._deadlines.start(Deadline(kind='decision', task_id=task.task_id if task else '',
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
            a task that succeeded while a failure waits
            (:func:`~robot_team.rules.workflow.rules.manager_may_escalate`), while one of its escalations
            is open (:func:`~robot_team.rules.workflow.rules.open_escalation_of`) or after a human's
            ``abort`` closed the episode (:func:`~robot_team.contracts.escalation_model.closing_abort`).
        """
        with self._lock:
            task_id, raised_by = _text(task_id), _text(raised_by)
            task = self._tasks.get(task_id) if task_id else None
            if task_id and task is None:
                raise ValueError(f"cannot escalate unknown task ID '{task_id}' (authorized tasks: "
                                 f"{', '.join(self._tasks.ids()) or 'none yet'})")
            waiting = [d.task_id for d in self._deadlines.pending('issue_handling') if d.task_id != task_id]
            if raised_by == MANAGER and task is not None and not manager_may_escalate(task.status, bool(waiting)):
                raise ValueError(f"{task_id} succeeded while the failure of {', '.join(waiting)} waits to be "
                                 f"handled: escalate that failure, or the episode ('')")
            if raised_by == MANAGER and self._closed_by:
                raise ValueError(f"a human closed the episode with 'abort' on {self._closed_by}: nothing is left "
                                 f'to escalate; submit the reflection')
            pending = open_escalation_of(self._escalations) if raised_by == MANAGER else None
            if pending is not None:
                about = pending.task_id or 'the episode'
                raise ValueError(f'the manager already has {pending.escalation_id} open (about {about}); one '
                                 f"escalation at a time: wait for the human's decision")
            escalation_id = self._escalations.open(
                self.id_prefix, task_id=task_id or '', task_type=task.task_type.value if task else '',
                raised_by=raised_by, reason=reason, options=list(options or []), opened_s=now_s,
                patient_id=self._patient_id).escalation_id
            if raised_by == MANAGER and task is not None:
                self._deadlines.meet('issue_handling', f'escalation {escalation_id}', now_s, task_id=task_id)
            self._deadlines.meet('decision', f'escalation {escalation_id}', now_s)   # a human is paged
            return escalation_id

    def resolve(self, escalation_id: str, decision: str, hcw_id: str = '', note: str = '',
                operator_id: str = '', now_s: float = 0.0) -> tuple[bool, str]:
        """Record a human's decision on an open escalation; return ``(accepted, message)``.

        ``decision`` is one of :data:`~robot_team.rules.workflow.state.DECISIONS`; ``reassign`` needs
        ``hcw_id``; ``abort`` closes the episode (only the reflection may start afterwards). A
        refused decision changes nothing and the message says why.
        """
        with self._lock:
            refusal = self._escalations.decide(escalation_id, decision, hcw_id, note, operator_id, now_s)
            if refusal is not None:
                return False, refusal
            escalation = self._escalations.get(escalation_id)
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
            self._escalations.take_back(escalation)
            if not escalation.is_open and escalation.decision == 'abort' and not self._closed_by:
                self._closed_by = escalation.escalation_id

    def postpone_deadlines(self, by_s: float, kind: str | None = None) -> None:
        """Move every pending deadline (of ``kind``; None: all) ``by_s`` s later (nobody could act meanwhile).

        All of them: the team was held. ``'decision'``: the case waited for a robot another case held.
        """
        with self._lock:
            self._deadlines.postpone(by_s, kind)

    def next_steps(self) -> list[TaskType]:
        """Return the operational task types the order and running rules accept now (empty while one runs).

        What the case waits to delegate: ``[navigation]`` after the patient cue, the failed
        type's retry after a failure; empty while a task runs, once the case is closed by
        ``abort`` or when the reflection is next.
        """
        with self._lock:
            if self._closed_by or self._tasks.running():
                return []
            outlines = self._tasks.outlines()
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
            return any(t.task_type is TaskType.REFLECTION and t.status == 'success' for t in self._tasks)

    def snapshot(self) -> WorkflowState:
        """Return a copy of the tasks (in authorization order), escalations, deadlines and closed flag."""
        with self._lock:
            return WorkflowState(
                tasks=self._tasks.copies(),
                escalations=self._escalations.copies(),
                deadlines=self._deadlines.copies(),
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
            tasks = TaskBook.restored(state.tasks, state.id_prefix)
            escalations = EscalationBook.restored(state.escalations, state.id_prefix)
            for deadline in state.deadlines:
                if deadline.task_id and deadline.task_id not in tasks:
                    raise ValueError(f"stored {deadline.kind} deadline is about unknown task '{deadline.task_id}'")
            if state.closed_by and state.closed_by not in escalations:
                raise ValueError(f"stored closed_by '{state.closed_by}' names no stored escalation")
            self.id_prefix = state.id_prefix
            self._tasks = tasks
            self._escalations = escalations
            self._deadlines = DeadlineBook.restored(state.deadlines)
            self._patient_id = state.patient_id
            self._assigned_hcw_id = state.assigned_hcw_id
            self._required_specialty = state.required_specialty
            self._closed_by = state.closed_by


def _text(value) -> str:
    """Return an argument as text: an enum member's value (``TaskType``, ``Role``), '' for None."""
    if value is None:
        return ''
    return str(value.value) if isinstance(value, Enum) else str(value)
