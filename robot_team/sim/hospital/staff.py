"""The HCWs on the floor: who they are, where they stand at the start, and what the RTLS reports of them.

HCWs from the staff seed stand in their area's room (distinct spots: :func:`place_staff`); the
scenario's ``staff_overrides`` change availability, detail or area, its ``badge_overrides`` the
badge, and its ``staff_changes`` an HCW's availability and detail or badge at a sim time
(:func:`apply_change`). :class:`Hcw` is one HCW's whole changing state (their pose, their escort);
:class:`StaffRecord` is what the RTLS reports of them.

Events: ``staff_changed``. Units: SI (m, rad), poses in the map frame. No rclpy here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from robot_team.contracts.config import ConfigError, Scenario, StaffChange, StaffMember, StaffSeed
from robot_team.contracts.names import NO_ROBOT, RobotId
from robot_team.sim.common import EventLog, Polyline
from robot_team.sim.grid import WallGrid
from robot_team.sim.world import EdWorld, Pose2D, WorldError


@dataclass
class StaffRecord:
    """Where an HCW is (RTLS view): ``area`` is the room or corridor containing ``pose``."""

    hcw_id: str
    name: str
    specialty: str
    area: str
    pose: Pose2D
    availability: str
    detail: str
    state: str = 'idle'
    robot: RobotId = NO_ROBOT


@dataclass
class Hcw:
    """One simulated HCW: directory entry, badge, pose (m, rad), availability, and their escort.

    ``state`` is ``idle``, ``waiting`` (for ``robot``), ``following`` (along ``trail``, at arc
    length ``s``), ``entering`` (``entering_room``) or ``arrived``; ``home`` is the room they rest
    in. :mod:`~robot_team.sim.hospital.hcw_motion` moves them, :mod:`~robot_team.sim.hospital.readers`
    scans their badge.
    """

    member: StaffMember
    badge_id: str
    home: str
    x: float
    y: float
    yaw: float
    availability: str
    detail: str
    state: str = 'idle'           # idle | waiting | following | entering | arrived
    robot: RobotId = NO_ROBOT
    trail: Polyline | None = None
    s: float = 0.0
    entering_room: str = ''
    blocked_room: str = ''        # a room the HCW could not enter (not tried again while the robot stands)
    destination: str = ''         # the room their acknowledged page named ('' unnamed)
    inside_readers: set[str] = field(default_factory=set)
    scanned_room: str = ''        # the room of the HCW's latest badge scan


def place_staff(world: EdWorld, grid: WallGrid, clearance: float, staff: StaffSeed,
                scenario: Scenario) -> dict[str, Hcw]:
    """Return the directory's HCWs, by ID, each standing on a free spot of their area's room.

    Parameters
    ----------
    world
        The ED floor.
    grid
        Its walls (and closed doors): a spot is at least ``clearance`` (m) from them.
    clearance
        How far from a wall (m) an HCW's standing spot is, at least.
    staff
        The staff directory seed.
    scenario
        Its ``staff_overrides`` (availability, detail, area) and ``badge_overrides``.

    Raises
    ------
    ConfigError
        If an override or a staff change names an HCW not in the directory, an area is not a
        room of the floor, or a room has no free spot.
    """
    known = {m.hcw_id for m in staff.staff}
    overrides = (('staff_overrides', scenario.staff_overrides),
                 ('badge_overrides', scenario.badge_overrides),
                 ('staff_changes', [change.hcw_id for change in scenario.staff_changes]))
    for what, ids in overrides:
        unknown = sorted(set(ids) - known)
        if unknown:
            raise ConfigError(f"scenario '{scenario.name}': {what} name HCWs not in the staff directory: "
                              f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
    hcws: dict[str, Hcw] = {}
    taken: dict[str, int] = {}
    for member in staff.staff:
        override = scenario.staff_overrides.get(member.hcw_id)
        area = override.area if override and override.area else member.area
        try:
            room = world.room(area)
        except WorldError as exc:
            raise ConfigError(f'staff member #{member.hcw_id} ({member.name}): area {exc}') from None
        x, y = _spot(room, taken.get(area, 0), grid, clearance)
        taken[area] = taken.get(area, 0) + 1
        gx, gy = room.door_gap
        hcws[member.hcw_id] = Hcw(
            member=member, home=area,
            badge_id=scenario.badge_overrides.get(member.hcw_id, member.badge_id),
            x=x, y=y, yaw=math.atan2(gy - y, gx - x),
            availability=override.availability if override else member.availability,
            detail=override.detail if override else member.detail)
    return hcws


def _spot(room, index: int, grid: WallGrid, clearance: float) -> tuple[float, float]:
    """Return the ``index``-th free standing spot of a room: its centre, then rings 0.8 m apart."""
    cx, cy = room.center
    offsets = [(i * 0.8, j * 0.8) for i in range(-4, 5) for j in range(-4, 5)]
    offsets.sort(key=lambda o: (round(math.hypot(*o), 6), math.atan2(o[1], o[0]) % (2 * math.pi)))
    spots = [(cx + dx, cy + dy) for dx, dy in offsets
             if room.contains(cx + dx, cy + dy, margin=-0.5)
             and grid.is_clear(cx + dx, cy + dy, clearance)]
    if not spots:
        raise ConfigError(f"room '{room.name}' has no free spot to place staff")
    return spots[index % len(spots)]


def staff_record(world: EdWorld, h: Hcw) -> StaffRecord:
    """Return what the RTLS reports of ``h``: where they are (the area holding their pose) and what they do."""
    return StaffRecord(hcw_id=h.member.hcw_id, name=h.member.name, specialty=h.member.specialty,
                       area=world.room_at(h.x, h.y), pose=Pose2D(h.x, h.y, h.yaw),
                       availability=h.availability, detail=h.detail, state=h.state, robot=h.robot)


def select(hcws: Mapping[str, Hcw], hcw_ids: Sequence[str] = (), specialty: str = '') -> tuple[list[str], list[str]]:
    """Return the IDs of the HCWs an RTLS query asks for, and the requested IDs not among ``hcws``.

    ``hcw_ids`` first and in request order (no duplicates), then every other HCW of ``specialty``
    (case-insensitive); with neither, everyone.
    """
    ids, unknown = [], []
    for hcw_id in (str(i).strip() for i in hcw_ids):
        bucket = ids if hcw_id in hcws else unknown
        if hcw_id not in bucket:
            bucket.append(hcw_id)
    wanted = specialty.strip().lower()
    if wanted or not hcw_ids:
        ids += [k for k, h in hcws.items()
                if k not in ids and (not wanted or h.member.specialty.lower() == wanted)]
    return ids, unknown


def apply_change(h: Hcw, change: StaffChange, log: EventLog) -> None:
    """Apply a staff change that is due to ``h`` (its availability, detail, badge) and record it."""
    h.availability, h.detail = change.availability, change.detail
    if change.badge_id:
        h.badge_id = change.badge_id
    log.emit('staff_changed', hcw_id=change.hcw_id, availability=h.availability, detail=h.detail,
             badge_id=h.badge_id)
