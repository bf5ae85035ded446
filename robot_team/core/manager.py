"""The manager's loop: observe, decide with the brain, act under the guards (no rclpy).

:class:`ManagerCore` keeps the manager's observation (patient cue, tasks, escalations, human
decisions, guard feedback), asks its brain what to do and carries out each action through
:class:`ManagerPorts`, the ROS side injected by the manager node (or by an offline harness):

- delegate: the prefetched-results guard (role misalignment), the supervisor's gate
  (``authorize``), then the task goes to the robot (``send_task``); its report comes back
  through the callback given to ``send_task``, is checked against its evidence and judged;
- escalate: through the supervisor (``request_escalation``);
- reflect: complete and consistent with the record first, then the gate (rule 8), then the
  reflection report goes to the supervisor (``submit_report``).

It owns no robot tool. Every decision, refusal and judgment is an event carrying its source
(:class:`~robot_team.contracts.decisions.DecisionSource`: the LLM, the protocol brain, or the protocol
brain as a fallback); guard feedback to the brain is typed
(:class:`~robot_team.brains.base.GuardFeedback`).

The supervisor's safe defaults land here: :meth:`ManagerCore.take_over` hands the manager's role
to the protocol brain for the rest of the episode (recorded as ``takeover``; a decision the
replaced brain was still making is discarded), :meth:`ManagerCore.hold` stops deciding until a
human answers the named escalation. :meth:`ManagerCore.stop` ends the loop with the episode,
cancelling the brain's request in flight.

The core composes: its ports (:mod:`robot_team.core.manager_ports`), the book of its cases
(:class:`~robot_team.core.manager_cases.CaseBook`), the guard feedback to a case's brain
(:class:`~robot_team.core.manager_feedback.BrainFeedback`), the check of a finished task's report
(:mod:`robot_team.core.manager_results`) and the reflection step
(:class:`~robot_team.core.manager_reflection.ReflectionStep`).
"""

from __future__ import annotations

import logging
import math
import threading
import traceback
from contextlib import contextmanager
from typing import Callable, Iterable

from robot_team.brains.base import (
    Delegate,
    Escalate,
    FeedbackKind,
    Finish,
    ManagerBrain,
    ManagerObservation,
    PatientInfo,
    Reflect,
    StaffInfo,
    SupervisorInstruction,
    TaskRecord,
    TaskSpec,
)
from robot_team.brains.protocol import ManagerProtocolBrain
from robot_team.core.manager_cases import CaseBook, Lane, run_outcome
from robot_team.core.manager_feedback import BrainFeedback
from robot_team.core.manager_ports import Emit, ManagerPorts
from robot_team.core.manager_reflection import ReflectionStep, keep_lessons
from robot_team.core.manager_results import record_result, report_problem
from robot_team.core.manager_store import ClosedCase, ManagerStore, WaitingPatient
from robot_team.contracts.decisions import DecisionSource
from robot_team.contracts.errors import ToolError
from robot_team.contracts.escalation_model import EscalationKind, EscalationRecord, LifecycleAction, transition
from robot_team.contracts.events import EventKind, case_emitter
from robot_team.rules.guards import all_lost_refusal, lost_robot_refusal, prefetched_results, strip_prefetched
from robot_team.contracts.names import Role, role_robots
from robot_team.contracts.reports import IssueCode, TaskReportModel, TaskType
from robot_team.rules.workflow.state import WorkflowRule

_log = logging.getLogger(__name__)


