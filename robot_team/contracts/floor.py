"""The floor's semantic description: rooms, doors, corridors, badge readers and docks, and its walls.

One YAML file in ``config/floors/`` (``ed_floor.yaml``) describes a hospital floor without
Gazebo; :func:`load_floor` validates it and returns a :class:`Floor`. The SDFormat world is
generated from it (``scripts/gen_ed_floor.py``), the simulator builds its occupancy grid from
:attr:`Floor.walls`, and the robots answer "where is ER-12's door?" from it.

All coordinates are in the ``map`` frame (REP-105), metres and radians, x east, y north, yaw
counter-clockwise from x (REP-103). The file (see ``config/floors/ed_floor.yaml``)::

    name: ed_floor                       # the SDF world name
    frame_id: map
    extent: [xmin, ymin, xmax, ymax]     # the outer walls' centre lines, m
    walls: {thickness: 0.2, height: 2.5} # m
    door_approach_m: 1.5                 # default distance of a door's approach pose from the wall line
    rooms:
      - name: ER-12
        kind: patient_room
        bounds: [xmin, ymin, xmax, ymax] # the room's walls' centre lines, m
        door: {side: south, at: 12.5, width: 1.6}   # at: x on a north/south wall, y on an east/west one
    corridors:
      - {name: Main corridor, bounds: [xmin, ymin, xmax, ymax]}
    badge_readers:
      - {id: er_12_door, room: ER-12, position: [x, y], radius: 1.2}
    docks:
      - {robot: navigation_robot, pose: [x, y, yaw]}

Walls are derived, not listed: every edge of the extent and of every room is a wall on its
centre line; collinear edges are merged and door gaps cut out (:func:`wall_segments`); each
segment becomes a box ``thickness`` wide, lengthened by ``thickness`` so that corners close
(:func:`wall_boxes`). A door's approach pose is ``approach_m`` in front of the gap's centre, on
the corridor side, facing the room.

No rclpy and no import of ``robot_team.sim`` here: robots and the simulator both read this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from robot_team.contracts.config import ConfigError, load_yaml, share_dir
from robot_team.contracts.names import RobotId

FLOORS_FOLDER = 'config/floors'
"""Where floor descriptions live in the share folder (a bare name is looked up there)."""
DEFAULT_FLOOR = 'ed_floor.yaml'
OUTSIDE = 'outside'
"""What :meth:`Floor.room_at` returns for a point in no room and no corridor."""
READER_AT_DOOR_M = 1.5
"""A badge reader must be this close (m) to its room's door gap centre to count as at the door."""

Side = Literal['north', 'south', 'east', 'west']
_OUTWARD = {'north': (0.0, 1.0), 'south': (0.0, -1.0), 'east': (1.0, 0.0), 'west': (-1.0, 0.0)}
_FACING = {'north': -math.pi / 2, 'south': math.pi / 2, 'east': math.pi, 'west': 0.0}   # into the room, rad


class FloorError(ConfigError):
    """A floor description that cannot be used; the message names the file, the element and what was expected."""


# --- the semantic map (what robots and the simulator query) -----------------------------------

@dataclass(frozen=True)
class Pose2D:
    """A planar pose in the map frame: position ``x``, ``y`` (m) and heading ``yaw`` (rad, REP-103)."""

    x: float
    y: float
    yaw: float = 0.0

    @property
    def xy(self) -> np.ndarray:
        """The position as an array of shape (2,), m."""
        return np.array([self.x, self.y])

    def distance_to(self, x: float, y: float) -> float:
        """Return the Euclidean distance from this pose to the point (x, y), m."""
        return math.hypot(x - self.x, y - self.y)


