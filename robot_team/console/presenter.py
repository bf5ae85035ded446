"""The supervisor console's presenter: what the widget shows and what its buttons do (no Qt, no rclpy).

:class:`ConsolePresenter` keeps the console's view of a running team (escalations and their
lifecycle, the team hold, the task board, the staff directory with availability) from what the
ROS side feeds it (``on_*`` methods), and turns a person's clicks (acknowledge, accept the
manager's proposal, reassign to an HCW, retry, abort, instruct, raise a concern, stop-and-hold)
into requests through an injected :class:`ConsolePort` (the supervisor's services). The Qt
widget (:mod:`robot_team.console.widget`) only renders it and forwards clicks; tests drive it
as a person would, without a screen.

Threading: ``on_*`` methods and replies may arrive on any thread (ROS executor threads); one
lock guards the state, and :attr:`ConsolePresenter.version` grows with every change, so a view
can poll it from its own (GUI) thread.
"""

from __future__ import annotations

import threading
from typing import Callable, Literal, Protocol

from pydantic import BaseModel, Field

from robot_team.contracts.names import NO_ROBOT, RobotId
from robot_team.run_report import evidence_of, truth_text
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.scene import SceneState
from robot_team.core.escalations import StaffEntry

Done = Callable[[bool, str], None]
"""``done(accepted, message)``: the supervisor's answer to a request (or why it could not be sent)."""


class ConsolePort(Protocol):
    """The supervisor's services, as the console calls them (non-blocking; ``done`` on any thread)."""

    def acknowledge(self, escalation_id: str, operator_id: str, note: str, done: Done) -> None:
        """Call ``team/supervisor/acknowledge_escalation``."""

    def resolve(self, escalation_id: str, decision: str, hcw_id: str, note: str, operator_id: str,
                done: Done) -> None:
        """Call ``team/supervisor/resolve_escalation``."""

    def raise_escalation(self, kind: str, task_id: str, reason: str, severity: str, operator_id: str,
                         done: Done) -> None:
        """Call ``team/supervisor/raise_escalation``."""

    def instruct(self, text: str, task_id: str, operator_id: str, done: Done) -> None:
        """Call ``team/supervisor/send_instruction``."""


class EscalationRow(EscalationRecord):
    """One escalation as the console lists it (see ``robot_team/msg/Escalation``).

    The fields of :class:`~robot_team.contracts.escalation_model.EscalationRecord`, with ``kind``,
    ``severity`` and ``state`` as the message's words (shown as they come; ``severity`` '' when
    the message has none). ``decided_by`` (:attr:`operator_id`) holds the message's ``operator_id``:
    who decided, or "supervisor" for a safe default.
    """

    kind: str = 'issue'
    severity: str = ''
    state: str = 'open'

    @property
    def is_open(self) -> bool:
        """Whether a person may still acknowledge or resolve it."""
        return self.state in ('open', 'acknowledged')

    @property
    def outcome(self) -> str:
        """The decision in words ('' while open)."""
        if not self.decision:
            return ''
        text = self.decision + (f' #{self.hcw_id}' if self.hcw_id else '')
        return f'{text} ({self.operator_id})' if self.operator_id else text


class TaskRow(BaseModel):
    """One task on the team's board."""

    task_id: str
    task_type: str = ''
    robot: RobotId = NO_ROBOT
    status: Literal['running', 'success', 'failure'] = 'running'
    issue: str = ''
    ground_truth: str = '-'


class StaffRow(StaffEntry):
    """One HCW of the directory with availability from the RTLS (the staff board's ``StaffMember``)."""

    @property
    def label(self) -> str:
        """How a person picks them: '#90 Dr. Lucas Brennan (Physician, Staff lounge)'."""
        where = ', '.join(p for p in (self.specialty, self.area) if p)
        return f'#{self.hcw_id} {self.name}'.strip() + (f' ({where})' if where else '')


class HoldView(BaseModel):
    """The team hold as the console shows it."""

    active: bool = False
    escalation_ids: list[str] = Field(default_factory=list)
    reason: str = ''
    held_by: str = ''


class Status(BaseModel):
    """The console's status line: the latest answer or problem."""

    level: Literal['info', 'ok', 'error'] = 'info'
    text: str = 'waiting for the team'