class ManagerCore:
    """The manager's observation, decision loop and guarded actions.

    Parameters
    ----------
    brain
        Decides (protocol or LLM).
    ports
        The ROS side (see :class:`ManagerPorts`).
    emit
        Event sink.
    robots
        Names of the team's operational robots (a delegation to another name is refused). A
        delegation may name a robot or its role: with several robots of the role (a fleet,
        :func:`robot_team.contracts.names.fleet_robots`) it goes to an idle one (a navigation: the one
        nearest its HCW), and the case waits only while every one of them runs another case's task.
    fallback
        Makes the protocol brain that takes over the role on :meth:`take_over` (default: a
        :class:`~robot_team.brains.protocol.ManagerProtocolBrain`).
    store
        Where the manager keeps what a restarted manager takes up (None: nothing is kept).
    cases
        The run ends once this many cases closed and none is open or waits (the scenario's
        patients; 0: never, a deployment serving arrivals until stopped).
    cases_at_once
        How many cases the manager serves at once (0: no limit), as the supervisor's gate does.
    make_brain
        Makes the brain of a case opened while ``brain`` serves another (needed unless
        ``cases_at_once`` is 1; each open case decides with its own brain and conversation).
    lessons
        Whether a case's observation starts with the lessons of the run's earlier reflections
        (False: the no-lessons condition of an evaluation; they are still kept).

    Attributes
    ----------
    finished : threading.Event
        Set when the run ends (see ``cases``); ``outcome`` then holds its outcome.

    Cases (``robot_team.contracts.cases``): up to ``cases_at_once`` cases are open, each with its own
    observation and brain: nothing of a case's tasks, escalations, feedback or instructions
    reaches another's; the staff board, the lost robots and the lessons of closed cases are the
    team's. Another patient's arrival beyond that waits (cue ``case_waiting``); when a case closes
    (``case_closed``), the most urgent waiting case opens. A robot runs one task at a time: a
    case whose delegation names a robot that runs another case's task waits for it
    (``waiting_for_robot``), and the open cases decide in order of urgency
    (:func:`robot_team.contracts.cases.case_key`), so that the most urgent case waiting for a robot gets it
    first. Every event the manager records carries its case (``case_id``).

    Raises
    ------
    ValueError
        If ``cases_at_once`` is negative, or not 1 without ``make_brain``.

    Notes
    -----
    Threading: ``on_*`` methods may be called from any thread (ROS callbacks); :meth:`step` and
    :meth:`run` from one worker thread only, so that a slow brain never blocks a callback. One
    lock guards the observations; the brains and the ports are called without it.
    """

    def __init__(self, brain: ManagerBrain, ports: ManagerPorts, emit: Emit, robots: Iterable[str],
                 fallback: Callable[[], ManagerBrain] | None = None, store: ManagerStore | None = None,
                 cases: int = 1, cases_at_once: int = 1, make_brain: Callable[[], ManagerBrain] | None = None,
                 lessons: bool = True):
        if int(cases_at_once) < 0 or (int(cases_at_once) != 1 and make_brain is None):
            raise ValueError(f'cases_at_once must be 1, or 0 (no limit) or more with make_brain (a brain per '
                             f'open case); got {cases_at_once!r}')
        self.brain = brain
        self.ports = ports
        self.robots = tuple(robots)
        self.cases = int(cases)
        self.cases_at_once = int(cases_at_once)
        self._make_brain = make_brain
        self.lessons = bool(lessons)
        self._spare: list[ManagerBrain] = []   # brains of closed cases, for the next ones (a fresh conversation)
        self._served_one = False               # whether ``brain`` served a case (the next gets new_case())
        self._lock = threading.RLock()
        self._book = CaseBook(self._lock)      # the open, waiting and closed cases, the team's board
        self._lessons: list[str] = []   # lessons of this run's accepted reflections (Criticize-Reflect)
        self._ctx = threading.local()   # the case the calling thread works for
        self._emit = case_emitter(emit, self._current_case)
        self._feedback = BrainFeedback(self._lock, self._emit, self._update)
        self._reflection = ReflectionStep(ports, self._emit, self._feedback, self._lock)
        self._wake = threading.Event()
        self._held = threading.Event()
        self._deciding = False   # a decision round runs (run()'s thread)
        self._announced: set[str] = set()
        self._early: dict[str, tuple] = {}   # decisions on escalations not announced yet, several cases open
        self.finished = threading.Event()
        self.outcome = ''
        self._make_fallback = fallback
        self.taken_over = False
        self._held_on = ''          # escalation ID the manager holds for ('' when not held)
        self._lost_noticed: set[str] = set()   # lost robots known from a closed task, before team/liveness said so
        self._stopped = threading.Event()
        self._store = store
        self._restored_running: set[str] = set()   # tasks running when a restarted manager took up its record
        self.restored: dict = self._restore()
        """What a restarted manager took up from its store (empty: nothing): tasks, running, escalations."""

    @property
    def closed_cases(self) -> list[ClosedCase]:
        """The cases this run closed, in order."""
        with self._lock:
            return list(self._book.closed)

    @property
    def waiting(self) -> list[PatientInfo]:
        """The patients whose case waits to open, in arrival order."""
        with self._lock:
            return [w.patient.model_copy() for w in self._book.waiting.values()]

    @property
    def _lanes(self) -> dict[str, Lane]:
        """The open cases' lanes, by patient, in the order they opened (the book's; read them under the lock)."""
        return self._book.lanes

    @property
    def _task_case(self) -> dict[str, str]:
        """Task ID -> the open case it serves (the book's; read it under the lock)."""
        return self._book.task_case

    @property
    def brains(self) -> list[ManagerBrain]:
        """Every brain the manager holds: its own, the open cases', the spare ones (each once)."""
        with self._lock:
            held = (self.brain, *(lane.brain for lane in self._lanes.values()), *self._spare)
        return list({id(b): b for b in held}.values())

    @property
    def open_cases(self) -> list[str]:
        """The open cases' patient IDs, in the order they opened."""
        with self._lock:
            return list(self._lanes)

    @property
    def at_rest(self) -> bool:
        """Whether the manager has nothing to do until a patient or a message comes.

        No case open, none waiting, no hold, no task a restarted manager took up still running.
        Read without the lock (a quick look from the clock's callback, which must never wait on a
        brain: :mod:`robot_team.contracts.clock_sync`'s jump ahead needs two such looks in a row).
        """
        return not (self._book.lanes or self._book.waiting or self._held_on or self._restored_running)

    @property
    def idle(self) -> bool:
        """Whether the manager waits for a message now, its cases open or not: no decision due or running.

        Its work only ever comes in messages (a patient, a robot's result, a person's decision, the
        supervisor's directives) and none is waiting to be decided: no decision round runs, none
        is due (or the team is held, and a release comes as a message), no task a restarted manager
        took up still running. A manager at rest is idle. Read without the lock, as
        :attr:`at_rest` (the follow clock's jump ahead: :mod:`robot_team.contracts.clock_sync`).
        """
        return not (self._deciding or self._restored_running
                    or (self._wake.is_set() and not self._held.is_set() and not self._stopped.is_set()))

    # -- cases and their observations --

    def _current_case(self) -> str:
        """The case the calling thread works for; the only open case when it works for none ('' several/none)."""
        case = getattr(self._ctx, 'case', '')
        if case:
            return case
        lane = self._book.sole()
        return lane.case_id if lane is not None else ''

    @contextmanager
    def _on(self, lane: Lane | None):
        """Record the events of the block as ``lane``'s case's."""
        previous = getattr(self._ctx, 'case', '')
        self._ctx.case = lane.case_id if lane is not None else ''
        try:
            yield lane
        finally:
            self._ctx.case = previous

    def _drop_lane(self, lane: Lane) -> None:
        """Stop serving ``lane``'s case (lock held): its brain serves a later case, its tasks are forgotten.

        The open cases that saw its HCW engaged decide again: that HCW is free (``engaged_hcws``).
        """
        if self._book.drop(lane):
            self._wake.set()
        if lane.brain is not self.brain and not self.taken_over:
            self._spare.append(lane.brain)

    def snapshot(self) -> ManagerObservation:
        """Return a copy of the observation of the first open case (none open: the latest closed one's)."""
        return self._book.snapshot()

    def _update(self, lane: Lane | None, cue: str, change: Callable[[ManagerObservation], None] | None = None) -> None:
        """Change ``lane``'s observation (None: every open case's, and the team's) and wake its brain."""
        with self._lock:
            lanes = [lane] if lane is not None else list(self._book.lanes.values())
            if lane is None and change is not None:
                change(self._book.team)
            for each in lanes:
                if change is not None:
                    change(each.obs)
                if cue:
                    each.obs.new.append(cue)
                each.dirty = True
        if change is not None:
            self._persist()
        self._wake.set()

    def _persist(self) -> None:
        """Save what the manager knows (less what is new since its last decision) for a restart."""
        if self._store is None:
            return
        with self._lock:
            state = self._book.state(self.taken_over, self._held_on, self._lessons)
        self._store.save(state)

    def _restore(self) -> dict:
        """Take up the record a previous incarnation saved (a restart); return what was taken up."""
        state = self._store.load() if self._store is not None else None
        if state is None:
            return {}
        self._held_on = state.held_on
        self._lessons = list(state.lessons)
        if state.taken_over:
            self.brain = self._make_fallback() if self._make_fallback is not None else ManagerProtocolBrain()
            self.taken_over = True
        tasks = self._book.restore(state, self._take_brain)
        for lane in self._book.lanes.values():
            self._announced |= {e.escalation_id for e in lane.obs.escalations}
        self._restored_running = {t.task_id for t in tasks if t.state == 'running'}
        running = sorted(self._restored_running)
        for lane in self._book.lanes.values():
            lane.obs.new.append(f'The manager restarted and took up its record: {len(lane.obs.tasks)} task(s)'
                                + (f", {', '.join(running)} still running (their reports come from the "
                                   f"supervisor)" if running else '') + '.')
            lane.dirty = True
        self._wake.set()
        return {'tasks': [t.task_id for t in tasks], 'running': running,
                'escalations': sorted(self._announced), 'taken_over': state.taken_over, 'held_on': state.held_on,
                'case': next(iter(self._book.lanes), ''), 'open': list(self._book.lanes),
                'waiting': list(self._book.waiting), 'closed': [c.case_id for c in self._book.closed]}

    def _take_brain(self) -> ManagerBrain:
        """Return a brain for a case that opens: ``brain`` when free, a spare one, or a new one (lock held).

        A brain that served a case before starts a fresh conversation (``new_case``).
        """
        if self.taken_over:
            return self._make_fallback() if self._make_fallback is not None else ManagerProtocolBrain()
        if not any(lane.brain is self.brain for lane in self._book.lanes.values()):
            if self._served_one:
                self.brain.new_case()
            self._served_one = True
            return self.brain
        if self._spare:
            brain = self._spare.pop()
            brain.new_case()
            return brain
        return self._make_brain()

    def on_arrival(self, patient: PatientInfo) -> None:
        """Open ``patient``'s case (a repeat of a known patient is ignored).

        With fewer than ``cases_at_once`` cases open (or no limit) it opens at once; otherwise it waits
        (``observation``, cue ``case_waiting``): another patient's cue never replaces a patient in
        progress, as at the supervisor's gate. The most urgent waiting case opens when a case closes.
        """
        with self._lock:
            known = self._book.known(patient.patient_id)
            serving = ', '.join(self._book.lanes)
            busy = 0 < self.cases_at_once <= len(self._book.lanes)
            if not known and busy:
                self._book.waiting[patient.patient_id] = WaitingPatient(patient=patient, arrived_s=self.ports.now())
        if known:
            return
        if busy:
            self._emit(EventKind.OBSERVATION, f'patient {patient.patient_id} arrived in {patient.room}: the case '
                       f'waits for {serving}', target=patient.room, cue='case_waiting', serving=serving,
                       **patient.model_dump(), case_id=patient.patient_id)
            self._persist()
            return
        self._start_case(patient, '', self.ports.now())

    def _start_case(self, patient: PatientInfo, waited: str, arrived_s: float) -> None:
        """Open ``patient``'s case (arrived at ROS time ``arrived_s``, s): a fresh observation and brain conversation.

        The staff board, the lost robots and the lessons carry over: they are the team's, not the case's.
        """
        with self._lock:
            obs = self._book.new_observation(list(self.robots), self._lessons if self.lessons else [])
            lane = Lane(patient, arrived_s, obs, self._take_brain())
            self._book.open(lane)
        with self._on(lane):
            self._emit(EventKind.OBSERVATION, f'patient {patient.patient_id} arrived in {patient.room}; HCW '
                       f'#{patient.assigned_hcw_id} assigned' + waited, target=patient.room, cue='patient_arrival',
                       **patient.model_dump())
        self._update(lane, f'Patient {patient.patient_id} arrived in {patient.room} ({patient.presentation}); '
                           f'HCW #{patient.assigned_hcw_id} assigned.', lambda o: setattr(o, 'patient', patient))

    def on_escalation(self, record: EscalationRecord) -> None:
        """Track an escalation (the manager's own, the supervisor's or a person's) in its case; a known one is no news.

        A ``patient`` escalation (a person asked to take a patient the team has not started to
        serve) is not the team's work: the open cases go on as before, so it is left out. An
        escalation goes to its case (``patient_id``; when it names none, its task's case or the
        only open case); one of a case that is not open changes nothing.
        """
        if record.kind is EscalationKind.PATIENT:
            return
        with self._lock:   # team/escalations repeats an escalation at each lifecycle step
            if record.escalation_id in self._announced:
                return
            self._announced.add(record.escalation_id)
            lane = (self._book.lanes.get(record.patient_id) if record.patient_id else
                    self._book.of_task(record.task_id) or self._book.sole())
        if lane is None:
            return

        def change(obs):
            if not any(e.escalation_id == record.escalation_id for e in obs.escalations):
                obs.escalations.append(record)
        with self._on(lane):
            self._update(lane, f'Escalation {record.escalation_id} ({record.raised_by}): {record.reason}', change)
        with self._lock:
            early = self._early.pop(record.escalation_id, None)
        if early is not None:   # its decision came first (another topic): it belongs to this case
            self.on_decision(*early)

    def on_decision(self, escalation_id: str, decision: str, hcw_id: str = '', note: str = '',
                    operator_id: str = '') -> None:
        """Record a human decision on an escalation in its case (one the manager holds for ends the hold).

        A decision on an escalation of no open case (another case's, a closed one's) is not news.
        One on an escalation not announced yet while several cases are open waits for its
        announcement (``team/escalations`` and ``team/human_decisions`` are two topics: an
        escalation raised and decided at once, e.g. by the hospital's record, may come second).
        """
        with self._lock:
            lane = self._book.with_escalation(escalation_id)
            if lane is None and escalation_id not in self._announced:
                lane = self._book.sole()   # a decision on one the manager has not seen yet (a restart)
                if lane is None and len(self._book.lanes) > 1 and self._held_on != escalation_id:
                    self._early[escalation_id] = (escalation_id, decision, hcw_id, note, operator_id)
                    return
            released = bool(self._held_on) and self._held_on == escalation_id
            if released:
                self._held_on = ''
        if lane is None and not released:
            return

        def change(obs):
            record = next((e for e in obs.escalations if e.escalation_id == escalation_id), None)
            if record is None:
                record = EscalationRecord(escalation_id=escalation_id)
                obs.escalations.append(record)
            if record.is_open:
                transition(record, LifecycleAction.RESOLVE)
            record.decision, record.hcw_id, record.note, record.decided_by = decision, hcw_id, note, operator_id
        with self._on(lane):
            self._emit(EventKind.OBSERVATION, f'human decision on {escalation_id}: {decision}', target=escalation_id,
                       cue='human_decision', decision=decision, hcw_id=hcw_id, operator_id=operator_id)
            if released:
                self._emit(EventKind.OBSERVATION, f'manager resumes: {escalation_id} was decided', target=escalation_id,
                           cue='hold_released', escalation_id=escalation_id, decision=decision)
            if lane is not None:
                self._update(lane, f'Human decision on {escalation_id}: {decision} {hcw_id}'.strip(), change)
            else:
                self._wake.set()

    def on_staff(self, staff: list[StaffInfo]) -> None:
        """Know the staff directory with availability (``team/staff``); not news by itself (no decision is asked).

        A repeated HCW ID keeps its first entry.
        """
        unique = list({s.hcw_id: s for s in reversed(staff)}.values())[::-1]
        with self._lock:
            for obs in self._book.observations():
                obs.staff = [s.model_copy() for s in unique]
                obs.staff_ids = [s.hcw_id for s in unique]

    def on_instruction(self, instruction: SupervisorInstruction) -> None:
        """Record a person's instruction as a flagged observation (advisory: the gate and guards still apply).

        It goes to the case of its task (every open case when it names none of theirs).
        """
        lane = self._book.of_task(instruction.task_id) if instruction.task_id else None
        with self._lock:
            lanes = [lane] if lane is not None else list(self._book.lanes.values())
            if all(any(i.instruction_id == instruction.instruction_id for i in each.obs.instructions)
                   for each in lanes):
                return
        for each in lanes:
            with self._on(each):
                self._emit(EventKind.OBSERVATION, f'instruction {instruction.instruction_id} from '
                           f'{instruction.operator_id}', target=instruction.task_id, reason='advisory: a human '
                           'instruction never bypasses the gate or the guards', cue='instruction', flagged=True,
                           **instruction.model_dump())
                self._update(each, f'Instruction {instruction.instruction_id} from human supervisor '
                                   f'{instruction.operator_id} (advisory): {instruction.text!r}',
                             lambda o: o.instructions.append(instruction))

    def on_hold(self, active: bool, escalation_ids: list[str], reason: str) -> None:
        """Pause (team held by a person or a safe default) or resume deciding."""
        if active == self._held.is_set():
            return
        if active:
            self._held.set()
            self._emit(EventKind.OBSERVATION, f"team held by {', '.join(escalation_ids)}: the manager pauses",
                       reason=reason, cue='team_hold', active=True, escalation_ids=list(escalation_ids))
            return
        self._held.clear()
        self._emit(EventKind.OBSERVATION, 'team hold released: the manager resumes', cue='team_hold', active=False)
        self._update(None, 'The team hold was released.')

    @property
    def held(self) -> bool:
        """Whether the team is held: the brain is not asked to decide."""
        return self._held.is_set()

    def on_task_closed(self, report: TaskReportModel) -> None:
        """Take a report the supervisor closed a task with (``team/task_reports``): a lost robot's, a late one's.

        Only reports with a typed issue code (``robot_lost``, ``task_deadline``) are news here, and reports on tasks
        that ran when a restarted manager took up its record (their ExecuteTask results went to the
        incarnation that died): every other report reaches the manager as its robot's ExecuteTask
        result. A task the manager does not know or that already ended changes nothing, but the
        cases waiting for its robot are woken (every report reaches this topic: one on a task the
        manager never heard of, e.g. from before a restart, frees the robot too); those waiting for
        a task whose ExecuteTask result is still to come are woken by that result (the robot holds
        the task until then).
        """
        news = report.issue_code is not IssueCode.NONE or report.task_id in self._restored_running
        lane = self._book.of_task(report.task_id)
        with self._lock:
            record = next((t for t in lane.obs.tasks if t.task_id == report.task_id), None) if lane else None
            record = record.model_copy() if record is not None else None
        if news or record is None or record.state != 'running':   # else its ExecuteTask result wakes them
            self._robot_free(report.robot)
        if not news:
            return
        with self._lock:
            if report.issue_code is IssueCode.ROBOT_LOST and report.robot not in self._book.team.lost_robots:
                # lost until team/liveness says it is back (that notice may come before or after this report)
                for obs in self._book.observations():
                    if report.robot not in obs.lost_robots:
                        obs.lost_robots.append(report.robot)
                self._lost_noticed.add(report.robot)
        if record is not None:
            self._task_done(record, report, '')

    def on_liveness(self, node: str, state: str, restarted: bool, task_id: str) -> None:
        """Take the supervisor's notice that team node ``node`` was lost (``state`` 'lost') or is back ('back')."""
        with self._lock:
            lost = node in self._book.team.lost_robots
            if (state == 'lost') == lost and not (state == 'lost' and node in self._lost_noticed):
                return   # team/liveness repeats nothing new to the brain
            self._lost_noticed.discard(node)
        if state == 'lost':
            cue = f'{node} was lost' + (f' while it ran {task_id}; the supervisor closed {task_id} as a failure'
                                        if task_id else '') + '.'
        else:
            cue = f'{node} is back ({"restarted" if restarted else "reconnected"}) and can take tasks again.'
        with self._on(self._book.of_task(task_id) if task_id else None):
            self._emit(EventKind.OBSERVATION, cue, target=node, cue='robot_lost' if state == 'lost' else 'robot_back',
                       node=node, restarted=restarted, task_id=task_id)

        def change(obs):
            if state == 'lost' and node not in obs.lost_robots:
                obs.lost_robots.append(node)
            elif state == 'back' and node in obs.lost_robots:
                obs.lost_robots.remove(node)
        self._update(None, cue, change)

    def _task_done(self, record: TaskRecord, report: TaskReportModel | None, error: str) -> None:
        """Check a finished task's report against its delegation and evidence, judge it, record it.

        A task that already ended (the supervisor closed it: its robot was lost) keeps that end; a
        later result of it is recorded as an observation and not judged again. The cases waiting
        for its robot are woken.
        """
        lane = self._book.of_task(record.task_id)
        if lane is None:
            return
        with self._on(lane):
            self._judge(lane, record, report, error)
        self._robot_free(record.robot)

    def _robot_free(self, robot: str) -> None:
        """Wake the cases waiting for ``robot`` or for any robot of its role: its task ended."""
        if self._book.robot_free(robot):
            self._wake.set()

    def _judge(self, lane: Lane, record: TaskRecord, report: TaskReportModel | None, error: str) -> None:
        with self._lock:
            current = next((t for t in lane.obs.tasks if t.task_id == record.task_id), None)
            ended = current is not None and current.state != 'running'
        if ended and current.issue_code is IssueCode.NONE:
            return   # the same report came first from the supervisor (a restarted manager's running task)
        if ended:
            self._emit(EventKind.OBSERVATION, f'late result of {record.task_id} ignored: it already ended',
                       target=record.task_id, reason=f'{record.task_id} ended as {current.state} ({current.issue})',
                       cue='late_result', task_id=record.task_id,
                       reported_status=report.status.value if report is not None else '', error=error)
            return
        if report is not None:
            problem = report_problem(record, report)
            if problem:
                self._emit(EventKind.REPORT_REJECTED, f'manager rejected the report on {record.task_id}',
                           target=record.task_id, reason=problem, task_id=record.task_id,
                           raw={'status': report.status.value, 'issue': report.issue, 'robot': report.robot})
                report, error = None, problem

        def change(obs):
            rec = next(t for t in obs.tasks if t.task_id == record.task_id)
            if rec.state != 'running':
                return   # ended meanwhile by the other path (a lost robot's closure, its late result)
            record_result(rec, report, error)
            brain = lane.brain
            status, why = brain.judge(rec)
            self._emit(EventKind.JUDGMENT, f'manager judged {rec.task_id} a {status.value}', target=rec.task_id,
                       reason=why, task_id=rec.task_id, task_type=rec.task_type.value, robot=rec.robot,
                       reported_status=rec.state, judged_status=status.value, issue=rec.issue,
                       source=self._source(brain))
        self._update(lane, f'{record.robot} finished {record.task_id}', change)

    # -- decisions (one worker thread) --

    def run(self, stop: threading.Event, poll_s: float = 0.05) -> None:
        """Decide whenever an observation changes, until ``stop`` is set (or :meth:`stop`) or the run ends."""
        while not stop.is_set() and not self._stopped.is_set() and not self.finished.is_set():
            if self._held.is_set():   # the team is held: decide again once it is released
                stop.wait(poll_s)
            elif self._wake.wait(poll_s) and not stop.is_set():
                self._deciding = True
                try:
                    self.step()
                finally:
                    self._deciding = False

    def stop(self) -> None:
        """End :meth:`run` with the run: no further decision, the brains' requests cancelled (any thread)."""
        self._stopped.set()
        self._wake.set()
        with self._lock:
            brains = {id(b): b for b in (self.brain, *(lane.brain for lane in self._book.lanes.values()))}
        for brain in brains.values():
            brain.cancel()

    def step(self) -> bool:
        """Run one decision round for each open case whose observation changed, most urgent first.

        Nothing runs while the team is held or the manager holds for a person's decision.
        Returns whether a round ran.
        """
        if not self._wake.is_set() or self._held.is_set() or self._stopped.is_set():
            return False
        self._wake.clear()
        with self._lock:
            if self._held_on:   # a human decides first (the supervisor's hold)
                return False
            lanes = sorted((lane for lane in self._book.lanes.values() if lane.dirty), key=Lane.key)
        ran = False
        for lane in lanes:
            with self._on(lane):
                ran = self._step(lane) or ran
            if self.finished.is_set() or self._stopped.is_set():
                break
        return ran

    def _step(self, lane: Lane) -> bool:
        """One decision round of ``lane``'s case."""
        with self._lock:
            if self._held_on or lane.case_id not in self._book.lanes:
                return False
            lane.dirty = False
            self._feedback.new_round(lane)
            lane.obs.engaged_hcws = self._book.engaged_elsewhere(lane)
            snapshot = lane.obs.model_copy(deep=True)
            lane.obs.new.clear()
            lane.obs.feedback.clear()
            brain = lane.brain
        try:
            actions = brain.decide(snapshot)
        except Exception as exc:  # noqa: BLE001 - a brain failure is recorded; the supervisor's deadlines still run
            _log.error('manager brain failed:\n%s', traceback.format_exc())
            self._emit(EventKind.BRAIN_ERROR, 'manager brain failed to decide', reason=f'{type(exc).__name__}: {exc}',
                       error=str(exc), source=self._source(brain))
            return True
        late = ('the protocol brain took over meanwhile' if brain is not lane.brain else
                'the episode ended' if self._stopped.is_set() else
                f'the supervisor holds the manager until a human decides on {self._held_on}' if self._held_on else '')
        if actions and late:
            self._emit(EventKind.OBSERVATION, f'manager discarded {len(actions)} late action(s) of '
                       f'{type(brain).__name__}', reason=late, cue='discarded', source=self._source(brain),
                       actions=[a.model_dump(mode='json') for a in actions])
            return True
        source = self._source(brain)
        for action in actions:
            try:
                self._execute(lane, action, source)
            except ToolError as exc:
                self._emit(EventKind.DELEGATION_REFUSED, f'{action.action} failed', reason=str(exc),
                           action=action.model_dump(mode='json'), source=source)
                self._feedback.tell(lane, FeedbackKind.ACTION_FAILED, f'{action.action} failed: {exc}')
            if self.finished.is_set() or lane.case_id not in self._book.lanes:
                break
        return True

    # -- the supervisor's safe defaults (any thread) --

    def take_over(self, escalation_id: str = '', reason: str = '') -> bool:
        """Hand the manager's role to the protocol brain for the rest of the run; return whether it changed.

        Every open case's brain is replaced; their requests in flight are cancelled and a decision
        still being made is discarded. Recorded as ``takeover``; a second call (or a manager already
        on its fallback) changes nothing and records why.
        """
        with self._lock:
            if self.taken_over:
                already = 'the protocol brain already took over'
            elif self.brain.decision_source != DecisionSource.LLM.value:
                already = f'the manager already decides with {type(self.brain).__name__} ({self.brain.decision_source})'
            else:
                already = ''
            if not already:
                old = self.brain
                olds = [old, *(lane.brain for lane in self._book.lanes.values() if lane.brain is not old),
                        *self._spare]
                self.taken_over = True
                self.brain = self._take_brain()
                for lane in self._book.lanes.values():
                    lane.brain = self.brain if lane.brain is old else self._take_brain()
                self._spare = []
                self._held_on = ''
        if already:
            self._emit(EventKind.OBSERVATION, 'takeover not needed', target=escalation_id, reason=already,
                       cue='takeover', escalation_id=escalation_id)
            return False
        for brain in olds:
            brain.cancel()
        self._emit(EventKind.TAKEOVER, f'the protocol brain takes over from {type(old).__name__} for the rest of '
                   f'the episode', target=Role.MANAGER.value, reason=reason, escalation_id=escalation_id,
                   role=Role.MANAGER.value, previous=type(old).__name__, brain=type(self.brain).__name__,
                   source=DecisionSource.FALLBACK.value)
        self._persist()
        self._update(None, f"The supervisor handed the manager's role to the protocol brain "
                           f"({reason or escalation_id}).")
        return True

    def hold(self, escalation_id: str, reason: str = '') -> None:
        """Stop deciding until a human decides on ``escalation_id`` (the supervisor's hold; any thread).

        A decision a brain is making meanwhile is discarded (recorded).
        """
        with self._lock:
            self._held_on = escalation_id
        self._persist()
        self._emit(EventKind.OBSERVATION, f'manager holds until a human decides on {escalation_id}',
                   target=escalation_id, reason=reason, cue='hold', escalation_id=escalation_id)

    def _source(self, brain: ManagerBrain) -> str:
        """Return who decides through ``brain``: the fallback after a takeover, else the brain's own source."""
        if self.taken_over:
            with self._lock:
                if brain is self.brain or any(lane.brain is brain for lane in self._book.lanes.values()):
                    return DecisionSource.FALLBACK.value
        return brain.decision_source

    def _execute(self, lane: Lane, action, source: str) -> None:
        if isinstance(action, Delegate):
            self._delegate(lane, action, source)
        elif isinstance(action, Escalate):
            self._escalate(lane, action, source)
        elif isinstance(action, Reflect):
            self._reflect(lane, action, source)
        elif isinstance(action, Finish):
            self._finish(lane, action, source)

    def _finish(self, lane: Lane, act: Finish, source: str) -> None:
        """Close ``lane``'s case; open the most urgent waiting ones, or end the run (see ``cases``).

        A brain that finishes a case without its reflection recorded while the run goes on (a
        case is open or waits, or more are to come) leaves the case open at the supervisor's gate:
        the protocol brain takes over to write it (``takeover``) instead.
        """
        with self._lock:
            reflected = lane.obs.reflection_done
            closed = len(self._book.closed) + 1
            others = bool(self._book.waiting) or len(self._book.lanes) > 1
        if not reflected and (others or self.cases == 0 or closed < self.cases) and not self.taken_over:
            self.take_over(reason=f'the manager brain ended case {lane.case_id} without its reflection '
                                  f'({act.reason}); the run goes on')
            return
        self._emit(EventKind.CASE_CLOSED, f'case {lane.case_id} finished: {act.outcome}', reason=act.reason,
                   outcome=act.outcome, decided_by=source)
        starts = []
        with self._lock:
            book = self._book
            book.closed.append(ClosedCase(case_id=lane.case_id, outcome=act.outcome))
            self._drop_lane(lane)
            book.last_obs = lane.obs
            while book.waiting and (not self.cases_at_once or len(book.lanes) + len(starts) < self.cases_at_once):
                starts.append(book.next_waiting())
            ends = (not starts and not book.lanes and not book.waiting and self.cases > 0
                    and len(book.closed) >= self.cases)
            outcomes = [c.outcome for c in book.closed]
        for entry in starts:
            self._start_case(entry.patient, f' (waited {self.ports.now() - entry.arrived_s:.0f} s for '
                             f'{lane.case_id})', entry.arrived_s)
        self._persist()
        if not ends:
            return
        self.outcome = run_outcome(outcomes)
        self._emit(EventKind.EPISODE_FINISHED, f'episode finished: {self.outcome}', reason=act.reason,
                   outcome=self.outcome, source=source, cases=len(outcomes), case_id='')
        self.finished.set()

    def _nearest(self, act: Delegate, free: list[str]) -> str:
        """Return the robot of ``free`` (idle robots of ``act``'s role, fleet order) that goes to the HCW first.

        A navigation goes to the idle robot nearest its HCW (the shortest planned path,
        :meth:`ManagerPorts.path_lengths`); ties, robots without a path and other tasks go to the
        first in fleet order. The choice is recorded (``dispatch``).
        """
        if len(free) == 1 or act.task_type is not TaskType.NAVIGATION or not act.hcw_id:
            return free[0]
        try:
            lengths = self.ports.path_lengths(list(free), act.hcw_id)
        except ToolError as exc:
            lengths, why = {}, f'no path lengths ({exc}): the first idle robot in fleet order'
        else:
            why = 'the shortest planned path to the HCW' if lengths else \
                'no path to the HCW located: the first idle robot in fleet order'
        chosen = min(free, key=lambda r: (lengths.get(r, math.inf), free.index(r)))
        self._emit(EventKind.OBSERVATION, f'{chosen} goes to HCW #{act.hcw_id} ({why})', target=chosen, reason=why,
                   cue='dispatch', robot=chosen, candidates=list(free), hcw_id=act.hcw_id,
                   path_lengths_m={r: round(v, 3) for r, v in lengths.items()})
        return chosen

    def _delegate(self, lane: Lane, act: Delegate, source: str) -> None:
        self._emit(EventKind.DELEGATION_REQUESTED, f'manager asks to delegate {act.task_type.value} to {act.robot}',
                   target=act.robot, reason=act.reason, source=source,
                   **act.model_dump(mode='json', exclude={'reason'}))
        found = prefetched_results(act)
        if found:   # role misalignment: the manager did (part of) the robot's work
            self._emit(EventKind.WORKFLOW_VIOLATION, f'manager put results into a {act.task_type.value} '
                       f'delegation to {act.robot}', target=act.robot, reason='role misalignment',
                       who=Role.MANAGER.value, found=found, delegation=act.model_dump(mode='json'), source=source)
            act = strip_prefetched(act)
            self._feedback.tell(lane, FeedbackKind.ROLE_MISALIGNMENT, 'Role misalignment: the delegation carried '
                                'results (' + '; '.join(found) + '); they were removed: the robot does its own work.')
        candidates = role_robots(act.robot, self.robots)
        if not candidates:
            why = f"no robot '{act.robot}' in the team: expected one of {', '.join(self.robots)}"
            self._emit(EventKind.DELEGATION_REFUSED, f'cannot delegate to {act.robot}', target=act.robot,
                       reason=why, task_type=act.task_type.value, robot=act.robot, source=source)
            self._feedback.tell(lane, FeedbackKind.DELEGATION_REFUSED, why)
            return
        with self._lock:
            lost = all_lost_refusal(act.robot, self.robots, lane.obs.lost_robots)
            busy = [self._book.busy_elsewhere(lane, r) for r in candidates]
        if lost:
            self._emit(EventKind.DELEGATION_REFUSED, f'cannot delegate to {act.robot} now', target=act.robot,
                       reason=lost, task_type=act.task_type.value, robot=act.robot, source=source)
            self._feedback.tell(lane, FeedbackKind.DELEGATION_REFUSED, f'Delegation refused: {lost}')
            return
        free = [r for r, task in zip(candidates, busy) if not task and not lost_robot_refusal(r, lane.obs.lost_robots)]
        if not free:
            self._wait_for_robot(lane, act.robot, next(task for task in busy if task))
            return
        act = act.model_copy(update={'robot': self._nearest(act, free)})
        auth = self.ports.authorize(act.task_type.value, act.robot, act.reason, act.hcw_id, case_id=lane.case_id)
        if not auth.approved:
            # The supervisor records the refusal itself; the manager records what it learnt.
            self._emit(EventKind.OBSERVATION, f'supervisor refused {act.task_type.value} for {act.robot}',
                       target=act.robot, reason=auth.explanation, cue='refusal', rule=auth.rule.value,
                       task_type=act.task_type.value, robot=act.robot)
            if auth.rule is WorkflowRule.ROBOT_BUSY:   # a task it has not heard of yet: wait as for one it knows
                self._wait_for_robot(lane, act.robot, '')
                return
            self._feedback.tell(lane, FeedbackKind.DELEGATION_REFUSED, f'Delegation refused: {auth.explanation}',
                                auth.rule.value)
            if auth.rule is WorkflowRule.CASE:
                self._follow_gate(lane, auth.case_id)
            return
        # the task is about the HCW the gate names (the escorted one for the steps after navigation)
        act = act.model_copy(update={'hcw_id': auth.hcw_id or act.hcw_id})
        record = TaskRecord(task_id=auth.task_id, task_type=act.task_type, robot=act.robot, hcw_id=act.hcw_id,
                            room=act.room, delegated_s=self.ports.now())

        def add(obs):
            obs.tasks.append(record)
            if act.handles_task_id:
                obs.handled_failures.append(act.handles_task_id)
        with self._lock:
            self._book.track(record, lane)
        self._update(lane, '', add)
        if act.handles_task_id:
            self._emit(EventKind.ALTERNATIVE_PROPOSED, f'manager handles {act.handles_task_id} with {auth.task_id}',
                       target=act.handles_task_id, reason=act.reason, task_id=act.handles_task_id,
                       new_task_id=auth.task_id, hcw_id=act.hcw_id, source=source)
        task = TaskSpec(task_id=auth.task_id, task_type=act.task_type, room=act.room, hcw_id=act.hcw_id,
                        instructions=act.instructions, context=act.context)
        self._emit(EventKind.DELEGATION, f'manager delegated {auth.task_id} ({act.task_type.value}) to {act.robot}',
                   target=act.robot, reason=act.reason, task_id=auth.task_id, task_type=act.task_type.value,
                   robot=act.robot, hcw_id=act.hcw_id, room=act.room, instructions=act.instructions,
                   handles_task_id=act.handles_task_id, source=source)
        try:
            self.ports.send_task(act.robot, task, lambda report, error: self._task_done(record, report, error))
        except ToolError as exc:   # the robot cannot be reached: the task ends here, as a failure
            self._task_done(record, None, f'{act.robot} could not be reached: {exc}')
            raise

    def _wait_for_robot(self, lane: Lane, robot: str, busy_with: str) -> None:
        """Let ``lane``'s case wait for ``robot``, which runs another case's task: it decides again once it is free.

        Recorded once per wait (``waiting_for_robot``); its brain is told (typed feedback).
        """
        with self._lock:
            first = lane.parked != robot
            lane.parked = robot
            lane.dirty = False
            self._feedback.robot_busy(lane, robot, busy_with)
        if first:
            self._emit(EventKind.OBSERVATION, f'case {lane.case_id} waits for {robot}', target=robot,
                       reason=f'{robot} runs {busy_with or "a task of another case"}: one task at a time',
                       cue='waiting_for_robot', robot=robot, busy_with=busy_with)
        with self._lock:   # freed meanwhile (its report came while this case decided)
            freed = bool(busy_with) and any(not self._book.busy_elsewhere(lane, r)
                                            for r in role_robots(robot, self.robots))
            if freed and lane.parked == robot:
                lane.parked, lane.dirty = '', True
        if freed:
            self._wake.set()

    def _follow_gate(self, lane: Lane, case_id: str) -> None:
        """Serve the case the gate serves when it is one of the waiting ones and ``lane``'s case has no task yet.

        Both sides open the most urgent waiting case (:func:`robot_team.contracts.cases.next_case`); they
        differ only when an arrival reached one of them between a case's close and its choice.
        ``lane``'s case goes back to waiting (recorded as ``case_waiting``).
        """
        with self._lock:
            entry = self._book.waiting.get(case_id)
            if entry is None or lane.obs.tasks or lane.obs.patient is None or lane.case_id not in self._book.lanes:
                return
            current = WaitingPatient(patient=lane.obs.patient, arrived_s=lane.arrived_s)
            del self._book.waiting[case_id]
            self._drop_lane(lane)
            self._book.waiting[current.patient.patient_id] = current
        self._emit(EventKind.OBSERVATION, f'the gate serves case {case_id}: case {current.patient.patient_id} waits',
                   target=case_id, cue='case_waiting', serving=case_id, case_id=current.patient.patient_id)
        self._start_case(entry.patient, ' (the case the gate serves)', entry.arrived_s)

    def _escalate(self, lane: Lane, act: Escalate, source: str) -> None:
        self._emit(EventKind.ESCALATION_REQUESTED, f'manager escalates {act.task_id}', target=act.task_id,
                   reason=act.reason, task_id=act.task_id, options=act.options, source=source)
        answer = self.ports.request_escalation(act.task_id, act.reason, list(act.options))
        if not answer.accepted:
            self._feedback.tell(lane, FeedbackKind.ESCALATION_REFUSED, f'Escalation refused: {answer.message}')
            return

        def change(obs):
            obs.handled_failures.append(act.task_id)
            if not any(e.escalation_id == answer.escalation_id for e in obs.escalations):
                obs.escalations.append(EscalationRecord(escalation_id=answer.escalation_id, task_id=act.task_id,
                                                        raised_by=Role.MANAGER.value, reason=act.reason))
        with self._lock:
            self._announced.add(answer.escalation_id)
        self._update(lane, '', change)

    def _reflect(self, lane: Lane, act: Reflect, source: str) -> None:
        """Carry out a ``reflect`` action (:class:`~robot_team.core.manager_reflection.ReflectionStep`).

        An accepted reflection's lessons are kept for the run's next cases and its case is told.
        """
        if not self._reflection.submit(lane, act, source):
            return
        with self._lock:   # kept for the run's next cases (the newest MAX_LESSONS, each once)
            self._lessons = keep_lessons(self._lessons, act.reflection.lessons_learned)
        self._update(lane, 'Reflection accepted.', lambda o: setattr(o, 'reflection_done', True))
