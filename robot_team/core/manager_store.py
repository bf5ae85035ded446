"""The manager's durable state: what it knows, saved in SQLite, so that a restarted manager takes it up.

A manager node killed mid-episode (issue 19) comes back with an empty memory; the team's topics
give some of it back (the patient cue, escalations and human decisions are transient local), but
not its own delegations: which HCW it asked for, which tasks still run. :class:`ManagerStore`
keeps the manager's observation (:class:`~robot_team.brains.base.ManagerObservation`, less what
was new since its last decision) and its role state (taken over by the protocol brain, held for an
escalation) in one row, written after every change; the manager core reads it back on start.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from robot_team.brains.base import ManagerObservation, PatientInfo
from robot_team.contracts.config import ConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS manager_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    state_json TEXT NOT NULL,
    saved_wall REAL NOT NULL
);
"""


class WaitingPatient(BaseModel):
    """A patient whose case waits for the case in progress, as the manager keeps them."""

    patient: PatientInfo
    arrived_s: float = Field(0.0, description='When the manager saw the arrival, ROS time, s.')


class OpenCase(BaseModel):
    """A case the manager serves, besides the first open one (``ManagerState.observation``)."""

    observation: ManagerObservation
    arrived_s: float = Field(0.0, description='When its patient arrived, ROS time, s.')


class ClosedCase(BaseModel):
    """A case the manager closed: its patient and outcome (success, failure, escalated)."""

    case_id: str
    outcome: str


class ManagerState(BaseModel):
    """What a restarted manager takes up."""

    observation: ManagerObservation = Field(default_factory=ManagerObservation,
                                            description='The first open case (none open: the team board).')
    arrived_s: float = Field(0.0, description="When the first open case's patient arrived, ROS time, s.")
    others: list[OpenCase] = Field(default_factory=list, description='The other open cases, in opening order.')
    taken_over: bool = Field(False, description='The protocol brain had taken over the role.')
    held_on: str = Field('', description="Escalation the manager held for ('' none).")
    waiting: list[WaitingPatient] = Field(default_factory=list, description='Cases waiting to open.')
    closed: list[ClosedCase] = Field(default_factory=list, description="This run's closed cases, in order.")
    lessons: list[str] = Field(default_factory=list, description="Lessons of this run's reflections, oldest first.")


class ManagerStore:
    """One SQLite row holding the manager's :class:`ManagerState` (``<run>/manager.sqlite``).

    Parameters
    ----------
    path
        The database file (created if missing); ``None`` or ``''``: nothing is kept.

    Raises
    ------
    ConfigError
        If the file cannot be opened as a manager store (the message names it).

    Notes
    -----
    Thread-safe (one connection, one lock); each save is one transaction (a crash loses at most
    the change in progress). A save costs one small write (about 0.1-1 ms here).
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self._lock = threading.Lock()
        self._db = None
        if self.path is None:
            return
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute('PRAGMA journal_mode=WAL')
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f'manager state {self.path}: not a manager store ({exc})') from None

    def save(self, state: ManagerState) -> None:
        """Replace the saved state (nothing kept without a path)."""
        if self._db is None:
            return
        text = state.model_dump_json()
        with self._lock:
            self._db.execute('INSERT OR REPLACE INTO manager_state (id, state_json, saved_wall) VALUES (1, ?, ?)',
                             (text, time.time()))

    def load(self) -> ManagerState | None:
        """Return the saved state, or None if there is none.

        Raises
        ------
        ConfigError
            If the saved state does not validate (the message names the file and the problem).
        """
        if self._db is None:
            return None
        with self._lock:
            row = self._db.execute('SELECT state_json FROM manager_state WHERE id = 1').fetchone()
        if row is None:
            return None
        try:
            return ManagerState.model_validate(json.loads(row[0]))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(f'manager state {self.path}: the saved state does not validate ({exc})') from None

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
