"""The institutional staff directory: who works in the ED, their badges, and rooms' care teams.

The directory is a SQLite database (stdlib ``sqlite3``) built from ``config/staff.yaml`` at the
start of every run (:meth:`StaffDirectory.create`) and opened by every process that needs it
(:class:`StaffDirectory`). Three tables:

``staff(hcw_id PK, badge_id UNIQUE, name, specialty, role, home_area)``
    Every HCW; ``badge_id`` is what the door badge readers read.
``care_teams(room, hcw_id, role)``
    Standing care-team members per room.
``check_ins(room, hcw_id, badge_id, stamp_s)``
    HCWs who checked in at a room's door (badge scan); they join the room's care team.

Text read from the database is data: it is only ever bound as query parameters and returned
inside validated records, never formatted into SQL or interpreted.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from robot_team.contracts.config import ConfigError, StaffSeed, is_staff_database, load_staff_seed

BUSY_TIMEOUT_S = 5.0
"""How long a query waits for another process's write lock before failing, s."""

_SCHEMA = """
CREATE TABLE staff (
    hcw_id TEXT PRIMARY KEY,
    badge_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    specialty TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT '',
    home_area TEXT NOT NULL DEFAULT ''
);
CREATE TABLE care_teams (
    room TEXT NOT NULL,
    hcw_id TEXT NOT NULL REFERENCES staff(hcw_id),
    role TEXT NOT NULL,
    PRIMARY KEY (room, hcw_id)
);
CREATE TABLE check_ins (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    room TEXT NOT NULL,
    hcw_id TEXT NOT NULL REFERENCES staff(hcw_id),
    badge_id TEXT NOT NULL,
    stamp_s REAL NOT NULL
);
CREATE INDEX check_ins_room ON check_ins(room);
"""

_REQUIRED_COLUMNS: dict[str, set[str]] = {
    'staff': {'hcw_id', 'badge_id', 'name', 'specialty', 'role', 'home_area'},
    'care_teams': {'room', 'hcw_id', 'role'},
    'check_ins': {'room', 'hcw_id', 'badge_id', 'stamp_s'},
}


class DirectoryError(ConfigError):
    """A staff directory database that cannot be used (missing, not SQLite, wrong tables)."""


class StaffRecord(BaseModel):
    """One HCW as the directory knows them."""

    hcw_id: str = Field(description="HCW number, e.g. '80'.")
    badge_id: str = Field(description="ID encoded on the HCW's badge, e.g. 'ED-0080'.")
    name: str
    specialty: str = Field(description='Physician, Nurse, Technician...')
    role: str = Field('', description="Usual care-team role, e.g. 'Attending physician'.")
    home_area: str = Field('', description='Room where the HCW is usually found.')


class CareTeamEntry(BaseModel):
    """One member of a room's care team, with the role they hold there."""

    hcw_id: str
    badge_id: str
    name: str
    specialty: str
    role: str = Field(description="Role on this room's team (the standing role, or the staff role; the specialty "
                                  'where the directory gives neither).')
    source: Literal['standing', 'check_in'] = Field(
        description="'standing': listed in care_teams; 'check_in': badged in at the room's door.")
    checked_in_s: float | None = Field(None, description='ROS time of the latest check-in, s (None: never).')


class CheckInRecord(BaseModel):
    """One row of ``check_ins``: an HCW badged in at a room's door."""

    room: str
    hcw_id: str
    badge_id: str = Field(description='The badge the check-in was recorded with.')
    stamp_s: float = Field(description='ROS time of the check-in, s (sim time under use_sim_time).')