@dataclass(frozen=True)
class Wall:
    """A wall's footprint: a ``sx`` x ``sy`` rectangle (m) centred on (``x``, ``y``), rotated by ``yaw`` (rad)."""

    name: str
    x: float
    y: float
    yaw: float
    sx: float
    sy: float

    def corners(self) -> np.ndarray:
        """Return the four corners, shape (4, 2), m, counter-clockwise."""
        half = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]]) * (self.sx / 2, self.sy / 2)
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return half @ np.array([[c, s], [-s, c]]) + (self.x, self.y)

    def contains(self, x: float, y: float) -> bool:
        """Return whether the point (x, y) (m) lies in the footprint (its border included)."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        u = c * (x - self.x) + s * (y - self.y)
        v = -s * (x - self.x) + c * (y - self.y)
        return abs(u) <= self.sx / 2 + 1e-9 and abs(v) <= self.sy / 2 + 1e-9


class _Rectangle:
    """Axis-aligned rectangle behaviour for dataclasses with ``center`` and ``size`` (m)."""

    center: tuple[float, float]
    size: tuple[float, float]

    def contains(self, x: float, y: float, margin: float = 0.0) -> bool:
        """Return whether (x, y) lies inside the rectangle grown by ``margin`` (m) on every side."""
        return (abs(x - self.center[0]) <= self.size[0] / 2 + margin
                and abs(y - self.center[1]) <= self.size[1] / 2 + margin)

    def distance(self, x: float, y: float) -> float:
        """Return the distance from (x, y) to the rectangle (0 inside), m."""
        dx = max(abs(x - self.center[0]) - self.size[0] / 2, 0.0)
        dy = max(abs(y - self.center[1]) - self.size[1] / 2, 0.0)
        return math.hypot(dx, dy)


@dataclass(frozen=True)
class Area(_Rectangle):
    """An axis-aligned region of the floor (a corridor): ``center`` (x, y) and ``size`` (sx, sy), m."""

    name: str
    center: tuple[float, float]
    size: tuple[float, float]


@dataclass(frozen=True)
class Room(_Rectangle):
    """A room: its kind, its rectangle (``center``, ``size`` of the walls' centre lines, m) and its door.

    ``door`` is the approach pose in the corridor in front of the door gap, facing the door;
    ``door_width`` is the width of the gap (m).
    """

    name: str
    kind: str
    center: tuple[float, float]
    size: tuple[float, float]
    door: Pose2D
    door_width: float = 1.2

    @property
    def door_gap(self) -> tuple[float, float]:
        """The door gap's centre on the wall line, where the door pose's heading enters the room (m).

        Raises
        ------
        FloorError
            If the door pose does not face the room (only for rooms built in memory; loaded
            floors are checked by :func:`load_floor`).
        """
        point = _ray_entry(self, self.door)
        if point is None:
            raise FloorError(f"room '{self.name}': its door pose does not face the room")
        return point

    @property
    def entry(self) -> Pose2D:
        """A pose just inside the door (1.5 m past the wall line, at most half the room), facing into the room."""
        gx, gy = self.door_gap
        depth = min(1.5, _depth_along(self, self.door.yaw) / 2)
        yaw = self.door.yaw
        return Pose2D(gx + depth * math.cos(yaw), gy + depth * math.sin(yaw), yaw)


@dataclass(frozen=True)
class BadgeReader:
    """A door badge reader at (``x``, ``y``) (m); it reads any badge within ``radius`` (m)."""

    reader_id: str
    room: str
    x: float
    y: float
    radius: float


@dataclass(frozen=True)
class Dock:
    """A robot's charging dock: where the robot starts, as a map-frame pose."""

    robot: RobotId
    pose: Pose2D


@dataclass
class Floor:
    """A validated floor: the semantic map the robots and the simulator share.

    Attributes
    ----------
    name
        The floor's name (the SDF world name).
    walls
        Wall footprints (oriented rectangles), derived by :func:`wall_boxes`.
    rooms
        Rooms by name, in file order.
    readers
        Badge readers, in file order.
    docks
        Docks by robot name.
    bounds
        ``(xmin, ymin, xmax, ymax)`` of all walls, m.
    corridors
        Corridor regions, in file order (used by :meth:`room_at`).
    path
        The file it was loaded from (None if built in memory).
    wall_height
        Height of the walls, m (for the generated SDFormat world).
    """

    name: str
    walls: list[Wall]
    rooms: dict[str, Room]
    readers: list[BadgeReader]
    docks: dict[str, Dock]
    bounds: tuple[float, float, float, float]
    corridors: list[Area] = field(default_factory=list)
    path: Path | None = None
    wall_height: float = 2.5

    def room(self, name: str) -> Room:
        """Return the room called ``name``.

        Raises
        ------
        FloorError
            If there is no such room; the message lists the rooms there are.
        """
        try:
            return self.rooms[name]
        except KeyError:
            raise FloorError(f"unknown room '{name}': expected one of {', '.join(self.rooms)}") from None

    def dock(self, robot: RobotId) -> Dock:
        """Return the dock of ``robot``; a fleet's first robot (``<role>_1``) without one of its own uses ``<role>``'s.

        Raises
        ------
        FloorError
            If the floor has no dock for that robot.
        """
        first = robot.removesuffix('_1') if robot.endswith('_1') and robot not in self.docks else robot
        try:
            return self.docks[first]
        except KeyError:
            raise FloorError(f"no dock for robot '{robot}': expected one of "
                             f"{', '.join(self.docks)}") from None

    def reader_for(self, room: str) -> BadgeReader | None:
        """Return the badge reader guarding ``room``'s door, or None."""
        return next((r for r in self.readers if r.room == room), None)

    def room_at(self, x: float, y: float) -> str:
        """Return the name of the room, else of the corridor, containing (x, y) (m).

        A point inside a wall or a door gap belongs to the nearest region within 0.5 m; a point
        farther from every region is :data:`OUTSIDE`.
        """
        for room in self.rooms.values():
            if room.contains(x, y):
                return room.name
        for corridor in self.corridors:
            if corridor.contains(x, y):
                return corridor.name
        regions = list(self.rooms.values()) + list(self.corridors)
        if regions:
            nearest = min(regions, key=lambda a: a.distance(x, y))
            if nearest.distance(x, y) <= 0.5:
                return nearest.name
        return OUTSIDE


# --- the file's schema ------------------------------------------------------------------------

Bounds = tuple[float, float, float, float]


def _check_bounds(value: Bounds) -> Bounds:
    xmin, ymin, xmax, ymax = value
    if xmin >= xmax or ymin >= ymax:
        raise ValueError(f'expected [xmin, ymin, xmax, ymax] with xmin < xmax and ymin < ymax, got {list(value)}')
    return value


class _Spec(BaseModel):
    model_config = ConfigDict(extra='forbid', frozen=True, allow_inf_nan=False)


class DoorSpec(_Spec):
    """A room's door: the wall it is in, where along it, how wide; m."""

    side: Side = Field(description='Wall of the room the door is in (north: y = ymax, east: x = xmax...).')
    at: float = Field(description='Centre of the gap along that wall: x on a north/south wall, y on east/west, m.')
    width: float = Field(gt=0, description='Width of the gap, m.')
    approach_m: float | None = Field(None, gt=0, description='Distance of the approach pose from the wall '
                                     "line, m (default: the floor's door_approach_m).")


class AreaSpec(_Spec):
    """A corridor: a name and bounds (m)."""

    name: str = Field(min_length=1)
    bounds: Bounds = Field(description="[xmin, ymin, xmax, ymax] (a room's: of its walls' centre lines), m.")

    @field_validator('bounds')
    @classmethod
    def _bounds(cls, value: Bounds) -> Bounds:
        return _check_bounds(value)


class RoomSpec(AreaSpec):
    """A room: an area (name, bounds of its walls' centre lines, m) with a kind and a door."""

    kind: str = Field('room', min_length=1, description='patient_room, triage, nurses_station...')
    door: DoorSpec


class BadgeReaderSpec(_Spec):
    """A door badge reader: its ID, the room whose door it guards, position (m) and range (m)."""

    id: str = Field(min_length=1)
    room: str = Field(min_length=1)
    position: tuple[float, float] = Field(description='[x, y], m.')
    radius: float = Field(gt=0, description='Reads any badge within this distance, m.')


class DockSpec(_Spec):
    """A robot's dock: the robot's name and its start pose [x, y, yaw] (m, rad)."""

    robot: RobotId = Field(min_length=1)
    pose: tuple[float, float, float] = Field(description='[x, y, yaw], m and rad.')


class WallsSpec(_Spec):
    """Wall dimensions, m."""

    thickness: float = Field(gt=0)
    height: float = Field(gt=0)


class FloorSpec(_Spec):
    """The whole file (see the module docstring)."""

    name: str = Field(min_length=1)
    frame_id: Literal['map'] = 'map'
    extent: Bounds = Field(description="[xmin, ymin, xmax, ymax] of the outer walls' centre lines, m.")
    walls: WallsSpec
    door_approach_m: float = Field(1.5, gt=0)
    rooms: list[RoomSpec] = Field(min_length=1)
    corridors: list[AreaSpec] = Field(default_factory=list)
    badge_readers: list[BadgeReaderSpec] = Field(default_factory=list)
    docks: list[DockSpec] = Field(default_factory=list)

    @field_validator('extent')
    @classmethod
    def _extent(cls, value: Bounds) -> Bounds:
        return _check_bounds(value)


# --- walls ------------------------------------------------------------------------------------

Segment = tuple[float, float, float, float]


def _edges(bounds: Bounds) -> list[tuple[str, float, float, float]]:
    """Return the four edges of a rectangle as (axis, line, lo, hi): 'h' lines are y = line, 'v' x = line."""
    xmin, ymin, xmax, ymax = bounds
    return [('h', ymin, xmin, xmax), ('h', ymax, xmin, xmax), ('v', xmin, ymin, ymax), ('v', xmax, ymin, ymax)]


def _door_line(room: RoomSpec) -> tuple[str, float, float, float]:
    """Return the edge (axis, line, lo, hi) of ``room`` that its door is in."""
    xmin, ymin, xmax, ymax = room.bounds
    return {'north': ('h', ymax, xmin, xmax), 'south': ('h', ymin, xmin, xmax),
            'east': ('v', xmax, ymin, ymax), 'west': ('v', xmin, ymin, ymax)}[room.door.side]


def wall_segments(spec: FloorSpec) -> list[Segment]:
    """Return every wall of the floor as a centre-line segment ``(x0, y0, x1, y1)``, m.

    The edges of the extent and of every room, merged where collinear and overlapping or
    touching, minus the door gaps. Order: horizontal walls by y then x, then vertical walls by
    x then y (deterministic, so the generated world is too).
    """
    lines: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for axis, line, lo, hi in _edges(spec.extent) + [e for room in spec.rooms for e in _edges(room.bounds)]:
        lines.setdefault((axis, line), []).append((lo, hi))
    gaps: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for room in spec.rooms:
        axis, line, _, _ = _door_line(room)
        gaps.setdefault((axis, line), []).append((room.door.at - room.door.width / 2,
                                                  room.door.at + room.door.width / 2))
    segments: list[Segment] = []
    for axis, line in sorted(lines):
        merged: list[list[float]] = []
        for lo, hi in sorted(lines[(axis, line)]):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            start = lo
            for a, b in sorted(gaps.get((axis, line), [])):
                if a < hi and b > start:
                    if a > start:
                        segments.append(_segment(axis, line, start, a))
                    start = max(start, b)
            if hi > start:
                segments.append(_segment(axis, line, start, hi))
    return segments


def _segment(axis: str, line: float, a: float, b: float) -> Segment:
    return (a, line, b, line) if axis == 'h' else (line, a, line, b)


def wall_boxes(spec: FloorSpec) -> list[Wall]:
    """Return the walls' footprints: one box per :func:`wall_segments` segment, named ``wall_NN``.

    Each box is ``walls.thickness`` wide and the segment's length plus ``walls.thickness`` long
    (half a thickness past each end, so corners close); yaw 0 along x, pi/2 along y (rad).
    """
    thickness = spec.walls.thickness
    boxes = []
    for index, (x0, y0, x1, y1) in enumerate(wall_segments(spec)):
        boxes.append(Wall(f'wall_{index:02d}', (x0 + x1) / 2, (y0 + y1) / 2, math.atan2(y1 - y0, x1 - x0),
                          math.hypot(x1 - x0, y1 - y0) + thickness, thickness))
    return boxes


def door_approach(room: RoomSpec, default_m: float) -> Pose2D:
    """Return the approach pose of ``room``'s door: in front of the gap's centre, outside, facing in (m, rad)."""
    xmin, ymin, xmax, ymax = room.bounds
    ox, oy = _OUTWARD[room.door.side]
    distance = room.door.approach_m or default_m
    if room.door.side in ('north', 'south'):
        gx, gy = room.door.at, ymax if room.door.side == 'north' else ymin
    else:
        gx, gy = xmax if room.door.side == 'east' else xmin, room.door.at
    return Pose2D(gx + ox * distance, gy + oy * distance, _FACING[room.door.side])


# --- loading ----------------------------------------------------------------------------------

def floor_path(name_or_path: str | Path) -> Path:
    """Return the file of a floor named as a path, or as a file name under ``config/floors/``.

    ``'ed_floor'`` and ``'ed_floor.yaml'`` both name ``config/floors/ed_floor.yaml``.
    """
    path = Path(name_or_path)
    if path.is_absolute() or len(path.parts) > 1 or path.exists():
        return path
    if not path.suffix:
        path = path.with_suffix('.yaml')
    return share_dir() / FLOORS_FOLDER / path


class _Checker:
    """Semantic checks of a schema-valid description; every error names the file and the element."""

    def __init__(self, path: Path, spec: FloorSpec):
        self.path = path
        self.spec = spec

    def fail(self, where: str, expected: str) -> FloorError:
        return FloorError(f'floor file {self.path}: {where}: {expected}')

    def unique(self, names: list[tuple[str, str]], what: str) -> None:
        seen: set[str] = set()
        for where, name in names:
            if name in seen:
                raise self.fail(where, f"duplicate {what} '{name}': expected each {what} once")
            seen.add(name)

    def build(self) -> Floor:
        spec = self.spec
        xmin, ymin, xmax, ymax = spec.extent
        extent = Area('extent', ((xmin + xmax) / 2, (ymin + ymax) / 2), (xmax - xmin, ymax - ymin))
        half = spec.walls.thickness / 2
        self.unique([(f'rooms[{r.name}]', r.name) for r in spec.rooms]
                    + [(f'corridors[{c.name}]', c.name) for c in spec.corridors], 'room or corridor name')
        self.unique([(f'badge_readers[{r.id}]', r.id) for r in spec.badge_readers], 'badge reader id')
        self.unique([(f'docks[{d.robot}]', d.robot) for d in spec.docks], 'dock robot')

        areas = [(f'rooms[{r.name}]', r.bounds) for r in spec.rooms]
        areas += [(f'corridors[{c.name}]', c.bounds) for c in spec.corridors]
        for i, (where, bounds) in enumerate(areas):
            if not (xmin <= bounds[0] and ymin <= bounds[1] and bounds[2] <= xmax and bounds[3] <= ymax):
                raise self.fail(f'{where}.bounds', f'expected {list(bounds)} inside the extent {list(spec.extent)}')
            for other, other_bounds in areas[:i]:
                if _overlap(bounds, other_bounds):
                    raise self.fail(f'{where}.bounds', f'{list(bounds)} overlaps {other}: expected regions that '
                                    'share at most a wall')

        walls = wall_boxes(spec)
        rooms: dict[str, Room] = {}
        for room in spec.rooms:
            rooms[room.name] = self.room(room, walls)
        corridors = [Area(c.name, _center(c.bounds), _size(c.bounds)) for c in spec.corridors]

        readers: list[BadgeReader] = []
        guarded: dict[str, str] = {}
        for reader in spec.badge_readers:
            where = f'badge_readers[{reader.id}]'
            if reader.room not in rooms:
                raise self.fail(f'{where}.room', f"unknown room '{reader.room}': expected one of "
                                f"{', '.join(rooms)}")
            if reader.room in guarded:
                raise self.fail(where, f"room '{reader.room}' already has badge reader '{guarded[reader.room]}': "
                                'expected one reader per door')
            gx, gy = rooms[reader.room].door_gap
            x, y = reader.position
            distance = math.hypot(x - gx, y - gy)
            if distance > READER_AT_DOOR_M:
                raise self.fail(f'{where}.position', f"({x:g}, {y:g}) is {distance:.2f} m from the door of "
                                f"'{reader.room}' at ({gx:g}, {gy:g}): expected a reader at the door "
                                f'(within {READER_AT_DOOR_M:g} m of the gap)')
            guarded[reader.room] = reader.id
            readers.append(BadgeReader(reader.id, reader.room, x, y, reader.radius))

        docks: dict[str, Dock] = {}
        for dock in spec.docks:
            where = f'docks[{dock.robot}].pose'
            x, y, yaw = dock.pose
            if not extent.contains(x, y, margin=-half):
                raise self.fail(where, f'({x:g}, {y:g}) is outside the floor: expected a pose inside the outer '
                                f'walls {list(spec.extent)}')
            wall = next((w for w in walls if w.contains(x, y)), None)
            if wall is not None:
                raise self.fail(where, f'({x:g}, {y:g}) is inside wall {wall.name} (centre ({wall.x:g}, {wall.y:g})'
                                f'): expected a pose in free floor space')
            docks[dock.robot] = Dock(dock.robot, Pose2D(x, y, yaw))

        corners = np.vstack([w.corners() for w in walls])
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        return Floor(name=spec.name, walls=walls, rooms=rooms, readers=readers, docks=docks,
                     bounds=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])), corridors=corridors,
                     path=self.path, wall_height=spec.walls.height)

    def room(self, spec: RoomSpec, walls: list[Wall]) -> Room:
        where = f'rooms[{spec.name}].door'
        door = spec.door
        axis, line, lo, hi = _door_line(spec)
        along = 'x' if axis == 'h' else 'y'
        margin = self.spec.walls.thickness
        if not (lo + margin <= door.at - door.width / 2 and door.at + door.width / 2 <= hi - margin):
            raise self.fail(where, f'a {door.width:g} m door at {along} = {door.at:g} is not in the {door.side} '
                            f"wall of room '{spec.name}' ({along} from {lo:g} to {hi:g}): expected "
                            f'{lo + margin + door.width / 2:g} <= at <= {hi - margin - door.width / 2:g}')
        approach = door_approach(spec, self.spec.door_approach_m)
        problem = None
        xmin, ymin, xmax, ymax = self.spec.extent
        if not (xmin < approach.x < xmax and ymin < approach.y < ymax):
            problem = 'outside the floor'
        else:
            inside = next((r.name for r in self.spec.rooms
                           if r.name != spec.name and _strictly_inside(r.bounds, approach.x, approach.y)), None)
            if inside:
                problem = f"inside room '{inside}'"
            else:
                wall = next((w for w in walls if w.contains(approach.x, approach.y)), None)
                if wall is not None:
                    problem = f'inside wall {wall.name}'
        if problem:
            raise self.fail(where, f'its approach pose ({approach.x:g}, {approach.y:g}) is {problem}: expected '
                            'a door that opens onto a corridor (or free floor) of this floor')
        return Room(spec.name, spec.kind, _center(spec.bounds), _size(spec.bounds), approach, door.width)


