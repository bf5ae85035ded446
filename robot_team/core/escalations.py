"""Escalations to humans: lifecycle, policy, persistence and the team hold (no rclpy).

An escalation goes **open -> acknowledged -> resolved | expired**. :class:`EscalationDesk` runs
that lifecycle around the supervisor's :class:`~robot_team.core.supervisor.SupervisorCore`
(which keeps the workflow's side: tasks, rule 8, ``abort`` closing the episode):

- who may acknowledge, resolve and instruct (:class:`EscalationPolicy`, ``config/escalations.yaml``);
  anyone else is refused with the reason (:class:`Refusal`) and the attempt is recorded;
- deadlines per severity, re-notification of unacknowledged escalations, and the safe default
  when nobody answers (``hold`` the team, or ``abort``), recorded;
- escalations raised by a person: a concern, or stop-and-hold of the whole team;
- free-text instructions from a person to the team (published for the manager as advisory data);
- every step persisted in SQLite (:class:`EscalationStore`, ``escalations.sqlite`` beside the
  run's record), so a restarted supervisor takes up the open escalations and the holds again.

:class:`TeamHold` is the team's stop: while it is engaged, the robots' goals are cancelled
(through the injected :class:`DeskPorts`), the workflow gate refuses every delegation
(``WorkflowRule.HELD``), the supervisor's task deadlines are paused (and postponed by the held
time on release) and the manager is paused. Every hold belongs to a *hold escalation*; resolving
that escalation (any decision) releases it. :meth:`EscalationDesk.hold_team` is the one way to
engage it, for a person's stop-and-hold, for an expired escalation's safe default, or for any
other safe default of the supervisor.

All times are ROS times in s (sim time in runs) unless named ``*_wall`` (s since the Unix epoch).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from enum import Enum
from pathlib import Path
from typing import Callable, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from robot_team.config import ConfigError, _validate, load_yaml, share_dir
from robot_team.events import EventKind
from robot_team.names import SUPERVISOR, Robot
from robot_team.reports import OPERATIONAL_TASKS
from robot_team.workflow import Authorization, EscalationState, WorkflowRule

Emit = Callable[..., object]
"""``emit(kind, summary, *, target='', reason='', **data)``, as :meth:`EventEmitter.emit`."""


class Severity(str, Enum):
    """How urgent an escalation is; sets its deadline (``EscalationPolicy.deadlines_s``)."""

    NORMAL = 'normal'
    HIGH = 'high'
    CRITICAL = 'critical'


class EscalationKind(str, Enum):
    """What an escalation is about (``Escalation.msg`` ``KIND_*``)."""

    ISSUE = 'issue'        # the team could not handle a task (manager or supervisor)
    CONCERN = 'concern'    # a person's concern
    HOLD = 'hold'          # the team is held until it is resolved


class LifecycleState(str, Enum):
    """Where an escalation stands (``Escalation.msg`` ``STATE_*``)."""

    OPEN = 'open'
    ACKNOWLEDGED = 'acknowledged'
    RESOLVED = 'resolved'
    EXPIRED = 'expired'


class Refusal(str, Enum):
    """Why a person's request was refused (the services' ``REFUSAL_*`` values; NONE: accepted)."""

    NONE = ''
    UNKNOWN_ESCALATION = 'unknown_escalation'
    CLOSED = 'closed'
    UNAUTHORISED = 'unauthorised'
    BAD_DECISION = 'bad_decision'
    HCW_MISSING = 'hcw_missing'
    HCW_NOT_IN_DIRECTORY = 'hcw_not_in_directory'
    HCW_UNAVAILABLE = 'hcw_unavailable'
    EMPTY = 'empty'
    BAD_VALUE = 'bad_value'
    UNKNOWN_TASK = 'unknown_task'


RESOLVE_DECISIONS = ('accept', 'reassign', 'retry', 'abort')
"""Decisions a person may send: ``accept`` takes the manager's proposal (published as that decision)."""