class StaffDirectory:
    """Open an existing staff directory database.

    Parameters
    ----------
    path
        The SQLite file, as written by :meth:`create`. It is opened read-write with SQLite's
        URI ``mode=rw``, so a wrong path never creates an empty database.

    Raises
    ------
    DirectoryError
        If the file is missing, is not a SQLite database, or lacks a table or column; the
        message names the path and what was wrong.

    Notes
    -----
    Thread-safe: one connection (``check_same_thread=False``) guarded by a lock. Several
    processes may open the same file; SQLite serializes writers and each query waits up to
    :data:`BUSY_TIMEOUT_S` for a lock held by another process.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        if not self.path.is_file():
            raise DirectoryError(f'staff directory {self.path}: no such file '
                                 f'(create it from staff.yaml first)')
        uri = self.path.resolve().as_uri() + '?mode=rw'
        try:
            self._conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        except sqlite3.Error as exc:
            raise DirectoryError(f'staff directory {self.path}: cannot open ({exc})') from exc
        try:
            self._conn.execute(f'PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}')
            self._conn.execute('PRAGMA foreign_keys = ON')
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise DirectoryError(f'staff directory {self.path}: not a usable SQLite database '
                                 f'({exc})') from exc
        except DirectoryError:
            self._conn.close()
            raise

    @classmethod
    def create(cls, path: str | os.PathLike, seed: StaffSeed) -> 'StaffDirectory':
        """Build a fresh directory database at ``path`` from ``seed`` and open it.

        The database is written to a temporary file next to ``path`` and moved into place, so
        another process never sees a half-built directory; a file already at ``path`` is
        replaced (with its SQLite journal files).

        Raises
        ------
        DirectoryError
            If the seed contradicts itself (duplicate HCW or badge, a care-team member who is
            not on staff) or the file cannot be written.
        """
        path = Path(path)
        tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
        tmp.unlink(missing_ok=True)
        try:
            conn = sqlite3.connect(str(tmp))
            try:
                conn.execute('PRAGMA foreign_keys = ON')
                conn.executescript(_SCHEMA)
                with conn:
                    conn.executemany(
                        'INSERT INTO staff (hcw_id, badge_id, name, specialty, role, home_area) '
                        'VALUES (?, ?, ?, ?, ?, ?)',
                        [(m.hcw_id, m.badge_id, m.name, m.specialty, m.role, m.area) for m in seed.staff])
                    conn.executemany(
                        'INSERT INTO care_teams (room, hcw_id, role) VALUES (?, ?, ?)',
                        [(room, m.hcw_id, m.role)
                         for room, members in seed.care_teams.items() for m in members])
            finally:
                conn.close()
            for suffix in ('-journal', '-wal', '-shm'):   # stale journals must not meet the new file
                Path(f'{path}{suffix}').unlink(missing_ok=True)
            os.replace(tmp, path)
        except sqlite3.IntegrityError as exc:
            tmp.unlink(missing_ok=True)
            raise DirectoryError(f'staff directory {path}: the seed contradicts itself ({exc}); '
                                 f'hcw_id and badge_id must be unique and care-team members on staff'
                                 ) from exc
        except (sqlite3.Error, OSError) as exc:
            tmp.unlink(missing_ok=True)
            raise DirectoryError(f'staff directory {path}: cannot write ({exc})') from exc
        return cls(path)

    # --- Lookups ------------------------------------------------------------------------------

    def by_badge(self, badge_id: str) -> StaffRecord | None:
        """Return the HCW whose badge reads exactly ``badge_id``, or None if no badge matches."""
        rows = self._query('SELECT hcw_id, badge_id, name, specialty, role, home_area FROM staff '
                           'WHERE badge_id = ?', (str(badge_id),))
        return self._record(rows[0]) if rows else None

    def by_id(self, hcw_id: str) -> StaffRecord | None:
        """Return the HCW with number ``hcw_id``, or None if there is none."""
        rows = self._query('SELECT hcw_id, badge_id, name, specialty, role, home_area FROM staff '
                           'WHERE hcw_id = ?', (str(hcw_id),))
        return self._record(rows[0]) if rows else None

    def by_specialty(self, specialty: str) -> list[StaffRecord]:
        """Return every HCW of ``specialty`` (case-insensitive), in directory order."""
        rows = self._query('SELECT hcw_id, badge_id, name, specialty, role, home_area FROM staff '
                           'WHERE specialty = ? COLLATE NOCASE ORDER BY rowid', (str(specialty),))
        return [self._record(row) for row in rows]

    def staff(self) -> list[StaffRecord]:
        """Return every HCW, in directory order."""
        rows = self._query('SELECT hcw_id, badge_id, name, specialty, role, home_area FROM staff ORDER BY rowid', ())
        return [self._record(row) for row in rows]

    def seed(self) -> StaffSeed:
        """Return the directory as a staff seed: every HCW (in their home area, available) and the care teams.

        What a simulator needs to place a deployment's staff (:func:`load_staff`).

        Raises
        ------
        DirectoryError
            If an HCW has no ``home_area`` (a simulator must know where they start) or a row
            does not validate; the message names the HCW.
        """
        members = []
        for record in self.staff():
            if not record.home_area:
                raise DirectoryError(f'staff directory {self.path}: HCW #{record.hcw_id} has no home_area: expected '
                                     'the room where they start (the simulator places them there)')
            members.append({'hcw_id': record.hcw_id, 'badge_id': record.badge_id, 'name': record.name,
                            'specialty': record.specialty, 'role': record.role, 'area': record.home_area})
        teams: dict[str, list[dict]] = {}
        for room, hcw_id, role in self._query('SELECT room, hcw_id, role FROM care_teams ORDER BY rowid', ()):
            teams.setdefault(_text(room), []).append({'hcw_id': _text(hcw_id), 'role': _text(role)})
        try:
            return StaffSeed.model_validate({'staff': members, 'care_teams': teams})
        except ValueError as exc:
            raise DirectoryError(f'staff directory {self.path}: not a usable staff list ({exc})') from exc

    def rooms(self) -> list[str]:
        """Return the rooms with a standing care team or a check-in, sorted."""
        rows = self._query('SELECT room FROM care_teams UNION SELECT room FROM check_ins ORDER BY room', ())
        return [str(row[0]) for row in rows]

    def care_team(self, room: str, as_of_s: float | None = None) -> list[CareTeamEntry]:
        """Return ``room``'s care team: standing members, then HCWs checked in there.

        Standing members come first, in directory order, with their care-team role. HCWs who
        checked in follow, most recent check-in first, with their staff role. Each HCW appears
        once: a standing member who also checked in keeps the standing role and gains
        ``checked_in_s``. Where the directory gives no role, the HCW's specialty stands for it (a
        screen always names what each member is). An unknown room has an empty team. ``as_of_s`` (ROS time, s): the team
        as it stood then, counting only the check-ins stamped up to it (None: all of them).
        """
        standing = self._query(
            'SELECT s.hcw_id, s.badge_id, s.name, s.specialty, c.role FROM care_teams c '
            'JOIN staff s ON s.hcw_id = c.hcw_id WHERE c.room = ? ORDER BY c.rowid', (str(room),))
        until = float('inf') if as_of_s is None else float(as_of_s)
        checked = self._query(
            'SELECT s.hcw_id, s.badge_id, s.name, s.specialty, s.role, MAX(k.stamp_s) AS last_s, '
            'MAX(k.id) AS last_id FROM check_ins k JOIN staff s ON s.hcw_id = k.hcw_id '
            'WHERE k.room = ? AND k.stamp_s <= ? '
            'GROUP BY s.hcw_id ORDER BY last_s DESC, last_id DESC', (str(room), until))
        last_check_in = {str(row[0]): float(row[5]) for row in checked}
        team: list[CareTeamEntry] = []
        for row in standing:
            hcw_id, badge_id, name, specialty, role = (_text(v) for v in row)
            team.append(CareTeamEntry(hcw_id=hcw_id, badge_id=badge_id, name=name, specialty=specialty,
                                      role=role or specialty, source='standing',
                                      checked_in_s=last_check_in.get(hcw_id)))
        members = {entry.hcw_id for entry in team}
        for row in checked:
            hcw_id, badge_id, name, specialty, role = (_text(v) for v in row[:5])
            if hcw_id in members:
                continue
            team.append(CareTeamEntry(hcw_id=hcw_id, badge_id=badge_id, name=name, specialty=specialty,
                                      role=role or specialty, source='check_in', checked_in_s=float(row[5])))
        return team

    def check_ins(self, room: str | None = None) -> list[CheckInRecord]:
        """Return every check-in (at ``room`` only, if given), in the order they were recorded."""
        if room is None:
            rows = self._query('SELECT room, hcw_id, badge_id, stamp_s FROM check_ins ORDER BY id', ())
        else:
            rows = self._query('SELECT room, hcw_id, badge_id, stamp_s FROM check_ins WHERE room = ? ORDER BY id',
                               (str(room),))
        return [CheckInRecord(room=_text(r[0]), hcw_id=_text(r[1]), badge_id=_text(r[2]), stamp_s=float(r[3]))
                for r in rows]

    # --- Writes -------------------------------------------------------------------------------

    def check_in(self, room: str, hcw_id: str, badge_id: str, stamp_s: float) -> None:
        """Record that HCW ``hcw_id`` badged in at ``room``'s door at ROS time ``stamp_s`` (s).

        Raises
        ------
        ValueError
            If ``room`` is empty, ``hcw_id`` is not on staff, or ``badge_id`` is not that HCW's
            badge (a check-in must be backed by the HCW's own badge).
        """
        if not str(room).strip():
            raise ValueError('check-in needs a room')
        record = self.by_id(hcw_id)
        if record is None:
            raise ValueError(f"check-in at {room}: HCW '{hcw_id}' is not in the staff directory")
        if record.badge_id != str(badge_id):
            raise ValueError(f"check-in at {room}: badge '{badge_id}' is not HCW {hcw_id}'s badge")
        with self._lock:
            try:
                with self._conn:
                    self._conn.execute(
                        'INSERT INTO check_ins (room, hcw_id, badge_id, stamp_s) VALUES (?, ?, ?, ?)',
                        (str(room), record.hcw_id, record.badge_id, float(stamp_s)))
            except sqlite3.Error as exc:
                raise DirectoryError(f'staff directory {self.path}: cannot record check-in ({exc})') from exc

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> 'StaffDirectory':
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- Internals ----------------------------------------------------------------------------

    def _check_schema(self) -> None:
        tables = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        absent = [table for table in _REQUIRED_COLUMNS if table not in tables]
        if absent:
            raise DirectoryError(f"staff directory {self.path}: missing table(s) "
                                 f"{', '.join(map(repr, absent))} "
                                 f"(expected tables: {', '.join(_REQUIRED_COLUMNS)})")
        for table, columns in _REQUIRED_COLUMNS.items():
            present = {row[1] for row in self._conn.execute(f'PRAGMA table_info({table})')}
            missing = columns - present
            if missing:
                raise DirectoryError(f"staff directory {self.path}: table '{table}' lacks column(s) "
                                     f"{', '.join(sorted(missing))}")

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise DirectoryError(f'staff directory {self.path}: query failed ({exc})') from exc

    def _record(self, row: tuple) -> StaffRecord:
        hcw_id, badge_id, name, specialty, role, home_area = (_text(v) for v in row)
        return StaffRecord(hcw_id=hcw_id, badge_id=badge_id, name=name, specialty=specialty,
                           role=role, home_area=home_area)


def _text(value) -> str:
    """Return a database value as text ('' for NULL): values are data, whatever their SQLite type."""
    return '' if value is None else str(value)


def load_staff(path: str | os.PathLike) -> StaffSeed:
    """Return the staff of ``path``: a YAML seed or a SQLite directory.

    A seed is read by :func:`~robot_team.contracts.config.load_staff_seed`.

    Raises
    ------
    ConfigError
        If the file cannot be used (:class:`DirectoryError` for a database); the message names it.
    """
    if is_staff_database(path):
        with StaffDirectory(path) as directory:
            return directory.seed()
    return load_staff_seed(Path(path))