def load_floor(path: str | Path) -> Floor:
    """Load and validate a floor description (YAML, see the module docstring).

    Parameters
    ----------
    path
        The ``.yaml`` file, or a name under ``config/floors/`` (see :func:`floor_path`).

    Returns
    -------
    Floor
        Walls, rooms, corridors, badge readers, docks and bounds, in the map frame (m, rad).

    Raises
    ------
    FloorError
        If the file is missing or not YAML, a field is missing or malformed, or the floor is
        inconsistent: a door not in its room's wall or opening into another room or outside,
        a badge reader not at its room's door or naming an unknown room, a dock in a wall or
        outside the floor, a room or corridor outside the extent or overlapping another,
        duplicate names. The message names the file, the element and what was expected.
    """
    path = floor_path(path)
    try:
        data = load_yaml(path, 'floor file')
    except ConfigError as exc:
        raise FloorError(str(exc)) from exc
    try:
        spec = FloorSpec.model_validate(data)
    except ValidationError as exc:
        raise FloorError(f'floor file {path}: ' + '; '.join(
            f"{_where(data, err['loc'])}: {err['msg']}" for err in exc.errors())) from exc
    return _Checker(path, spec).build()


def _where(data, loc: tuple) -> str:
    """Name a pydantic error location, lists by their element's name: ``rooms[ER-1].door.side``."""
    text, node = '', data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list):
            item = node[part] if part < len(node) else None
            label = None
            if isinstance(item, dict):
                label = next((item[k] for k in ('name', 'id', 'robot') if isinstance(item.get(k), str)), None)
            text += f'[{label if label else part}]'
            node = item
        else:
            text += f'.{part}' if text else str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return text or '(file)'


