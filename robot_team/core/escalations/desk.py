"""The escalation desk: an escalation's lifecycle around the supervisor core, and the team hold.

See :mod:`robot_team.core.escalations` for the whole picture. Every change of an escalation's
state goes through :func:`robot_team.contracts.escalation_model.transition`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Literal, Protocol

from pydantic import BaseModel

from robot_team.core.escalations.availability import StaffCheck
from robot_team.core.escalations.hold import TeamHold
from robot_team.core.escalations.lifecycle import (
    HOLD_OPTIONS, RAISE_KINDS, RESOLVE_DECISIONS, Answer, Emit, EscalationStep, HoldState, InstructionRecord,
    Refusal, id_number)
from robot_team.core.escalations.policy import EscalationPolicy
from robot_team.core.escalations.store import EscalationStore
from robot_team.core.supervisor_state import SupervisorState
from robot_team.contracts.clock_sync import BUSY, NOTHING_SCHEDULED
from robot_team.contracts.escalation_model import (
    EscalationKind, EscalationRecord, LifecycleAction, LifecycleState, Severity, transition)
from robot_team.contracts.events import EventKind
from robot_team.contracts.names import NO_ROBOT, SUPERVISOR, RobotId, Role
from robot_team.contracts.reports import OPERATIONAL_TASKS, TaskReportModel
from robot_team.rules.workflow.state import Authorization, WorkflowRule


RAW_STATE_CHARS = 2000
"""Most characters of an unusable stored state kept in its ``input_error`` event."""


class DeskPorts(Protocol):
    """The ROS side of the desk (the supervisor node)."""

    def publish_escalation(self, record: EscalationRecord, now_s: float) -> None:
        """Publish an escalation's current state (``team/escalations``)."""

    def publish_instruction(self, instruction: InstructionRecord) -> None:
        """Publish an accepted instruction (``team/instructions``)."""

    def publish_hold(self, hold: HoldState) -> None:
        """Publish the team hold (``team/hold``)."""

    def stop_robots(self, reason: str, robot: RobotId = NO_ROBOT) -> None:
        """Cancel every goal of every robot (or only ``robot``'s): ``execute_task`` and Nav2 actions."""


class CaseEnd(BaseModel):
    """What :meth:`EscalationDesk.close_case` did (mapped onto ``robot_team/srv/CloseCase``'s response).

    ``result``: ``closed`` (an ``abort`` decided now), ``closes_when_opened`` (the case waits: closed
    when its turn comes), ``already_closed``, ``no_case`` or ``refused`` (bad request).
    """

    accepted: bool
    result: Literal['closed', 'closes_when_opened', 'already_closed', 'no_case', 'refused']
    message: str
    escalation_id: str = ''


RECORD_ENDS = ('cancelled', 'finished')
"""What the hospital's record may say of a case (:meth:`EscalationDesk.close_case`'s ``status``)."""