RAISE_KINDS = ('concern', 'stop_and_hold')
"""Escalations a person may raise (``RaiseEscalation.srv`` ``KIND_*``)."""

HOLD_OPTIONS = ['retry', 'abort']
"""Options of a hold escalation with no others: ``retry`` releases and carries on, ``abort`` ends the episode."""


# --- Policy ---------------------------------------------------------------------------------

class SeverityBySource(BaseModel):
    """Default severity of escalations by who raised them (stop-and-hold is always critical)."""

    model_config = ConfigDict(extra='forbid')
    manager: Severity = Severity.HIGH
    supervisor: Severity = Severity.HIGH
    concern: Severity = Severity.NORMAL


class EscalationPolicy(BaseModel):
    """Who may decide, how long escalations wait, and what happens when nobody answers.

    Loaded from ``config/escalations.yaml`` by :func:`load_escalation_policy`. Times are ROS
    time, s.
    """

    model_config = ConfigDict(extra='forbid')
    operators: list[str] = Field(min_length=1, description='Operator IDs allowed to acknowledge, resolve and '
                                                           'instruct.')
    deadlines_s: dict[Severity, float] = Field(
        default_factory=lambda: {Severity.CRITICAL: 120.0, Severity.HIGH: 300.0, Severity.NORMAL: 600.0},
        description='Time from opening to expiry per severity, s (hold escalations never expire).')
    renotify_s: float = Field(30.0, gt=0, description='Re-announce an unacknowledged escalation this often, s.')
    on_expiry: Literal['hold', 'abort'] = Field('hold', description='The safe default when an escalation expires.')
    severity: SeverityBySource = Field(default_factory=SeverityBySource)

    @field_validator('operators')
    @classmethod
    def _no_blank_operator(cls, value: list[str]) -> list[str]:
        ids = [str(v).strip() for v in value]
        if any(not v for v in ids):
            raise ValueError('operator IDs must not be empty')
        return ids

    @field_validator('deadlines_s')
    @classmethod
    def _every_severity(cls, value: dict) -> dict:
        missing = [s.value for s in Severity if s not in value]
        if missing:
            raise ValueError(f"missing deadline(s) for severity {', '.join(missing)}")
        bad = [f'{k.value}: {v}' for k, v in value.items() if not v > 0]
        if bad:
            raise ValueError(f"deadlines must be positive seconds ({', '.join(bad)})")
        return value

    def authorised(self, operator_id: str) -> bool:
        """Return whether ``operator_id`` may acknowledge, resolve and instruct."""
        return str(operator_id or '').strip() in self.operators

    def unauthorised_message(self, operator_id: str, what: str) -> str:
        """Return the refusal for an operator who may not ``what`` (names who may)."""
        who = str(operator_id or '').strip()
        return (f"operator {who!r} is not authorised to {what}; authorised operators: {', '.join(self.operators)} "
                f"(escalation policy, config/escalations.yaml)" if who else
                f"{what} needs an operator_id; authorised operators: {', '.join(self.operators)}")


def load_escalation_policy(path: str | os.PathLike | None = None) -> EscalationPolicy:
    """Load the escalation policy from ``path`` (default ``config/escalations.yaml``).

    Raises
    ------
    ConfigError
        If the file is missing, not YAML, or does not validate (the message names the field).
    """
    path = Path(path) if path else share_dir() / 'config' / 'escalations.yaml'
    return _validate(EscalationPolicy, load_yaml(path, 'escalation policy'), path, 'escalation policy')


# --- Records --------------------------------------------------------------------------------

