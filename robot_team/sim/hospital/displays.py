"""The rooms' screens: a care-team layout rendered as lines of text, and what each screen shows.

Events: ``display_shown``. No rclpy here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from robot_team.sim.common import EventLog
from robot_team.sim.world import EdWorld


def _field(entry: Any, key: str) -> str:
    value = entry.get(key, '') if isinstance(entry, Mapping) else getattr(entry, key, '')
    return str(value or '')


class RoomDisplays:
    """The screens of the floor's rooms and what each shows (:attr:`shown`, by room: its lines).

    Parameters
    ----------
    world
        The ED floor (its rooms have the screens).
    log
        Where the ``display_shown`` events go.

    Notes
    -----
    :attr:`shown` is the changing state (a hospital checkpoint holds it).
    """

    def __init__(self, world: EdWorld, log: EventLog):
        self._world = world
        self._log = log
        self.shown: dict[str, list[str]] = {}

    def render(self, room: str, title: str, entries: Sequence[Any], layout: str = '') -> tuple[bool, str, list[str]]:
        """Show a care-team layout on ``room``'s screen.

        Parameters
        ----------
        room
            A room of the world.
        title
            The screen's title.
        entries
            Care-team members: mappings or objects with ``role``, ``hcw_id``, ``name``,
            ``specialty``.
        layout
            A layout plan, e.g. ``'rows: physician, nurse, technician'``: entries are ordered by
            the first listed word found in their role or specialty.

        Returns
        -------
        (success, message, rendered_lines)
            ``success`` is False (and nothing changes) for an unknown room.
        """
        if room not in self._world.rooms:
            return False, f"unknown room '{room}': expected one of {', '.join(self._world.rooms)}", []
        keywords = [k.strip().lower() for k in layout.split(':', 1)[-1].split(',') if k.strip()]

        def rank(entry) -> int:
            text = f"{_field(entry, 'role')} {_field(entry, 'specialty')}".lower()
            return next((i for i, k in enumerate(keywords) if k in text), len(keywords))

        ordered = sorted(entries, key=rank)
        lines = [f'[{room}] {title.strip() or "Care team"}']
        for entry in ordered:
            hcw_id = _field(entry, 'hcw_id')
            details = ', '.join(p for p in (f'#{hcw_id}' if hcw_id else '', _field(entry, 'specialty')) if p)
            lines.append(f"{_field(entry, 'role') or 'Member'}: {_field(entry, 'name') or '(unnamed)'}"
                         + (f' ({details})' if details else ''))
        if layout.strip():
            lines.append(f'Layout: {layout.strip()}')
        self.shown[room] = lines
        members = [{key: _field(entry, key) for key in ('role', 'hcw_id', 'name', 'specialty')} for entry in ordered]
        self._log.emit('display_shown', room=room, title=title, layout=layout, lines=list(lines),
                       entries=len(ordered), members=members)
        message = f'{room} screen shows {len(ordered)} care-team member(s)'
        return True, message, list(lines)

    def screen(self, room: str) -> list[str]:
        """Return what ``room``'s screen shows (empty if nothing was shown)."""
        return list(self.shown.get(room, []))