# --- geometry helpers -------------------------------------------------------------------------

def _center(bounds: Bounds) -> tuple[float, float]:
    return ((bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2)


def _size(bounds: Bounds) -> tuple[float, float]:
    return (bounds[2] - bounds[0], bounds[3] - bounds[1])


def _overlap(a: Bounds, b: Bounds) -> bool:
    """Return whether two rectangles share interior (touching edges do not count)."""
    return min(a[2], b[2]) - max(a[0], b[0]) > 1e-9 and min(a[3], b[3]) - max(a[1], b[1]) > 1e-9


def _strictly_inside(bounds: Bounds, x: float, y: float) -> bool:
    return bounds[0] < x < bounds[2] and bounds[1] < y < bounds[3]


def _ray_entry(area: _Rectangle, pose: Pose2D) -> tuple[float, float] | None:
    """Return where the ray from ``pose`` along its yaw enters the rectangle (slab method), or None."""
    origin = np.array([pose.x, pose.y])
    direction = np.array([math.cos(pose.yaw), math.sin(pose.yaw)])
    lo = np.array(area.center) - np.array(area.size) / 2
    hi = np.array(area.center) + np.array(area.size) / 2
    with np.errstate(divide='ignore', invalid='ignore'):
        t1 = (lo - origin) / direction
        t2 = (hi - origin) / direction
    t_near = np.nanmax(np.minimum(t1, t2))
    t_far = np.nanmin(np.maximum(t1, t2))
    if not np.isfinite(t_near) or t_near > t_far or t_far < 0:
        return None
    point = origin + max(t_near, 0.0) * direction
    return float(point[0]), float(point[1])


def _depth_along(area: _Rectangle, yaw: float) -> float:
    """Return the rectangle's extent along the heading ``yaw`` (m)."""
    c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
    extents = [area.size[0] / c if c > 1e-9 else math.inf, area.size[1] / s if s > 1e-9 else math.inf]
    return min(extents)
