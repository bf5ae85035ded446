"""The staff availability check: whether an HCW may be assigned by a ``reassign`` decision.

The staff directory (who exists) plus the RTLS's latest answer (who is available, where).
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, Field

from robot_team.core.escalations.lifecycle import Refusal
from robot_team.rules.workflow.rules import StaffFacts


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
        fresh = {str(s['hcw_id']): {k: str(s.get(k, '')) for k in ('area', 'availability', 'detail', 'specialty')}
                 for s in located}
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

    def facts(self) -> dict[str, StaffFacts] | None:
        """Return what the gate's HCW rule reads (:func:`~robot_team.rules.workflow.rules.task_hcw_refusal`), by HCW ID.

        The specialty from the directory (from the RTLS for an HCW only it knows), the availability
        from the RTLS's latest answer (``unknown`` before one). ``None`` while this check knows no
        HCW at all (no directory, no RTLS answer yet): the gate then has no staff view to check
        against (a supervisor deployed without ``staff_db``, before the RTLS's first answer).
        """
        entries = self.entries()
        if not entries and self._directory is None:
            return None
        return {e.hcw_id: StaffFacts(e.specialty, e.availability) for e in entries}

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
