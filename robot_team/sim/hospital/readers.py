"""The doors' badge readers: an HCW whose way enters a reader's zone scans their badge there, once per entry.

The test is on the segments walked between two updates, not on the positions reached: a step
that passes through a zone scans there (at the step's closest point to the reader) even when it
starts and ends outside it, however long the step; zones passed in one step scan in the order
passed; a step that comes no closer than the radius does not scan. An HCW who arrives in a room
without a scan at its door badges at that room's reader on arrival (:meth:`BadgeReaders.badge_in`).

Events: ``badge_scan``. Units: m, in the map frame. No rclpy here.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from robot_team.sim.common import EventLog, segment_near
from robot_team.sim.hospital.staff import Hcw
from robot_team.sim.world import EdWorld


class BadgeReaders:
    """The floor's badge readers (``world.readers``), scanning the badges of the HCWs who pass them.

    Parameters
    ----------
    world
        The ED floor: its readers, each with a room, a position and a zone radius (m).
    log
        Where the ``badge_scan`` events go.
    """

    def __init__(self, world: EdWorld, log: EventLog):
        self._log = log
        self._readers = world.readers
        self._xy = np.array([[r.x, r.y] for r in self._readers]).reshape(-1, 2)
        self._radius = np.array([r.radius for r in self._readers])

    def at(self, x: float, y: float) -> set[str]:
        """Return the IDs of the readers whose zone holds the point (``x``, ``y``) (m)."""
        inside, _, _ = segment_near((x, y), (x, y), self._xy, self._radius)
        return {self._readers[i].reader_id for i in np.flatnonzero(inside)}

    def check(self, hcw: Hcw, way: Sequence[tuple[float, float]]) -> None:
        """Badge ``hcw`` at each reader whose zone the ``way`` they just walked enters (segment test).

        ``way`` is the HCW's positions (m) from where they were to where they are, consecutive
        points joined by straight pieces. A piece that enters a zone (its closest point to the
        reader is within the radius, from outside the zone) scans once, at that closest point, even
        if both its ends are outside; zones entered by one piece scan in the order passed.
        """
        inside = hcw.inside_readers
        for a, b in zip(way, way[1:]):
            near, closest, along = segment_near(a, b, self._xy, self._radius)
            for i in sorted(np.flatnonzero(near), key=lambda i: along[i]):
                if self._readers[i].reader_id not in inside:
                    self._scan(hcw, self._readers[i], (float(closest[i, 0]), float(closest[i, 1])))
            inside = self.at(*b)
        hcw.inside_readers = inside

    def badge_in(self, hcw: Hcw, room: str) -> None:
        """Badge ``hcw``, who entered ``room``, at its reader where their way in did not scan there already."""
        if hcw.scanned_room != room:
            for reader in self._readers:
                if reader.room == room:
                    self._scan(hcw, reader)

    def _scan(self, hcw: Hcw, reader, where: tuple[float, float] | None = None) -> None:
        """Record a badge scan of ``hcw`` at ``reader``, at ``where`` (m; None: where the HCW is)."""
        x, y = (hcw.x, hcw.y) if where is None else where
        self._log.emit('badge_scan', reader_id=reader.reader_id, room=reader.room, badge_id=hcw.badge_id,
                       hcw_id=hcw.member.hcw_id, x=x, y=y)
        hcw.scanned_room = reader.room