class EscalationRecord(BaseModel):
    """One escalation's lifecycle: who raised it, what was offered, who did what and when."""

    escalation_id: str
    task_id: str = ''
    task_type: str = ''
    raised_by: str
    reason: str
    options: list[str] = Field(default_factory=list)
    kind: EscalationKind = EscalationKind.ISSUE
    severity: Severity = Severity.HIGH
    state: LifecycleState = LifecycleState.OPEN
    proposal: str = Field('', description="The manager's proposal (its first option), '' if none.")
    opened_s: float = 0.0
    opened_wall: float = 0.0
    due_s: float | None = Field(None, description='ROS time it expires unless resolved; None: never (holds).')
    notifications: int = 1
    last_notified_s: float = 0.0
    acknowledged_by: str = ''
    acknowledged_s: float | None = None
    acknowledged_wall: float | None = None
    decision: str = ''
    hcw_id: str = ''
    decided_by: str = ''
    note: str = ''
    closed_s: float | None = None
    closed_wall: float | None = None
    holds_team: bool = False
    safe_default: str = Field('', description="What the supervisor did when it expired ('hold', 'abort', "
                              "'takeover': already in force, nothing more).")
    covered_by: str = Field('', description="A safe default already in force for it ('takeover': the protocol "
                            "brain has the manager's role), so its expiry holds nothing.")
    followed_by: str = Field('', description='The hold escalation opened when this one expired.')

    @property
    def is_open(self) -> bool:
        """Whether a person may still acknowledge or resolve it."""
        return self.state in (LifecycleState.OPEN, LifecycleState.ACKNOWLEDGED)


class EscalationStep(BaseModel):
    """One step of an escalation (or a refused attempt at one), as stored and as an event."""

    escalation_id: str
    step: Literal['opened', 'renotified', 'acknowledged', 'resolved', 'expired', 'restored', 'refused']
    actor: str
    sim_s: float
    wall_s: float
    accepted: bool = True
    refusal: Refusal = Refusal.NONE
    message: str = ''
    data: dict = Field(default_factory=dict)


class InstructionRecord(BaseModel):
    """A person's free-text instruction to the team (or a refused attempt at one)."""

    instruction_id: str = ''
    operator_id: str
    task_id: str = ''
    text: str
    sim_s: float
    wall_s: float
    accepted: bool = True
    refusal: Refusal = Refusal.NONE
    message: str = ''


class HoldState(BaseModel):
    """Whether the team is held, by which hold escalations, since when."""

    active: bool = False
    escalation_ids: list[str] = Field(default_factory=list)
    reason: str = ''
    held_by: str = ''
    since_s: float | None = None


class Answer(BaseModel):
    """The desk's answer to a person's request (mapped onto the services' responses)."""

    accepted: bool
    refusal: Refusal = Refusal.NONE
    message: str
    escalation_id: str = ''
    instruction_id: str = ''


# --- Persistence ----------------------------------------------------------------------------

_STORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS escalations (
    escalation_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    kind TEXT NOT NULL,
    severity TEXT NOT NULL,
    task_id TEXT NOT NULL,
    raised_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    decision TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    holds_team INTEGER NOT NULL,
    record_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    escalation_id TEXT NOT NULL,
    step TEXT NOT NULL,
    actor TEXT NOT NULL,
    sim_s REAL NOT NULL,
    wall_s REAL NOT NULL,
    accepted INTEGER NOT NULL,
    refusal TEXT NOT NULL,
    message TEXT NOT NULL,
    data_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instructions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    instruction_id TEXT NOT NULL,
    operator_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    text TEXT NOT NULL,
    sim_s REAL NOT NULL,
    wall_s REAL NOT NULL,
    accepted INTEGER NOT NULL,
    refusal TEXT NOT NULL,
    message TEXT NOT NULL
);
"""


class EscalationStore:
    """SQLite record of escalations, their steps (refused attempts included) and instructions.

    Parameters
    ----------
    path
        The database file (created if missing, e.g. ``<run>/escalations.sqlite``); ``None`` or
        ``''``: in memory (nothing survives the process).

    Raises
    ------
    ConfigError
        If the file cannot be opened or is not an escalation store.

    Notes
    -----
    Tables ``escalations`` (one row per escalation, its latest state; ``record_json`` holds
    every field of :class:`EscalationRecord`), ``steps`` and ``instructions``. Thread-safe (one
    connection, one lock); each write is its own transaction, so a crash loses at most the
    step in progress.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(str(self.path) if self.path else ':memory:', timeout=5.0,
                                         check_same_thread=False)
            self._conn.executescript(_STORE_SCHEMA)
        except sqlite3.Error as exc:
            raise ConfigError(f'escalation store {self.path}: cannot open ({exc})') from exc

    def save(self, record: EscalationRecord) -> None:
        """Insert or update ``record``."""
        with self._lock, self._conn:
            self._conn.execute(
                'INSERT OR REPLACE INTO escalations (escalation_id, state, kind, severity, task_id, raised_by, '
                'reason, decision, decided_by, holds_team, record_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (record.escalation_id, record.state.value, record.kind.value, record.severity.value, record.task_id,
                 record.raised_by, record.reason, record.decision, record.decided_by, int(record.holds_team),
                 record.model_dump_json()))

    def add_step(self, step: EscalationStep) -> None:
        """Append one step (or refused attempt)."""
        with self._lock, self._conn:
            self._conn.execute(
                'INSERT INTO steps (escalation_id, step, actor, sim_s, wall_s, accepted, refusal, message, data_json) '
                'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (step.escalation_id, step.step, step.actor, step.sim_s, step.wall_s, int(step.accepted),
                 step.refusal.value, step.message, json.dumps(step.data, default=str)))

    def add_instruction(self, instruction: InstructionRecord) -> None:
        """Append one instruction (or refused attempt)."""
        with self._lock, self._conn:
            self._conn.execute(
                'INSERT INTO instructions (instruction_id, operator_id, task_id, text, sim_s, wall_s, accepted, '
                'refusal, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (instruction.instruction_id, instruction.operator_id, instruction.task_id, instruction.text,
                 instruction.sim_s, instruction.wall_s, int(instruction.accepted), instruction.refusal.value,
                 instruction.message))

    def escalations(self) -> list[EscalationRecord]:
        """Return every stored escalation, in ID order (``esc-2`` before ``esc-10``)."""
        with self._lock:
            rows = self._conn.execute('SELECT record_json FROM escalations').fetchall()
        records = [EscalationRecord.model_validate_json(row[0]) for row in rows]
        return sorted(records, key=lambda r: _id_number(r.escalation_id))

    def steps(self, escalation_id: str | None = None) -> list[EscalationStep]:
        """Return the stored steps, oldest first: all, or those of ``escalation_id``."""
        query = 'SELECT escalation_id, step, actor, sim_s, wall_s, accepted, refusal, message, data_json FROM steps'
        args: tuple = ()
        if escalation_id is not None:
            query, args = query + ' WHERE escalation_id = ?', (escalation_id,)
        with self._lock:
            rows = self._conn.execute(query + ' ORDER BY id', args).fetchall()
        return [EscalationStep(escalation_id=r[0], step=r[1], actor=r[2], sim_s=r[3], wall_s=r[4],
                               accepted=bool(r[5]), refusal=Refusal(r[6]), message=r[7], data=json.loads(r[8]))
                for r in rows]

    def instructions(self) -> list[InstructionRecord]:
        """Return every stored instruction, refused attempts included, oldest first."""
        with self._lock:
            rows = self._conn.execute('SELECT instruction_id, operator_id, task_id, text, sim_s, wall_s, accepted, '
                                      'refusal, message FROM instructions ORDER BY id').fetchall()
        return [InstructionRecord(instruction_id=r[0], operator_id=r[1], task_id=r[2], text=r[3], sim_s=r[4],
                                  wall_s=r[5], accepted=bool(r[6]), refusal=Refusal(r[7]), message=r[8]) for r in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()


def _id_number(identifier: str) -> int:
    tail = identifier.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else 0


# --- Staff availability ---------------------------------------------------------------------

class StaffEntry(BaseModel):
    """One HCW: directory record plus the latest availability from the RTLS."""

    hcw_id: str
    name: str = ''
    specialty: str = ''
    role: str = ''
    area: str = ''
    availability: str = Field('unknown', description="available | busy | off_shift | unknown (no RTLS answer).")
    detail: str = ''


class StaffCheck:
    """The staff directory with availability, as the desk checks ``reassign`` decisions against it.

    Parameters
    ----------
    directory
        The run's :class:`~robot_team.directory.StaffDirectory`; ``None``: no directory check
        (any HCW ID is accepted, recorded as unchecked).

    Notes
    -----
    Availability comes from the RTLS (``ed/rtls/locate_staff``) through :meth:`update`; until
    an answer arrives every HCW's availability is ``unknown`` and only the directory is checked.
    Thread-safe.
    """

    def __init__(self, directory=None):
        self._directory = directory
        self._lock = threading.Lock()
        self._located: dict[str, dict] = {}
        self.located_s: float | None = None

    @property
    def checks_directory(self) -> bool:
        """Whether an HCW must be in a directory."""
        return self._directory is not None

    def update(self, located: list[dict], now_s: float) -> bool:
        """Take an RTLS answer (``hcw_id, area, availability, detail`` per HCW); return whether anything changed."""
        fresh = {str(s['hcw_id']): {k: str(s.get(k, '')) for k in ('area', 'availability', 'detail')} for s in located}
        with self._lock:
            changed = fresh != self._located or self.located_s is None
            self._located, self.located_s = fresh, now_s
            return changed

    def entries(self) -> list[StaffEntry]:
        """Return every HCW (directory order; HCWs only the RTLS knows after them)."""
        with self._lock:
            located = dict(self._located)
        entries = []
        records = self._directory.staff() if self._directory is not None else []
        for record in records:
            where = located.pop(record.hcw_id, {})
            entries.append(StaffEntry(hcw_id=record.hcw_id, name=record.name, specialty=record.specialty,
                                      role=record.role, area=where.get('area', ''),
                                      availability=where.get('availability') or 'unknown',
                                      detail=where.get('detail', '')))
        for hcw_id, where in located.items():
            entries.append(StaffEntry(hcw_id=hcw_id, **where))
        return entries

    def check(self, hcw_id: str) -> tuple[Refusal, str]:
        """Return ``(Refusal.NONE, note)`` if ``hcw_id`` may be assigned, else the refusal and why."""
        hcw_id = str(hcw_id).strip()
        if self._directory is not None:
            record = self._directory.by_id(hcw_id)
            if record is None:
                known = ', '.join(f'#{r.hcw_id}' for r in self._directory.staff())
                return Refusal.HCW_NOT_IN_DIRECTORY, (f'HCW #{hcw_id} is not in the staff directory '
                                                      f'(known: {known})')
            who = f'HCW #{hcw_id} ({record.name})'
        else:
            who = f'HCW #{hcw_id}'
        with self._lock:
            where, when = self._located.get(hcw_id), self.located_s
        if where is None:
            return Refusal.NONE, f'{who}: availability unknown (no location system answer)'
        if where['availability'] != 'available':
            available = [f'#{h}' for h, w in sorted(self._located.items()) if w['availability'] == 'available']
            return Refusal.HCW_UNAVAILABLE, (f"{who} is not available ({where['availability']}"
                                             + (f": {where['detail']}" if where['detail'] else '')
                                             + f', location system at t={when:.1f} s); available: '
                                             + (', '.join(available) or 'none'))
        return Refusal.NONE, f"{who} is available in {where['area']}"


# --- The team hold --------------------------------------------------------------------------

class TeamHold:
    """The team's stop: engaged by hold escalations, released when each is resolved.

    Parameters
    ----------
    emit
        Event sink (``team_held``, ``team_released``).
    stop_robots
        Called with the reason when the hold is engaged (and again when one more hold joins):
        cancel every robot's goals (the node cancels every goal of each robot's
        ``execute_task`` and Nav2 actions).
    publish
        Called with the :class:`HoldState` whenever it changes (``team/hold``).

    Notes
    -----
    Several holds may be engaged at once; the team stays held until the last is released.
    Thread-safe.
    """

    def __init__(self, emit: Emit, stop_robots: Callable[[str], None], publish: Callable[[HoldState], None]):
        self._emit = emit
        self._stop_robots = stop_robots
        self._publish = publish
        self._lock = threading.Lock()
        self._holds: dict[str, tuple[str, str, float]] = {}   # escalation ID -> (reason, by, since)
        self.held_s = 0.0
        """Total ROS time the team has been held (s), over every released hold."""

    @property
    def active(self) -> bool:
        """Whether the team is held."""
        with self._lock:
            return bool(self._holds)

    def state(self) -> HoldState:
        """Return the current hold (a copy)."""
        with self._lock:
            if not self._holds:
                return HoldState()
            first = min(self._holds.values(), key=lambda h: h[2])
            return HoldState(active=True, escalation_ids=list(self._holds), reason=first[0], held_by=first[1],
                             since_s=first[2])

    def engage(self, escalation_id: str, reason: str, by: str, now_s: float) -> None:
        """Hold the team for ``escalation_id``: stop the robots, publish, record ``team_held``."""
        with self._lock:
            first = not self._holds
            self._holds[escalation_id] = (reason, by, now_s)
        self._emit(EventKind.TEAM_HELD, f'team held by {escalation_id} ({by})', target=escalation_id, reason=reason,
                   escalation_id=escalation_id, held_by=by, first=first)
        self._stop_robots(reason)
        self._publish(self.state())

    def release(self, escalation_id: str, by: str, now_s: float) -> float:
        """Release ``escalation_id``'s hold; return the ROS time the team was held if it is now free, else 0."""
        with self._lock:
            hold = self._holds.pop(escalation_id, None)
            if hold is None:
                return 0.0
            free = not self._holds
            since = min([hold[2], *(h[2] for h in self._holds.values())])
            held_for = max(0.0, now_s - since) if free else 0.0
            self.held_s += held_for
        self._emit(EventKind.TEAM_RELEASED, f'{escalation_id} released by {by}' + ('' if free else
                   ' (the team stays held by ' + ', '.join(self.state().escalation_ids) + ')'),
                   target=escalation_id, escalation_id=escalation_id, released_by=by, team_free=free,
                   held_for_s=held_for)
        self._publish(self.state())
        return held_for


# --- The desk -------------------------------------------------------------------------------

class DeskPorts(Protocol):
    """The ROS side of the desk (the supervisor node)."""

    def publish_escalation(self, record: EscalationRecord, now_s: float) -> None:
        """Publish an escalation's current state (``team/escalations``)."""

    def publish_instruction(self, instruction: InstructionRecord) -> None:
        """Publish an accepted instruction (``team/instructions``)."""

    def publish_hold(self, hold: HoldState) -> None:
        """Publish the team hold (``team/hold``)."""

    def stop_robots(self, reason: str) -> None:
        """Cancel every goal of every robot (``execute_task`` and Nav2 actions)."""


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
        self.hold = TeamHold(emit, ports.stop_robots, ports.publish_hold)
        core.on_escalation_opened = self._opened
        core.on_hold_team = self.hold_on
        core.on_takeover = self.covered_by_takeover

    # -- reading --

    def records(self) -> list[EscalationRecord]:
        """Return a copy of every escalation's record, in ID order."""
        with self._records_lock:
            return [r.model_copy(deep=True) for r in sorted(self._records.values(),
                                                            key=lambda r: _id_number(r.escalation_id))]

    def record(self, escalation_id: str) -> EscalationRecord | None:
        """Return a copy of one escalation's record, if any."""
        with self._records_lock:
            record = self._records.get(escalation_id)
            return record.model_copy(deep=True) if record else None

    # -- opening (hook of the core, then its publish callback) --

    def _opened(self, esc: EscalationState) -> dict:
        """Create the lifecycle record of an escalation the core opened; return its fields for the event."""
        opening, self._opening = self._opening, {}
        raised_by = esc.raised_by
        if 'kind' in opening:
            kind, severity = opening['kind'], opening['severity']
        elif raised_by == Robot.MANAGER.value:
            kind, severity = EscalationKind.ISSUE, self.policy.severity.manager
        else:
            kind, severity = EscalationKind.ISSUE, self.policy.severity.supervisor
        proposal = opening.get('proposal', esc.options[0] if raised_by == Robot.MANAGER.value and esc.options
                               else '')
        holds = kind is EscalationKind.HOLD
        record = EscalationRecord(
            escalation_id=esc.escalation_id, task_id=esc.task_id, task_type=esc.task_type, raised_by=raised_by,
            reason=esc.reason, options=list(esc.options), kind=kind, severity=severity, proposal=proposal,
            opened_s=esc.opened_s, opened_wall=self._wall(), last_notified_s=esc.opened_s, holds_team=holds,
            due_s=None if holds else esc.opened_s + self.policy.deadlines_s[severity])
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='opened', actor=raised_by,
                                          sim_s=esc.opened_s, wall_s=record.opened_wall,
                                          data={'kind': kind.value, 'severity': severity.value}))
        return {'kind': kind.value, 'severity': severity.value, 'proposal': proposal, 'due_s': record.due_s,
                'holds_team': holds, 'opened_wall': record.opened_wall, 'state': record.state.value}

    def announce(self, esc: EscalationState) -> None:
        """Publish an escalation the core announced (its lifecycle record)."""
        record = self.record(esc.escalation_id)
        if record is not None:
            self._ports.publish_escalation(record, esc.opened_s)

    # -- the workflow gate while held --

    def authorize(self, task_type: str, robot: str, reason: str, requested_by: str, now_s: float) -> Authorization:
        """Refuse every delegation while the team is held (rule ``held``); else ask the core."""
        hold = self.hold.state()
        if not hold.active:
            return self.core.authorize(task_type, robot, reason, requested_by, now_s)
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
        tasks = self.core.policy.snapshot().tasks
        if task_id and not any(t.task_id == task_id for t in tasks):
            known = ', '.join(t.task_id for t in tasks) or 'none yet'
            return self._refuse('raise', '', Refusal.UNKNOWN_TASK, f"unknown task ID {task_id!r} (tasks: {known})",
                                now_s, operator_id, attempt)
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
            running = [t for t in self.core.policy.snapshot().tasks
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
        record.state = LifecycleState.ACKNOWLEDGED
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
        accepted, message = self.core.resolve(escalation_id, decision, hcw_id if decision == 'reassign' else '',
                                              note, operator_id, now_s)
        if not accepted:   # recorded by the core as input_error
            return Answer(accepted=False, refusal=Refusal.BAD_DECISION, escalation_id=escalation_id, message=message)
        record.state, record.decision = LifecycleState.RESOLVED, decision
        record.hcw_id = hcw_id if decision == 'reassign' else ''
        record.decided_by, record.note = operator_id, note
        record.closed_s, record.closed_wall = now_s, self._wall()
        self._save(record, EscalationStep(escalation_id=escalation_id, step='resolved', actor=operator_id,
                                          sim_s=now_s, wall_s=record.closed_wall, message=message,
                                          data={'decision': decision, 'hcw_id': record.hcw_id, 'note': note,
                                                'accepted_proposal': accepted_proposal, 'hcw_check': check_note}))
        self._ports.publish_escalation(record, now_s)
        if record.holds_team:
            self._release(escalation_id, operator_id, now_s)
        return Answer(accepted=True, escalation_id=escalation_id, message=message
                      + (f' ({check_note})' if check_note else '')
                      + ('; the team hold is released' if record.holds_team and not self.hold.active else ''))

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
        tasks = self.core.policy.snapshot().tasks
        if task_id and not any(t.task_id == task_id for t in tasks):
            return refuse(Refusal.UNKNOWN_TASK, f"unknown task ID {task_id!r} (tasks: "
                                                f"{', '.join(t.task_id for t in tasks) or 'none yet'})")
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

    def tick(self, now_s: float) -> None:
        """Run the supervisor's deadlines (paused while held), expire and re-notify escalations."""
        if not self.hold.active:
            self.core.check_deadlines(now_s)
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
        safe = record.covered_by or self.policy.on_expiry
        waited = now_s - record.opened_s
        why = (f'no authorised operator resolved {record.escalation_id} within '
               f'{self.policy.deadlines_s[record.severity]:g} s ({record.severity.value}); safe default: {safe}')
        if record.covered_by:
            why += ' (already in force: nothing more applied)'
        record.state, record.safe_default = LifecycleState.EXPIRED, safe
        record.decided_by, record.closed_s, record.closed_wall = SUPERVISOR, now_s, self._wall()
        record.decision = safe
        self._save(record, EscalationStep(escalation_id=record.escalation_id, step='expired', actor=SUPERVISOR,
                                          sim_s=now_s, wall_s=record.closed_wall, message=why,
                                          data={'safe_default': safe, 'waited_s': waited}))
        self._emit(EventKind.ESCALATION_EXPIRED, f'{record.escalation_id} expired unanswered', target=record.task_id,
                   reason=why, escalation_id=record.escalation_id, task_id=record.task_id,
                   severity=record.severity.value, safe_default=safe, waited_s=waited,
                   acknowledged_by=record.acknowledged_by)
        if record.covered_by:
            record.note = f'expired under the safe default already in force ({record.covered_by})'
            self._save(record)
        elif safe == 'abort':
            note = f'safe default: {record.escalation_id} expired unanswered'
            accepted, message = self.core.resolve(record.escalation_id, 'abort', '', note, SUPERVISOR, now_s)
            record.note = note if accepted else message
            self._save(record)
        else:
            follow = self.hold_team(f'{record.escalation_id} expired unanswered: {record.reason}', by=SUPERVISOR,
                                    task_id=record.task_id, options=record.options or None,
                                    proposal=record.proposal, now_s=now_s)
            record.followed_by = follow
            record.note = f'the team is held until {follow} is resolved'
            self._save(record)
        self._ports.publish_escalation(record, now_s)

    # -- restart --

    def restore(self, now_s: float) -> list[str]:
        """Take up the stored escalations after a restart: re-publish the open ones, re-engage holds.

        Every stored escalation goes back into the core's policy (so IDs continue and open ones
        can be resolved); returns the IDs of the open ones (each recorded as ``escalation_restored``).
        """
        restored = []
        for record in self.store.escalations():
            status = 'resolved' if record.state in (LifecycleState.RESOLVED, LifecycleState.EXPIRED) else 'open'
            self.core.policy.restore_escalation(EscalationState(
                escalation_id=record.escalation_id, task_id=record.task_id, task_type=record.task_type,
                raised_by=record.raised_by, reason=record.reason, options=record.options, opened_s=record.opened_s,
                status=status, decision=record.decision if record.state is LifecycleState.RESOLVED else '',
                hcw_id=record.hcw_id, note=record.note, operator_id=record.decided_by, resolved_s=record.closed_s))
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
            if record.holds_team:
                self.hold.engage(record.escalation_id, record.reason, record.raised_by, now_s)
        if not self.hold.active:
            self._ports.publish_hold(self.hold.state())
        return restored

    # -- internals --

    def _release(self, escalation_id: str, by: str, now_s: float) -> None:
        held_for = self.hold.release(escalation_id, by, now_s)
        if held_for > 0:   # nobody could act while held: the workflow's deadlines move on by that long
            self.core.policy.postpone_deadlines(held_for)

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
            return self._refuse(step, escalation_id, Refusal.CLOSED, why, now_s, operator_id, attempt)
        return None

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