class ConsolePresenter:
    """State and actions of the supervisor console.

    Parameters
    ----------
    port
        The supervisor's services (:class:`ConsolePort`).
    operator_id
        Who is at the console (sent with every request; the supervisor checks it).

    Notes
    -----
    Actions act on the selected escalation (:meth:`select`); each refuses locally, with a
    status line saying why, when it cannot apply (nothing selected, a closed escalation, no
    operator ID, empty text), and otherwise sends the request and shows the supervisor's
    answer, refusals included. Thread-safe.
    """

    def __init__(self, port: ConsolePort, operator_id: str = ''):
        self.port = port
        self._lock = threading.RLock()
        self._operator_id = operator_id.strip()
        self._escalations: dict[str, EscalationRow] = {}
        self._tasks: dict[str, TaskRow] = {}
        self._staff: list[StaffRow] = []
        self._hold = HoldView()
        self._lost: dict[str, str] = {}
        self._not_receiving = ''
        self._selected = ''
        self._status = Status()
        self._pending = 0
        self._heard: set[str] = set()
        self.version = 0
        """Grows with every change of what the console shows."""
        self.scene = SceneState()
        """The floor as the team's poses, RTLS stream and events show it (the floor map draws it)."""

    # --- Inputs from the team (any thread) ----------------------------------------------------

    def on_escalation(self, item: dict) -> None:
        """Take an escalation's latest state (a dict as :func:`robot_team.human.escalation_dict` returns)."""
        fields = {'decided_by' if k == 'operator_id' else k: v for k, v in item.items()}
        row = EscalationRow(**{k: v for k, v in fields.items() if k in EscalationRow.model_fields})
        with self._lock:
            self._escalations[row.escalation_id] = row
            if not self._selected or self._selected not in self._escalations:
                self._selected = row.escalation_id
            elif not self._escalations[self._selected].is_open and row.is_open:
                self._selected = row.escalation_id   # follow what needs a person
            self._changed('escalations')

    def on_hold(self, active: bool, escalation_ids: list[str], reason: str = '', held_by: str = '') -> None:
        """Take the team hold."""
        with self._lock:
            self._hold = HoldView(active=active, escalation_ids=list(escalation_ids), reason=reason, held_by=held_by)
            self._changed('hold')

    def on_staff(self, staff: list[dict]) -> None:
        """Take the staff board (directory with availability)."""
        with self._lock:
            self._staff = [StaffRow(**{k: v for k, v in s.items() if k in StaffRow.model_fields}) for s in staff]
            self._changed('staff')

    def on_task_authorized(self, task_id: str, task_type: str, robot: RobotId) -> None:
        """Put an authorized task on the board (running until its report)."""
        with self._lock:
            if task_id not in self._tasks:
                self._tasks[task_id] = TaskRow(task_id=task_id, task_type=task_type, robot=robot)
            self._changed('tasks')

    def on_task_report(self, task_id: str, task_type: str, robot: RobotId, status: str, issue: str,
                       evidence: dict) -> None:
        """Take a recorded report: status, issue and the ground truth from its evidence."""
        truth = truth_text(evidence_of(task_type, evidence))
        with self._lock:
            self._tasks[task_id] = TaskRow(task_id=task_id, task_type=task_type, robot=robot,
                                           status='success' if status == 'success' else 'failure', issue=issue,
                                           ground_truth=truth)
            self._changed('tasks')

    def on_task_failed(self, task_id: str, issue: str) -> None:
        """Mark a task failed without a report (e.g. its deadline passed)."""
        with self._lock:
            row = self._tasks.get(task_id)
            if row is not None and row.status == 'running':
                row.status, row.issue = 'failure', issue
                self._changed('tasks')

    def on_liveness(self, node: str, state: str, restarted: bool = False, task_id: str = '',
                    noticed_by: str = '') -> None:
        """Take the supervisor's notice of a team node lost (``state`` 'lost') or back ('back')."""
        with self._lock:
            if state == 'lost':
                self._lost[node] = (f'{node} lost ({noticed_by})'
                                    + (f': {task_id} closed as a failure' if task_id else ''))
                self._set_status('error', self._lost[node])
            elif self._lost.pop(node, None) is not None:
                self._set_status('ok', f"{node} back ({'restarted' if restarted else 'reconnected'})")
            self._changed('liveness')

    def on_spin_failure(self, error: str, spun_again: bool, attempt: int) -> None:
        """Take an exception that ended the console's own ROS spin (``error``: ``'Type: message'``).

        ``spun_again``: whether the console spins again (it still receives, but what the failed
        callback carried may be missing); otherwise it receives nothing more, and
        :meth:`not_receiving` says so until the console is restarted. ``attempt``: the failure's
        number (1 for the first).
        """
        with self._lock:
            if spun_again:
                self._set_status('error', f'the console\'s ROS side raised {error} (failure {attempt}); it receives '
                                          'again, but an update may be missing')
            else:
                self._not_receiving = (f'the console stopped receiving the team after {attempt} failure(s) '
                                       f'(last: {error}); what it shows is no longer updated - restart it')
                self._set_status('error', self._not_receiving)
            self._changed('spin')

    def not_receiving(self) -> str:
        """Return why the console no longer receives the team's state ('' while it does)."""
        with self._lock:
            return self._not_receiving

    def lost_nodes(self) -> dict[str, str]:
        """Return the team nodes lost now, each with what the console says about it."""
        with self._lock:
            return dict(self._lost)

    def _changed(self, what: str) -> None:
        self._heard.add(what)
        self.version += 1

    # --- What the view shows ------------------------------------------------------------------

    def escalations(self) -> list[EscalationRow]:
        """Return every escalation, open ones first, then by ID."""
        with self._lock:
            rows = [r.model_copy() for r in self._escalations.values()]
        return sorted(rows, key=lambda r: (not r.is_open, _number(r.escalation_id)))

    def tasks(self) -> list[TaskRow]:
        """Return the task board, in authorization order."""
        with self._lock:
            return [r.model_copy() for r in self._tasks.values()]

    def staff(self) -> list[StaffRow]:
        """Return the whole staff directory with availability."""
        with self._lock:
            return [r.model_copy() for r in self._staff]

    def available_staff(self) -> list[StaffRow]:
        """Return the HCWs a person may reassign to: available now (or of unknown availability, listed after)."""
        staff = self.staff()
        return ([s for s in staff if s.availability == 'available']
                + [s for s in staff if s.availability == 'unknown'])

    def hold(self) -> HoldView:
        """Return the team hold."""
        with self._lock:
            return self._hold.model_copy()

    def status(self) -> Status:
        """Return the status line."""
        with self._lock:
            return self._status.model_copy()

    @property
    def selected(self) -> EscalationRow | None:
        """The escalation the actions apply to."""
        with self._lock:
            row = self._escalations.get(self._selected)
            return row.model_copy() if row else None

    @property
    def operator_id(self) -> str:
        """Who is at the console."""
        with self._lock:
            return self._operator_id

    @property
    def pending(self) -> int:
        """Requests sent and not yet answered."""
        with self._lock:
            return self._pending

    def heard(self, *what: str) -> bool:
        """Return whether the team's state of each kind in ``what`` arrived ('escalations', 'hold', 'staff'...)."""
        with self._lock:
            return set(what) <= self._heard

    def can(self, action: str) -> bool:
        """Return whether ``action`` ('acknowledge', 'accept', 'reassign', 'retry', 'abort') applies now."""
        row = self.selected
        if row is None or not row.is_open:
            return False
        if action == 'acknowledge':
            return row.state == 'open'
        if action == 'accept':
            return bool(row.proposal)
        return action in ('reassign', 'retry', 'abort')

    def details(self) -> str:
        """Return the selected escalation in a few lines."""
        row = self.selected
        if row is None:
            return 'No escalation.'
        case = f' (case {row.patient_id})' if row.patient_id else ''
        lines = [f'{row.escalation_id} ({row.kind}, {row.severity}) on {row.task_id or "the team"}{case}: {row.state}'
                 + (' - HOLDS THE TEAM' if row.holds_team and row.is_open else ''),
                 f'raised by {row.raised_by}: {row.reason}',
                 f"options: {', '.join(row.options) or '-'}; manager's proposal: {row.proposal or '-'}"]
        if row.acknowledged_by:
            lines.append(f'acknowledged by {row.acknowledged_by}')
        if row.due_s is not None and row.is_open:
            lines.append(f'expires at t={row.due_s:.0f} s unless resolved')
        if row.outcome:
            lines.append(f'decision: {row.outcome}' + (f' - {row.note}' if row.note else ''))
        return '\n'.join(lines)

    # --- A person's actions -------------------------------------------------------------------

    def set_operator(self, operator_id: str) -> None:
        """Set who is at the console."""
        with self._lock:
            self._operator_id = operator_id.strip()
            self.version += 1

    def select(self, escalation_id: str) -> None:
        """Select the escalation the actions apply to."""
        with self._lock:
            if escalation_id in self._escalations:
                self._selected = escalation_id
                self.version += 1

    def acknowledge(self, note: str = '') -> bool:
        """Acknowledge the selected escalation; return whether a request was sent."""
        row = self._target('acknowledge')
        if row is None:
            return False
        self._send(f'acknowledge {row.escalation_id}',
                   lambda done: self.port.acknowledge(row.escalation_id, self.operator_id, note, done))
        return True

    def accept_proposal(self, note: str = '') -> bool:
        """Resolve the selected escalation with the manager's proposal."""
        return self._decide('accept', note=note)

    def reassign(self, hcw_id: str, note: str = '') -> bool:
        """Resolve the selected escalation: reassign to HCW ``hcw_id`` (picked from :meth:`available_staff`)."""
        if not str(hcw_id or '').strip():
            self._set_status('error', 'pick the HCW to reassign to')
            return False
        return self._decide('reassign', hcw_id=str(hcw_id).strip(), note=note)

    def retry(self, note: str = '') -> bool:
        """Resolve the selected escalation: retry the task."""
        return self._decide('retry', note=note)

    def abort(self, note: str = '') -> bool:
        """Resolve the selected escalation: abort the onboarding (only the reflection follows)."""
        return self._decide('abort', note=note)

    def send_instruction(self, text: str, task_id: str = '') -> bool:
        """Send a free-text instruction to the team (advisory for the manager)."""
        if not self._has_operator():
            return False
        if not str(text or '').strip():
            self._set_status('error', 'type the instruction first (it is empty)')
            return False
        self._send('instruction', lambda done: self.port.instruct(text.strip(), task_id, self.operator_id, done))
        return True

    def raise_concern(self, reason: str, task_id: str = '', severity: str = '') -> bool:
        """Raise a concern about ``task_id`` (default: the selected escalation's task, else the episode)."""
        if not self._has_operator():
            return False
        if not str(reason or '').strip():
            self._set_status('error', 'say what the concern is (the reason is empty)')
            return False
        task_id = task_id or ((self.selected.task_id if self.selected else '') or '')
        self._send('concern', lambda done: self.port.raise_escalation('concern', task_id, reason.strip(), severity,
                                                                      self.operator_id, done))
        return True

    def stop_and_hold(self, reason: str) -> bool:
        """Stop and hold the whole team (robots' goals cancelled) until an authorised operator resolves it."""
        if not self._has_operator():
            return False
        reason = str(reason or '').strip() or 'stop-and-hold from the supervisor console'
        self._send('stop-and-hold', lambda done: self.port.raise_escalation('stop_and_hold', '', reason, '',
                                                                            self.operator_id, done))
        return True

    # --- Internals ----------------------------------------------------------------------------

    def _decide(self, decision: str, hcw_id: str = '', note: str = '') -> bool:
        row = self._target(decision)
        if row is None:
            return False
        self._send(f'{decision} on {row.escalation_id}', lambda done: self.port.resolve(
            row.escalation_id, decision, hcw_id, note, self.operator_id, done))
        return True

    def _target(self, action: str) -> EscalationRow | None:
        if not self._has_operator():
            return None
        row = self.selected
        if row is None:
            self._set_status('error', 'select an escalation first')
            return None
        if not self.can(action):
            why = (f'{row.escalation_id} is {row.state}' if not row.is_open else
                   f"{row.escalation_id} has no manager's proposal" if action == 'accept' else
                   f'{row.escalation_id} is already acknowledged')
            self._set_status('error', f'cannot {action}: {why}')
            return None
        return row

    def _has_operator(self) -> bool:
        if self.operator_id:
            return True
        self._set_status('error', 'enter your operator ID first (the supervisor records who decides)')
        return False

    def _send(self, what: str, call: Callable[[Done], None]) -> None:
        with self._lock:
            self._pending += 1
        self._set_status('info', f'{what}: sent, waiting for the supervisor')

        def done(accepted: bool, message: str) -> None:
            with self._lock:
                self._pending -= 1
            self._set_status('ok' if accepted else 'error', f"{what}: {'accepted' if accepted else 'refused'} - "
                                                            f'{message}')
        try:
            call(done)
        except Exception as exc:  # noqa: BLE001 - a failed send is shown, never lost
            done(False, f'could not send: {exc}')

    def _set_status(self, level: str, text: str) -> None:
        with self._lock:
            self._status = Status(level=level, text=text)
            self.version += 1


def _number(identifier: str) -> int:
    tail = identifier.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else 0
