"""The escalation store: every escalation, step and instruction in SQLite (``escalations.sqlite``).

A restarted supervisor reads it back (:meth:`EscalationDesk.restore
<robot_team.core.escalations.desk.EscalationDesk.restore>`) to take up the open escalations and
the holds again, and with them the workflow (tasks, deadlines, patient cue, directives: table
``supervisor_state``, :meth:`EscalationDesk.restore_state
<robot_team.core.escalations.desk.EscalationDesk.restore_state>`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import NamedTuple

from robot_team.contracts.config import ConfigError
from robot_team.core.escalations.lifecycle import EscalationStep, InstructionRecord, Refusal, id_number
from robot_team.contracts.escalation_model import EscalationRecord

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
CREATE TABLE IF NOT EXISTS supervisor_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    saved_s REAL NOT NULL,
    saved_wall REAL NOT NULL,
    state_json TEXT NOT NULL
);
"""


class SavedState(NamedTuple):
    """The supervisor's state as last stored (:meth:`EscalationStore.saved_state`)."""

    state_json: str
    """The state as JSON (:class:`robot_team.core.supervisor_state.SupervisorState`), not yet validated."""
    saved_s: float
    """ROS time of the save, s."""
    saved_wall: float
    """Wall time of the save, s since the Unix epoch."""


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
    every field of :class:`EscalationRecord`), ``steps``, ``instructions`` and
    ``supervisor_state`` (one row: the supervisor's latest state as JSON). Thread-safe (one
    connection, one lock); each write is its own transaction, so a crash loses at most the
    step in progress. A file store is in WAL mode with ``synchronous=NORMAL``: a commit is
    durable against a crash of the process (the one a restart recovers from) without an
    fsync per write; a power loss may lose the last commits.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(str(self.path) if self.path else ':memory:', timeout=5.0,
                                         check_same_thread=False)
            if self.path:
                self._conn.execute('PRAGMA journal_mode=WAL')
                self._conn.execute('PRAGMA synchronous=NORMAL')
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
        return sorted(records, key=lambda r: id_number(r.escalation_id))

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

    def save_state(self, state_json: str, saved_s: float, saved_wall: float) -> None:
        """Replace the stored supervisor state with ``state_json`` (saved at ROS time ``saved_s``, wall ``saved_wall``).

        Raises
        ------
        sqlite3.Error
            If the database cannot be written.
        """
        with self._lock, self._conn:
            self._conn.execute('INSERT OR REPLACE INTO supervisor_state (id, saved_s, saved_wall, state_json) '
                               'VALUES (1, ?, ?, ?)', (float(saved_s), float(saved_wall), state_json))

    def saved_state(self) -> SavedState | None:
        """Return the supervisor state last stored by :meth:`save_state`, or None if none was."""
        with self._lock:
            row = self._conn.execute('SELECT state_json, saved_s, saved_wall FROM supervisor_state '
                                     'WHERE id = 1').fetchone()
        return None if row is None else SavedState(str(row[0]), float(row[1]), float(row[2]))

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()