class EscalationDesk:
    """Run escalations' lifecycle around the supervisor core; engage and release the team hold.

    Parameters
    ----------
    core
        The supervisor core (its policy opens and resolves escalations for the workflow). The
        desk sets ``core.on_escalation_opened`` and must receive the core's published
        escalations through :meth:`announce` (the node wires ``publish_escalation`` to it).
    policy
        Who may decide, deadlines, re-notification, safe default.
    store
        Where every step is persisted.
    emit
        Event sink.
    ports
        The ROS side (:class:`DeskPorts`).
    staff
        Directory and availability for ``reassign`` checks (default: no checks).
    wall
        Returns wall-clock time, s since the Unix epoch.

    Notes
    -----
    Not thread-safe on its own: the supervisor node calls it from one mutually exclusive
    callback group (as it calls the core). :meth:`records` may be read from any thread.
    """

    def __init__(self, core, policy: EscalationPolicy, store: EscalationStore, emit: Emit, ports: DeskPorts,
                 staff: StaffCheck | None = None, wall: Callable[[], float] = time.time):
        self.core = core
        self.policy = policy
        self.store = store
        self.staff = staff or StaffCheck()
        self._emit = emit
        self._ports = ports
        self._wall = wall
        self._records: dict[str, EscalationRecord] = {}
        self._records_lock = threading.Lock()
        self._opening: dict = {}     # what the next opened escalation is (kind, severity, hold, proposal)
        self._instructions = sum(1 for i in store.instructions() if i.accepted)
        self._saved_state = ''   # the core's state as last stored (save_state writes only a change)
        self.hold = TeamHold(emit, ports.stop_robots, ports.publish_hold)
        self._pauses: set[str] = set()       # why the deadlines are paused (see pause_deadlines)
        self._paused_since: float | None = None
        self._paused_for: list[str] = []     # every why of the overlapping pauses, in order (for the record)
        self._pauses_lock = threading.Lock()
        core.on_escalation_opened = self._opened
        core.on_hold_team = self.hold_on
        core.on_task_closed = self._stop_closed_task
        core.on_takeover = self.covered_by_takeover
        core.on_unserved_patient = self.ask_for_patient
        core.escalation_settled = self._settled
        core.on_case_opened = self._case_opened
        self._ended_waiting: dict[str, tuple[str, str, str]] = {}   # patient -> (status, reference, by)

    # -- reading --

    def records(self) -> list[EscalationRecord]:
        """Return a copy of every escalation's record, in ID order."""
        with self._records_lock:
            return [r.model_copy(deep=True) for r in sorted(self._records.values(),
                                                            key=lambda r: id_number(r.escalation_id))]

    @property
    def at_rest(self) -> bool:
        """Whether the supervisor has nothing to do until a message or a new case comes.

        No case kept (open, or closed with an escalation open), no patient waiting for a place,
        no escalation open, the team not held. Read without the records' lock (a quick look from
        the clock's callback, :mod:`robot_team.contracts.clock_sync`'s jump ahead, which needs two such looks
        in a row before it jumps).
        """
        return not (self.core.cases_kept or self.core.waiting or self.hold.active
                    or any(record.is_open for record in list(self._records.values())))

    def next_event_s(self, now_s: float) -> float:
        """Return when the supervisor next has work of its own, in ROS time (s), for the follow clock.

        :data:`~robot_team.contracts.clock_sync.NOTHING_SCHEDULED` when it is :attr:`at_rest`;
        :data:`~robot_team.contracts.clock_sync.BUSY` while a pause holds the deadlines (it ends on
        wall time: :meth:`pause_deadlines`); else the earliest time :meth:`tick` would act on by
        itself: a case's deadline (not while the team is held: they wait for it), a patient's
        onboarding limit (:meth:`SupervisorCore.next_scheduled_s
        <robot_team.core.supervisor.SupervisorCore.next_scheduled_s>`), an open escalation's
        expiry or its next re-notification. Everything else the supervisor does answers a message.
        Read without the records' lock, as :attr:`at_rest`.
        """
        if self.at_rest:
            return NOTHING_SCHEDULED
        if self.deadlines_paused:
            return BUSY
        times = [self.core.next_scheduled_s(now_s, deadlines=not self.hold.active)]
        for record in list(self._records.values()):
            if not record.is_open:
                continue
            if record.due_s is not None:
                times.append(record.due_s)
            if record.state is LifecycleState.OPEN:
                times.append(record.last_notified_s + self.policy.renotify_s)
        return min(times)

    def record(self, escalation_id: str) -> EscalationRecord | None:
        """Return a copy of one escalation's record, if any."""
        with self._records_lock:
            record = self._records.get(escalation_id)
            return record.model_copy(deep=True) if record else None

    def _settled(self, escalation_id: str) -> bool:
        """Whether this desk closed ``escalation_id`` (resolved or expired): the core's hook ``escalation_settled``."""
        with self._records_lock:
            record = self._records.get(escalation_id)
            return record is not None and not record.is_open

    # -- opening (hook of the core, then its publish callback) --

    def _opened(self, esc: EscalationRecord) -> dict:
        """Create the lifecycle record of an escalation the core opened; return its fields for the event."""
        opening, self._opening = self._opening, {}
        raised_by = esc.raised_by
        if 'kind' in opening:
            kind, severity = opening['kind'], opening['severity']
        elif raised_by == Role.MANAGER.value:
            kind, severity = EscalationKind.ISSUE, self.policy.severity.manager
        else:
            kind, severity = EscalationKind.ISSUE, self.policy.severity.supervisor
        proposal = opening.get('proposal', esc.options[0] if raised_by == Role.MANAGER.value and esc.options
                               else '')
        holds = kind is EscalationKind.HOLD
        record = EscalationRecord(
            escalation_id=esc.escalation_id, task_id=esc.task_id, task_type=esc.task_type, raised_by=raised_by,
            reason=esc.reason, options=list(esc.options), kind=kind, severity=severity, proposal=proposal,
            opened_s=esc.opened_s, opened_wall=self._wall(), last_notified_s=esc.opened_s, holds_team=holds,
            due_s=None if holds else esc.opened_s + self.policy.deadlines_s[severity], patient_id=esc.patient_id)
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='opened', actor=raised_by,
                                          sim_s=esc.opened_s, wall_s=record.opened_wall,
                                          data={'kind': kind.value, 'severity': severity.value}))
        return _lifecycle_fields(record)

    def ask_for_patient(self, *, patient_id: str, room: str, esi_level: int, assigned_hcw_id: str,
                        required_specialty: str, serving: str, now_s: float, waited_s: float = 0.0) -> str:
        """Ask a person to take a patient the team has not started to serve; return the escalation's ID.

        Opens a ``patient`` escalation (``patient-<n>``, raised by the supervisor, about no task)
        and announces it on ``team/escalations``: the team serves ``serving`` and never replaces
        that patient, and ``patient_id`` (in ``room``, ESI ``esi_level``, ``assigned_hcw_id``
        assigned) has waited ``waited_s`` (s) for their case to start, so needs a person (their
        case keeps its place in the team's queue). It is outside the workflow: it meets no deadline of the team's,
        holds nothing and never expires; it is announced again every ``renotify_s`` until a person
        acknowledges it (that person has the patient). Severity ``critical`` for ESI 1 and 2 (the
        high-acuity levels of the ESI Implementation Handbook, AHRQ 2020), else the policy's
        supervisor severity. The same patient again (a latched arrival after a restart) is the
        same escalation.
        """
        with self._records_lock:
            asked = [r for r in self._records.values() if r.kind is EscalationKind.PATIENT]
        for record in asked:
            if record.patient_id == patient_id:
                return record.escalation_id
        severity = Severity.CRITICAL if esi_level in (1, 2) else self.policy.severity.supervisor
        reason = (f'patient {patient_id} in {room or "an unnamed room"} (ESI {esi_level or "unknown"}; '
                  f'{required_specialty or "HCW"} #{assigned_hcw_id or "?"} assigned) has waited {waited_s:.0f} s '
                  f'while the team serves {serving}: a person must take {patient_id}')
        record = EscalationRecord(
            escalation_id=f'patient-{len(asked) + 1}', raised_by=SUPERVISOR, reason=reason,
            kind=EscalationKind.PATIENT, severity=severity, opened_s=now_s, opened_wall=self._wall(),
            last_notified_s=now_s, due_s=None, patient_id=patient_id)
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='opened', actor=SUPERVISOR,
                                          sim_s=now_s, wall_s=record.opened_wall,
                                          data={'kind': record.kind.value, 'severity': severity.value,
                                                'patient_id': patient_id}))
        self._emit(EventKind.ESCALATION, f'{record.escalation_id} on patient {patient_id} raised by {SUPERVISOR}',
                   target=room, reason=reason, escalation_id=record.escalation_id, task_id='', task_type='',
                   raised_by=SUPERVISOR, options=[], **_lifecycle_fields(record), patient_id=patient_id, room=room,
                   esi_level=esi_level)
        self._ports.publish_escalation(record, now_s)
        return record.escalation_id

    def announce(self, esc: EscalationRecord) -> None:
        """Publish an escalation the core announced (its lifecycle record)."""
        record = self.record(esc.escalation_id)
        if record is not None:
            self._ports.publish_escalation(record, esc.opened_s)

    # -- the workflow gate while held --

    def authorize(self, task_type: str, robot: RobotId, reason: str, requested_by: str, now_s: float, *,
                  hcw_id: str = '', case_id: str = '') -> Authorization:
        """Refuse every delegation while the team is held (rule ``held``); else ask the core.

        The core checks the HCW ``hcw_id`` against this desk's staff view (:meth:`StaffCheck.facts`)
        and ``case_id`` against the case in progress.
        """
        hold = self.hold.state()
        if not hold.active:
            return self.core.authorize(task_type, robot, reason, requested_by, now_s, hcw_id=hcw_id,
                                       staff=self.staff.facts(), case_id=case_id)
        why = (f"the team is held by {', '.join(hold.escalation_ids)} ({hold.reason}); no delegation starts until "
               f'a person resolves it')
        self._emit(EventKind.DELEGATION_REFUSED, f'refused {task_type!r} for {robot!r}: the team is held',
                   target=robot, reason=why, task_type=task_type, robot=robot, requested_by=requested_by,
                   request_reason=reason, rule=WorkflowRule.HELD.value)
        return Authorization(approved=False, rule=WorkflowRule.HELD, explanation=why, task_type=task_type,
                             robot=robot)

    # -- a person raises an escalation --

    def raise_escalation(self, operator_id: str, kind: str, task_id: str, reason: str, severity: str,
                         now_s: float) -> Answer:
        """Open a person's concern or stop-and-hold (``RAISE_KINDS``); refuse (and record) bad input."""
        operator_id, kind, task_id = (str(v or '').strip() for v in (operator_id, kind, task_id))
        severity, reason = str(severity or '').strip(), str(reason or '').strip()
        attempt = {'operator_id': operator_id, 'kind': kind, 'task_id': task_id, 'request_reason': reason,
                   'severity': severity}
        if not operator_id:
            return self._refuse('raise', '', Refusal.EMPTY, 'raising an escalation needs an operator_id (who raises '
                                'it is recorded)', now_s, operator_id, attempt)
        if kind not in RAISE_KINDS:
            return self._refuse('raise', '', Refusal.BAD_VALUE, f"unknown kind {kind!r}: expected one of "
                                f"{', '.join(RAISE_KINDS)}", now_s, operator_id, attempt)
        if not reason:
            return self._refuse('raise', '', Refusal.EMPTY, 'an escalation needs a reason the team and the other '
                                'operators can read', now_s, operator_id, attempt)
        if severity and severity not in {s.value for s in Severity}:
            return self._refuse('raise', '', Refusal.BAD_VALUE, f"unknown severity {severity!r}: expected one of "
                                f"{', '.join(s.value for s in Severity)} (or '' for the policy's)", now_s,
                                operator_id, attempt)
        tasks = self.core.tasks()
        if task_id and not any(t.task_id == task_id for t in tasks):
            known = ', '.join(t.task_id for t in tasks) or 'none yet'
            return self._refuse('raise', '', Refusal.UNKNOWN_TASK, f"unknown task ID {task_id!r} (tasks: {known})"
                                + self._closed_note(task_id), now_s, operator_id, attempt)
        if kind == 'stop_and_hold':
            escalation_id = self.hold_team(f'stop-and-hold by {operator_id}: {reason}', by=operator_id,
                                           task_id=task_id, now_s=now_s)
            return Answer(accepted=True, escalation_id=escalation_id,
                          message=f'{escalation_id} opened: the team is held (robots stopped) until an authorised '
                                  f'operator resolves {escalation_id}')
        self._opening = {'kind': EscalationKind.CONCERN,
                         'severity': Severity(severity) if severity else self.policy.severity.concern}
        accepted, escalation_id, message = self.core.request_escalation(task_id, reason, ['retry', 'abort'], now_s,
                                                                        raised_by=operator_id)
        self._opening = {}
        if not accepted:   # recorded by the core as input_error
            return Answer(accepted=False, refusal=Refusal.BAD_VALUE, message=message)
        return Answer(accepted=True, escalation_id=escalation_id, message=message)

    def _stop_closed_task(self, report: TaskReportModel) -> None:
        """Stop the robot of a task the supervisor closed (its task deadline passed): it must not go on with it."""
        self._ports.stop_robots(f'{report.task_id} was closed: {report.issue}', robot=report.robot)

    def _stop_closed(self, escalation_id: str, by: str) -> None:
        """Stop every robot's running task: ``abort`` on ``escalation_id`` (by ``by``) closed the episode.

        Nothing may be delegated any more (the gate's ``closed`` rule), and a task still running
        would go on acting for an episode a person ended (a navigation robot paged an HCW three
        more times after the human's abort, for 35 s, before its report let the reflection start).
        """
        self._ports.stop_robots(f'{by} closed the episode with abort on {escalation_id}: no task may go on')

    def hold_team(self, reason: str, *, by: str, now_s: float, task_id: str = '', options: list[str] | None = None,
                  proposal: str = '') -> str:
        """Hold the whole team until a person resolves the hold escalation this opens; return its ID.

        The reusable stop: robots' goals are cancelled, every delegation is refused (rule
        ``held``), task deadlines pause, the manager pauses. ``task_id`` (default: the
        operational task running now, if any) is what a ``retry``/``reassign`` decision on
        the hold escalation applies to; ``options`` default to :data:`HOLD_OPTIONS`. The
        escalation is critical and never expires; resolving it with any decision releases the
        hold (``abort`` also closes the episode).

        Raises
        ------
        ValueError
            If ``reason`` is empty or ``task_id`` names no task.
        """
        if not task_id:
            running = [t for t in self.core.tasks()
                       if t.status == 'running' and t.task_type in OPERATIONAL_TASKS]
            task_id = running[-1].task_id if running else ''
        options = list(options or HOLD_OPTIONS)
        self._opening = {'kind': EscalationKind.HOLD, 'severity': Severity.CRITICAL, 'proposal': proposal}
        accepted, escalation_id, message = self.core.request_escalation(task_id, reason, options, now_s, raised_by=by)
        self._opening = {}
        if not accepted:
            raise ValueError(message)
        self.hold.engage(escalation_id, reason, by, now_s)
        return escalation_id

    def hold_on(self, escalation_id: str, reason: str) -> None:
        """Hold the team on an escalation already open (the supervisor's safe default ``hold``).

        The escalation becomes a hold escalation: robots' goals are cancelled, delegations are
        refused, until a person resolves it (any decision releases the hold). Its lifecycle
        times stay those of the escalation.

        Raises
        ------
        KeyError
            If ``escalation_id`` is not an escalation of this desk.
        """
        record = self._records[escalation_id]
        record.holds_team = True
        self._save(record)
        self.hold.engage(escalation_id, reason, SUPERVISOR, record.opened_s)

    def covered_by_takeover(self, escalation_id: str) -> None:
        """Mark an open escalation as covered by the safe default ``takeover``.

        The protocol brain has the manager's role, so the team goes on; the escalation stays open
        for a person to decide, and if nobody does it expires with nothing more applied (no team
        hold: the takeover already is the safe default).

        Raises
        ------
        KeyError
            If ``escalation_id`` is not an escalation of this desk.
        """
        record = self._records[escalation_id]
        record.covered_by = 'takeover'
        self._save(record)

    # -- acknowledge and resolve --

    def acknowledge(self, escalation_id: str, operator_id: str, note: str, now_s: float) -> Answer:
        """Record that an authorised operator has the escalation; re-notification stops."""
        escalation_id, operator_id = str(escalation_id or '').strip(), str(operator_id or '').strip()
        attempt = {'operator_id': operator_id, 'note': note}
        refused = self._check_open('acknowledge', escalation_id, operator_id, now_s, attempt)
        if refused is not None:
            return refused
        record = self._records[escalation_id]
        if not self.policy.authorised(operator_id):
            return self._refuse('acknowledge', escalation_id, Refusal.UNAUTHORISED,
                                self.policy.unauthorised_message(operator_id, 'acknowledge escalations'), now_s,
                                operator_id, attempt)
        if record.state is LifecycleState.ACKNOWLEDGED:
            return Answer(accepted=True, escalation_id=escalation_id,
                          message=f'{escalation_id} was already acknowledged by {record.acknowledged_by}')
        transition(record, LifecycleAction.ACKNOWLEDGE)
        record.acknowledged_by, record.acknowledged_s, record.acknowledged_wall = operator_id, now_s, self._wall()
        self._save(record, EscalationStep(escalation_id=escalation_id, step='acknowledged', actor=operator_id,
                                          sim_s=now_s, wall_s=record.acknowledged_wall, message=note or ''))
        due = f'; it expires at t={record.due_s:.1f} s unless resolved' if record.due_s is not None else ''
        self._emit(EventKind.ESCALATION_ACKNOWLEDGED, f'{operator_id} acknowledged {escalation_id}',
                   target=escalation_id, reason=note or '', escalation_id=escalation_id, task_id=record.task_id,
                   operator_id=operator_id, wall_time_s=record.acknowledged_wall, due_s=record.due_s)
        self._ports.publish_escalation(record, now_s)
        return Answer(accepted=True, escalation_id=escalation_id, message=f'{escalation_id} acknowledged by '
                      f'{operator_id}{due}')

    def resolve(self, escalation_id: str, decision: str, hcw_id: str, note: str, operator_id: str,
                now_s: float) -> Answer:
        """Check and record a person's decision; publish it through the core; release a hold it ends.

        Refused (nothing changes, the attempt is recorded as an ``input_error`` event and a
        stored ``refused`` step): unknown or closed escalation, unauthorised operator, unknown
        decision, ``accept`` with no proposal, ``reassign`` without an HCW or naming one who is
        not in the directory or not available.
        """
        escalation_id, operator_id = str(escalation_id or '').strip(), str(operator_id or '').strip()
        decision, hcw_id, note = str(decision or '').strip(), str(hcw_id or '').strip(), note or ''
        attempt = {'decision': decision, 'hcw_id': hcw_id, 'note': note, 'operator_id': operator_id}
        refused = self._check_open('resolve', escalation_id, operator_id, now_s, attempt)
        if refused is not None:
            return refused
        record = self._records[escalation_id]

        def refuse(refusal: Refusal, message: str) -> Answer:
            return self._refuse('resolve', escalation_id, refusal, message, now_s, operator_id, attempt)
        if record.kind is EscalationKind.PATIENT:
            return refuse(Refusal.BAD_DECISION, f'{escalation_id} asks a person to take patient {record.patient_id}, '
                                                f'whom the team does not serve: acknowledge it (you have the '
                                                f'patient); there is no team decision to take')
        if not self.policy.authorised(operator_id):
            return refuse(Refusal.UNAUTHORISED, self.policy.unauthorised_message(operator_id, 'resolve escalations'))
        if decision not in RESOLVE_DECISIONS:
            return refuse(Refusal.BAD_DECISION, f"unknown decision {decision!r}; expected one of "
                                                f"{', '.join(RESOLVE_DECISIONS)}")
        accepted_proposal = ''
        if decision == 'accept':
            if not record.proposal:
                return refuse(Refusal.BAD_DECISION, f"{escalation_id} has no manager's proposal to accept; decide "
                                                    f"reassign, retry or abort")
            accepted_proposal = record.proposal
            decision, _, proposed_hcw = record.proposal.partition(':')
            hcw_id = proposed_hcw.strip() or hcw_id
            if decision not in RESOLVE_DECISIONS[1:]:
                return refuse(Refusal.BAD_DECISION, f"{escalation_id}'s proposal {record.proposal!r} is not a "
                                                    f'decision (reassign:<hcw>, retry or abort); decide yourself')
            note = note or f"accepted the manager's proposal {record.proposal}"
        check_note = ''
        if decision == 'reassign':
            if not hcw_id:
                return refuse(Refusal.HCW_MISSING, "decision 'reassign' needs hcw_id: the HCW to assign instead")
            refusal, check_note = self.staff.check(hcw_id)
            if refusal is not Refusal.NONE:
                return refuse(refusal, f'{escalation_id}: {check_note}')
        closed = self.core.closed_case_of(escalation_id)   # before the decision: it may let the case go
        accepted, message = self.core.resolve(escalation_id, decision, hcw_id if decision == 'reassign' else '',
                                              note, operator_id, now_s)
        if not accepted:   # recorded by the core as input_error
            return Answer(accepted=False, refusal=Refusal.BAD_DECISION, escalation_id=escalation_id, message=message)
        self._resolved(record, decision, hcw_id if decision == 'reassign' else '', operator_id, note, message, now_s,
                       {'hcw_id': hcw_id if decision == 'reassign' else '', 'note': note,
                        'accepted_proposal': accepted_proposal, 'hcw_check': check_note})
        if record.holds_team:
            self._release(escalation_id, operator_id, now_s)
        if decision == 'abort' and not closed:   # a closed case runs nothing: the other cases' tasks go on
            self._stop_closed(escalation_id, operator_id)
        return Answer(accepted=True, escalation_id=escalation_id, message=message
                      + (f' ({check_note})' if check_note else '')
                      + ('; the team hold is released' if record.holds_team and not self.hold.active else ''))

    def _resolved(self, record: EscalationRecord, decision: str, hcw_id: str, by: str, note: str, message: str,
                  now_s: float, data: dict) -> None:
        """Record ``record`` resolved with ``decision`` by ``by`` (the core accepted it): lifecycle, step, publish.

        ``data`` goes into the ``resolved`` step beside the decision; ``now_s``: ROS time, s.
        """
        transition(record, LifecycleAction.RESOLVE)
        record.decision, record.hcw_id, record.decided_by, record.note = decision, hcw_id, by, note
        record.closed_s, record.closed_wall = now_s, self._wall()
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='resolved', actor=by, sim_s=now_s,
                                          wall_s=record.closed_wall, message=message,
                                          data={'decision': decision, **data}))
        self._ports.publish_escalation(record, now_s)

    # -- the hospital's record ends a case --

    def close_case(self, patient_id: str, status: str, reference: str, requested_by: str, now_s: float) -> CaseEnd:
        """Close ``patient_id``'s case because the hospital's record ended it (an Encounter ``status``).

        The workflow's own rule for a person closing a case: an escalation about the case (no
        task), raised by ``requested_by`` (e.g. ``'ehr'``, the FHIR gateway) with the one option
        ``abort``, decided ``abort`` by ``requested_by`` at once (rule 4 of
        :class:`~robot_team.rules.workflow.policy.WorkflowPolicy`: only the reflection may follow; the manager
        writes it and closes the case, outcome ``escalated``). The robots running the case's tasks
        are stopped. A waiting case is closed so the moment it opens (not before: the manager
        keeps its own queue); a case already closed, or none, changes nothing. Recorded as
        ``case_ended_by_record``; a repeat is safe. ``status``: one of :data:`RECORD_ENDS`;
        ``reference``: the record, e.g. ``'Encounter/enc-1'``; ``now_s``: ROS time, s.
        """
        patient_id, status = str(patient_id or '').strip(), str(status or '').strip()
        by = str(requested_by or '').strip() or 'ehr'
        if not patient_id or status not in RECORD_ENDS:
            end = CaseEnd(accepted=False, result='refused', message=f'expected a patient ID and a status of '
                          f"{', '.join(RECORD_ENDS)} (got {patient_id!r}, {status!r})")
        else:
            state = self.core.case_state(patient_id)
            if state == 'open':
                end = self._abort_case(patient_id, status, reference, by, now_s)
            elif state == 'waiting':
                self._ended_waiting[patient_id] = (status, reference, by)
                end = CaseEnd(accepted=True, result='closes_when_opened', message=f'case {patient_id} waits for '
                              f'the team: it is closed when its turn comes ({reference} {status})')
            elif state in ('closing', 'closed'):
                end = CaseEnd(accepted=True, result='already_closed', message=f'case {patient_id} is already '
                              + ('closed' if state == 'closed' else 'closed by abort (its reflection follows)'))
            else:
                end = CaseEnd(accepted=True, result='no_case', message=f'no case of patient {patient_id} here')
        self._emit(EventKind.CASE_ENDED_BY_RECORD, f'{reference or "the record"} {status or "?"}: case '
                   f'{patient_id or "?"} {end.result}', target=reference, reason=end.message, case_id=patient_id,
                   status=status, reference=reference, requested_by=by, result=end.result,
                   escalation_id=end.escalation_id)
        return end

    def _case_opened(self, patient_id: str, now_s: float) -> None:
        """Close a case the hospital's record ended while it waited, as it opens (the core's ``on_case_opened``)."""
        ended = self._ended_waiting.pop(patient_id, None)
        if ended is not None:
            self.close_case(patient_id, *ended, now_s)

    def _abort_case(self, patient_id: str, status: str, reference: str, by: str, now_s: float) -> CaseEnd:
        """Open and decide ``abort`` on an escalation of ``patient_id``'s open case, by ``by``."""
        reason = (f"the hospital's record {reference or 'of ' + patient_id} is {status}: the case ends "
                  f'(no more tasks; only the reflection)')
        running = {t.robot for p in self.core.open_policies if p.patient_id == patient_id
                   for t in p.snapshot().tasks if t.status == 'running'}
        accepted, escalation_id, message = self.core.request_escalation('', reason, ['abort'], now_s, raised_by=by,
                                                                        case_id=patient_id)
        if not accepted:
            return CaseEnd(accepted=False, result='refused', message=message)
        accepted, message = self.core.resolve(escalation_id, 'abort', '', f'{reference} {status}', by, now_s)
        if not accepted:
            return CaseEnd(accepted=False, result='refused', message=message, escalation_id=escalation_id)
        self._resolved(self._records[escalation_id], 'abort', '', by, f'{reference} {status}', message, now_s,
                       {'reference': reference, 'status': status})
        for robot in sorted(running):
            self._ports.stop_robots(f'{by}: {reference} {status}; case {patient_id} closed', robot=robot)
        return CaseEnd(accepted=True, result='closed', escalation_id=escalation_id,
                       message=f'case {patient_id} closed by abort on {escalation_id}: {message}')

    # -- instructions --

    def instruct(self, operator_id: str, task_id: str, text: str, now_s: float) -> Answer:
        """Record and publish an authorised person's free-text instruction (advisory for the manager)."""
        operator_id, task_id, text = (str(v or '').strip() for v in (operator_id, task_id, text))
        wall = self._wall()

        def refuse(refusal: Refusal, message: str) -> Answer:
            self.store.add_instruction(InstructionRecord(operator_id=operator_id, task_id=task_id, text=text,
                                                         sim_s=now_s, wall_s=wall, accepted=False, refusal=refusal,
                                                         message=message))
            self._emit(EventKind.INPUT_ERROR, f'refused an instruction from {operator_id or "(no operator)"}',
                       target=task_id, reason=message, step='instruct', refusal=refusal.value,
                       operator_id=operator_id, task_id=task_id, text=text)
            return Answer(accepted=False, refusal=refusal, message=message)
        if not self.policy.authorised(operator_id):
            return refuse(Refusal.UNAUTHORISED, self.policy.unauthorised_message(operator_id, 'instruct the team'))
        if not text:
            return refuse(Refusal.EMPTY, 'an instruction needs text (it was empty)')
        tasks = self.core.tasks()
        if task_id and not any(t.task_id == task_id for t in tasks):
            return refuse(Refusal.UNKNOWN_TASK, f"unknown task ID {task_id!r} (tasks: "
                                                f"{', '.join(t.task_id for t in tasks) or 'none yet'})"
                                                + self._closed_note(task_id))
        self._instructions += 1
        instruction = InstructionRecord(instruction_id=f'instr-{self._instructions}', operator_id=operator_id,
                                        task_id=task_id, text=text, sim_s=now_s, wall_s=wall)
        self.store.add_instruction(instruction)
        self._emit(EventKind.INSTRUCTION, f'{operator_id} instructed the team ({instruction.instruction_id})',
                   target=task_id, instruction_id=instruction.instruction_id, operator_id=operator_id,
                   task_id=task_id, text=text, wall_time_s=wall)
        self._ports.publish_instruction(instruction)
        return Answer(accepted=True, instruction_id=instruction.instruction_id,
                      message=f'{instruction.instruction_id} sent to the team: the manager receives it as an '
                              f'advisory observation')

    # -- time --

    def pause_deadlines(self, why: str, now_s: float) -> None:
        """Pause the workflow's deadlines from ROS time ``now_s`` (s) while the supervisor keeps ``why`` from the team.

        For news the manager needs to act on that the supervisor withholds for a moment: a robot
        back on the network is announced only once its stale goals are cancelled
        (:data:`robot_team.agents.supervisor_node.BACK_NOTICE_WAIT_S`, wall s), and sim time may
        run on meanwhile. Nobody could act in that time, so it is not charged to the manager, as a
        team hold's is not (:meth:`resume_deadlines`). Thread-safe; pausing the same ``why``
        again changes nothing.
        """
        with self._pauses_lock:
            if self._paused_since is None:
                self._paused_since = now_s
            if why not in self._paused_for:
                self._paused_for.append(why)
            self._pauses.add(why)

    def resume_deadlines(self, why: str, now_s: float) -> float:
        """End ``why``'s pause at ROS time ``now_s`` (s); once no pause is left, move the deadlines on.

        Returns the ROS time (s) every pending deadline moved on by: the time since the first of
        the overlapping pauses began (0 while another pause stays, or for a ``why`` not paused).
        Recorded as ``deadlines_postponed``, whose ``why`` lists every pause of the overlapping
        span in the order they began (the reason joins them). A team hold over the same time
        moves them on as well (:meth:`TeamHold.release`): each pause is short, and neither one
        charges the manager.
        """
        with self._pauses_lock:
            if why not in self._pauses:
                return 0.0
            self._pauses.discard(why)
            if self._pauses:
                return 0.0
            paused_for = max(0.0, now_s - self._paused_since)
            self._paused_since = None
            whys, self._paused_for = self._paused_for, []
            if paused_for > 0:   # before the pause ends: a tick never sees the old deadlines unpaused
                self.core.postpone_deadlines(paused_for)
        self._emit(EventKind.DEADLINES_POSTPONED, f'deadlines moved on by {paused_for:g} s', reason='; '.join(whys),
                   paused_for_s=paused_for, why=whys)
        return paused_for

    @property
    def deadlines_paused(self) -> bool:
        """Whether a pause (:meth:`pause_deadlines`) holds the workflow's deadlines now."""
        with self._pauses_lock:
            return bool(self._pauses)

    def tick(self, now_s: float) -> None:
        """Run the supervisor's deadlines (paused while held or paused), expire and re-notify escalations.

        A patient nobody was asked about is given to a person on time even while the team is held
        (:meth:`SupervisorCore.check_waiting <robot_team.core.supervisor.SupervisorCore.check_waiting>`).
        """
        if not self.hold.active and not self.deadlines_paused:
            self.core.check_deadlines(now_s)
        else:
            self.core.check_waiting(now_s)
        for record in self.records():
            if not record.is_open:
                continue
            if record.due_s is not None and now_s >= record.due_s:
                self._expire(self._records[record.escalation_id], now_s)
            elif record.state is LifecycleState.OPEN and now_s - record.last_notified_s >= self.policy.renotify_s:
                live = self._records[record.escalation_id]
                live.notifications += 1
                live.last_notified_s = now_s
                self._save(live, EscalationStep(escalation_id=live.escalation_id, step='renotified',
                                                actor=SUPERVISOR, sim_s=now_s, wall_s=self._wall(),
                                                data={'notifications': live.notifications}))
                self._emit(EventKind.ESCALATION_RENOTIFIED, f'{live.escalation_id} still unanswered: announced '
                           f'again ({live.notifications})', target=live.escalation_id,
                           reason=f'open for {now_s - live.opened_s:.0f} s with no acknowledgement',
                           escalation_id=live.escalation_id, task_id=live.task_id, notifications=live.notifications,
                           severity=live.severity.value, due_s=live.due_s)
                self._ports.publish_escalation(live, now_s)

    def _expire(self, record: EscalationRecord, now_s: float) -> None:
        """Expire ``record`` unanswered: apply the safe default, then let the core know (its case may be let go).

        An escalation of a closed case applies none (``safe_default`` ``'none'``): its case runs
        nothing to hold or abort, and the other cases go on.
        """
        closed = '' if record.covered_by else self.core.closed_case_of(record.escalation_id)
        safe = record.covered_by or ('none' if closed else self.policy.on_expiry)
        waited = now_s - record.opened_s
        why = (f'no authorised operator resolved {record.escalation_id} within '
               f'{self.policy.deadlines_s[record.severity]:g} s ({record.severity.value}); safe default: {safe}')
        if record.covered_by:
            why += ' (already in force: nothing more applied)'
        if closed:
            why += f' (case {closed} is closed: nothing to hold or abort; the other cases go on)'
        transition(record, LifecycleAction.EXPIRE)
        record.safe_default = safe
        record.decided_by, record.closed_s, record.closed_wall = SUPERVISOR, now_s, self._wall()
        record.decision = safe
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='expired', actor=SUPERVISOR,
                                          sim_s=now_s, wall_s=record.closed_wall, message=why,
                                          data={'safe_default': safe, 'waited_s': waited}))
        self._emit(EventKind.ESCALATION_EXPIRED, f'{record.escalation_id} expired unanswered', target=record.task_id,
                   reason=why, escalation_id=record.escalation_id, task_id=record.task_id,
                   severity=record.severity.value, safe_default=safe, waited_s=waited,
                   acknowledged_by=record.acknowledged_by, **({'case_id': closed, 'case_closed': True} if closed
                                                              else {}))
        if record.covered_by:
            record.note = f'expired under the safe default already in force ({record.covered_by})'
            self._save(record)
        elif closed:
            record.note = f'expired after case {closed} closed: no safe default applied'
            self._save(record)
        elif safe == 'abort':
            note = f'safe default: {record.escalation_id} expired unanswered'
            accepted, message = self.core.resolve(record.escalation_id, 'abort', '', note, SUPERVISOR, now_s)
            record.note = note if accepted else message
            self._save(record)
            if accepted:
                self._stop_closed(record.escalation_id, SUPERVISOR)
        else:
            reason = f'{record.escalation_id} expired unanswered: {record.reason}'
            follow = ''
            for task_id in dict.fromkeys((record.task_id, '')):   # its task, else none (a task no longer open)
                try:
                    follow = self.hold_team(reason, by=SUPERVISOR, task_id=task_id, options=record.options or None,
                                            proposal=record.proposal, now_s=now_s)
                    break
                except ValueError as exc:   # recorded, never a crash of the supervisor's deadline timer
                    self._emit(EventKind.INPUT_ERROR, f'{record.escalation_id}: no hold on {task_id or "no task"}',
                               reason=str(exc), escalation_id=record.escalation_id, task_id=task_id)
            record.followed_by = follow
            record.note = (f'the team is held until {follow} is resolved' if follow else
                           'expired; the team could not be held (see the input errors)')
            self._save(record)
        self._ports.publish_escalation(record, now_s)
        self.core.escalation_expired(record.escalation_id)

    # -- restart --

    def restore(self, now_s: float) -> list[str]:
        """Take up the stored escalations after a restart: re-publish the open ones, re-engage holds.

        Every stored escalation goes back into its case's policy (so IDs continue and open ones
        can be resolved; one of a case let go goes to none: :meth:`SupervisorCore.restore_escalation
        <robot_team.core.supervisor.SupervisorCore.restore_escalation>`); returns the IDs of the
        open ones (each recorded as ``escalation_restored``). A closed case kept for an escalation
        that expired meanwhile is let go.
        A hold is engaged again since its escalation opened (ROS time), so its release postpones
        the workflow's deadlines by the whole held time, the supervisor's downtime included. Call
        :meth:`restore_state` first (it needs a fresh policy).
        """
        restored = []
        for record in self.store.escalations():
            # the workflow knows a person's decision only: an expired escalation's safe default is no decision
            if record.kind is not EscalationKind.PATIENT:   # a patient the team does not serve: outside it
                self.core.restore_escalation(record.model_copy(deep=True, update={
                    'decision': record.decision if record.state is LifecycleState.RESOLVED else ''}))
            with self._records_lock:
                self._records[record.escalation_id] = record
            if not record.is_open:
                continue
            restored.append(record.escalation_id)
            self._save(record, EscalationStep(escalation_id=record.escalation_id, step='restored', actor=SUPERVISOR,
                                              sim_s=now_s, wall_s=self._wall()))
            self._emit(EventKind.ESCALATION_RESTORED, f'{record.escalation_id} taken up again after a supervisor '
                       f'restart ({record.state.value})', target=record.task_id, reason=record.reason,
                       escalation_id=record.escalation_id, task_id=record.task_id, state=record.state.value,
                       kind=record.kind.value, severity=record.severity.value, due_s=record.due_s,
                       holds_team=record.holds_team)
            self._ports.publish_escalation(record, now_s)
            if record.holds_team:   # held since it opened (the downtime too): the release postpones by all of it
                self.hold.engage(record.escalation_id, record.reason, record.raised_by, record.opened_s)
        if not self.hold.active:
            self._ports.publish_hold(self.hold.state())
        self.core.let_go_closed()   # a closed case kept for an escalation that expired meanwhile
        return restored

    def restore_state(self, now_s: float) -> SupervisorState | None:
        """Take up the stored workflow after a restart (before :meth:`restore`); return it, or None.

        The core gets back the tasks (running and closed), deadlines (pending ones keep their due
        time in ROS time: one that passed meanwhile is missed at the first :meth:`tick`), the
        patient cue, the closed state and the directives (:meth:`SupervisorCore.restore
        <robot_team.core.supervisor.SupervisorCore.restore>`), recorded as one
        ``workflow_restored`` event. Returns None, changing nothing, if nothing was stored, and
        also if the stored state does not validate or is inconsistent: then the supervisor
        starts with an empty workflow, recorded as an ``input_error`` naming the store's file
        (not fatal; the next :meth:`save_state` replaces the bad state).
        """
        saved = self.store.saved_state()
        if saved is None:
            return None
        where = str(self.store.path) if self.store.path else '(in memory)'
        try:
            state = SupervisorState.model_validate_json(saved.state_json)
            self.core.restore(state)
        except ValueError as exc:   # pydantic's ValidationError is a ValueError
            self._emit(EventKind.INPUT_ERROR, f'stored supervisor state in {where} is unusable: starting with an '
                       f'empty workflow', target=where, reason=str(exc), escalation_db=where, saved_s=saved.saved_s,
                       saved_wall=saved.saved_wall, raw=saved.state_json[:RAW_STATE_CHARS])
            return None
        self._saved_state = saved.state_json
        workflow = state.workflow
        pending = [d for d in workflow.deadlines if d.state == 'pending']
        running = [t.task_id for t in workflow.tasks if t.status == 'running']
        self._emit(EventKind.WORKFLOW_RESTORED, f'workflow taken up after a supervisor restart: '
                   f'{len(workflow.tasks)} task(s) ({len(running)} running), {len(pending)} pending deadline(s)',
                   reason=f'state saved at t={saved.saved_s:.1f} s in {where}', escalation_db=where,
                   saved_s=saved.saved_s, saved_wall=saved.saved_wall, patient_id=workflow.patient_id,
                   restored_tasks=[t.task_id for t in workflow.tasks], running_tasks=running,
                   restored_deadlines=[{'deadline': d.kind, 'task_id': d.task_id, 'cue': d.cue,
                                        'started_s': d.started_s, 'due_s': d.due_s} for d in pending],
                   closed_by=workflow.closed_by, directives=state.directives, took_over=state.took_over,
                   restored_at_s=now_s)
        return state

    def save_state(self, now_s: float) -> bool:
        """Store the core's state if it changed since the last save; return whether it wrote.

        The state is :meth:`SupervisorCore.state <robot_team.core.supervisor.SupervisorCore.state>`.

        Called after everything that may change the workflow (a delegation, report, escalation,
        decision, deadline check, hold): nothing is written if the state is the one last saved or
        restored. ``now_s``: ROS time, s.

        Raises
        ------
        sqlite3.Error
            If the store cannot be written.
        """
        state_json = self.core.state().model_dump_json()
        if state_json == self._saved_state:
            return False
        self.store.save_state(state_json, now_s, self._wall())
        self._saved_state = state_json
        return True

    # -- internals --

    def _release(self, escalation_id: str, by: str, now_s: float) -> None:
        held_for = self.hold.release(escalation_id, by, now_s)
        if held_for > 0:   # nobody could act while held: the workflow's deadlines move on by that long
            self.core.postpone_deadlines(held_for)

    def _check_open(self, step: str, escalation_id: str, operator_id: str, now_s: float,
                    attempt: dict) -> Answer | None:
        record = self._records.get(escalation_id)
        if record is None:
            open_ids = [r.escalation_id for r in self.records() if r.is_open]
            return self._refuse(step, escalation_id, Refusal.UNKNOWN_ESCALATION,
                                f"no escalation {escalation_id!r}; open escalations: {', '.join(open_ids) or 'none'}",
                                now_s, operator_id, attempt)
        if not record.is_open:
            if record.state is LifecycleState.EXPIRED:
                why = (f'{escalation_id} expired unanswered (safe default: {record.safe_default}'
                       + (f'; resolve {record.followed_by} instead' if record.followed_by else '') + ')')
            else:
                why = f'{escalation_id} is already resolved ({record.decision} by {record.decided_by or "?"})'
            return self._refuse(step, escalation_id, Refusal.CLOSED, why + self._closed_note(escalation_id), now_s,
                                operator_id, attempt)
        return None

    def _closed_note(self, item_id: str) -> str:
        """Return '; case <P> is closed' when a task's or escalation's ID belongs to a closed case ('' otherwise)."""
        closed = self.core.closed_case_of(item_id)
        return f'; case {closed} is closed' if closed else ''

    def _refuse(self, step: str, escalation_id: str, refusal: Refusal, message: str, now_s: float, operator_id: str,
                attempt: dict) -> Answer:
        self.store.add_step(EscalationStep(escalation_id=escalation_id, step='refused', actor=operator_id,
                                           sim_s=now_s, wall_s=self._wall(), accepted=False, refusal=refusal,
                                           message=message, data={'attempted': step, **attempt}))
        target = escalation_id or str(attempt.get('task_id', ''))
        self._emit(EventKind.INPUT_ERROR, f'refused to {step} {escalation_id or "an escalation"} for '
                   f'{operator_id or "(no operator)"}', target=target, reason=message, step=step,
                   refusal=refusal.value, escalation_id=escalation_id, **attempt)
        return Answer(accepted=False, refusal=refusal, escalation_id=escalation_id, message=message)

    def _save(self, record: EscalationRecord, step: EscalationStep | None = None) -> None:
        with self._records_lock:
            self._records[record.escalation_id] = record
        self.store.save(record)
        if step is not None:
            self.store.add_step(step)


def _lifecycle_fields(record: EscalationRecord) -> dict:
    """Return the lifecycle fields an ``escalation`` event carries for ``record`` (kind, severity, deadline...)."""
    return {'kind': record.kind.value, 'severity': record.severity.value, 'proposal': record.proposal,
            'due_s': record.due_s, 'holds_team': record.holds_team, 'opened_wall': record.opened_wall,
            'state': record.state.value}
