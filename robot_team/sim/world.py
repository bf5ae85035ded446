"""The ED floor as the simulator sees it: walls, rooms, doors, badge readers and docks.

:func:`load_world` reads an SDFormat world (``worlds/ed_floor.sdf``) with ``xml.etree``:

* walls: every ``<box>`` collision of every ``<model>`` (nested models included), projected on
  the floor as an oriented rectangle; model, link and collision ``<pose>`` elements are composed.
  Other geometries (the ground ``<plane>``, meshes) are not obstacles.
* the semantic layer: custom elements in the ``robot_team`` namespace (``xmlns:robot_team=
  "https://robot-team.dev/sdf"`` on ``<sdf>``), which Gazebo ignores::

      <robot_team:room name="ER-12" kind="patient_room">
        <robot_team:center>x y</robot_team:center>   <!-- of the walls' centre lines -->
        <robot_team:size>sx sy</robot_team:size>
        <robot_team:door width="1.6">x y yaw</robot_team:door>  <!-- approach pose -->
      </robot_team:room>
      <robot_team:corridor name="Main corridor"><robot_team:center/><robot_team:size/></...>
      <robot_team:badge_reader id="er_12_door" room="ER-12">
        <robot_team:position>x y</robot_team:position><robot_team:radius>r</robot_team:radius>
      </robot_team:badge_reader>
      <robot_team:dock robot="navigation_robot">x y yaw</robot_team:dock>

All coordinates are in the ``map`` frame (REP-105), metres and radians, x east, y north, yaw
counter-clockwise from x (REP-103). No rclpy here (STYLE.md: pure helpers next to the facade).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robot_team.config import ConfigError

NAMESPACE = 'https://robot-team.dev/sdf'
OUTSIDE = 'outside'
"""What :meth:`EdWorld.room_at` returns for a point in no room and no corridor."""

_NS = '{' + NAMESPACE + '}'


class WorldError(ConfigError):
    """A world file that cannot be used; the message names the file, the element and what was expected."""


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
    """A wall's footprint: a ``sx`` x ``sy`` rectangle (m) centred on (``x``, ``y``), rotated by ``yaw``."""

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
        """The door gap's centre on the wall line, where the door pose's heading enters the room (m)."""
        point = _ray_entry(self, self.door)
        if point is None:
            raise WorldError(f"room '{self.name}': its door pose does not face the room")
        return point

    @property
    def entry(self) -> Pose2D:
        """A pose just inside the door (1.5 m past the wall line), facing into the room."""
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

    robot: str
    pose: Pose2D


@dataclass
class EdWorld:
    """The parsed ED floor.

    Attributes
    ----------
    name
        The SDF world name.
    walls
        Wall footprints (oriented rectangles).
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
    """

    name: str
    walls: list[Wall]
    rooms: dict[str, Room]
    readers: list[BadgeReader]
    docks: dict[str, Dock]
    bounds: tuple[float, float, float, float]
    corridors: list[Area] = field(default_factory=list)
    path: Path | None = None

    def room(self, name: str) -> Room:
        """Return the room called ``name``.

        Raises
        ------
        WorldError
            If there is no such room; the message lists the rooms there are.
        """
        try:
            return self.rooms[name]
        except KeyError:
            raise WorldError(f"unknown room '{name}': expected one of {', '.join(self.rooms)}") from None

    def dock(self, robot: str) -> Dock:
        """Return the dock of ``robot``.

        Raises
        ------
        WorldError
            If the world has no dock for that robot.
        """
        try:
            return self.docks[robot]
        except KeyError:
            raise WorldError(f"no dock for robot '{robot}': expected one of "
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


# --- geometry helpers -------------------------------------------------------------------------

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


def _compose(parent: tuple[float, float, float],
             child: tuple[float, float, float]) -> tuple[float, float, float]:
    """Compose planar transforms: ``child`` expressed in ``parent`` -> in parent's frame."""
    px, py, pyaw = parent
    cx, cy, cyaw = child
    c, s = math.cos(pyaw), math.sin(pyaw)
    return px + c * cx - s * cy, py + s * cx + c * cy, pyaw + cyaw


# --- parsing ----------------------------------------------------------------------------------

class _Parser:
    """Parse one SDF file; every error names the file and the element."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, expected: str) -> WorldError:
        return WorldError(f'world file {self.path}: {where}: {expected}')

    def numbers(self, text: str | None, count: int | tuple[int, ...], where: str, what: str) -> list[float]:
        counts = (count,) if isinstance(count, int) else count
        parts = (text or '').split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) not in counts or not all(math.isfinite(v) for v in values):
            raise self.fail(where, f'expected {what}, got {text.strip() if text else "nothing"!r}')
        return values

    def child(self, element: ET.Element, tag: str, where: str, what: str) -> ET.Element:
        found = element.find(_NS + tag)
        if found is None:
            raise self.fail(where, f'missing <robot_team:{tag}> ({what})')
        return found

    def attribute(self, element: ET.Element, name: str, where: str) -> str:
        value = (element.get(name) or '').strip()
        if not value:
            raise self.fail(where, f'missing attribute {name}="..."')
        return value

    def pose(self, element: ET.Element, where: str) -> tuple[float, float, float]:
        """Return the planar (x, y, yaw) of ``element``'s ``<pose>`` (identity if absent)."""
        node = element.find('pose')
        if node is None:
            return 0.0, 0.0, 0.0
        relative_to = (node.get('relative_to') or '').strip()
        if relative_to not in ('', 'world', '__model__'):
            raise self.fail(f'{where}/pose', f'relative_to="{relative_to}" is not supported '
                            '(expected poses relative to the parent element)')
        quat = node.get('rotation_format', 'euler_rpy') == 'quat_xyzw'
        values = self.numbers(node.text, 7 if quat else 6, f'{where}/pose',
                              "'x y z qx qy qz qw'" if quat else "6 numbers 'x y z roll pitch yaw'")
        if quat:
            qx, qy, qz, qw = values[3:]
            roll = math.atan2(2 * (qw * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy))
            pitch = math.asin(max(-1.0, min(1.0, 2 * (qw * qy - qz * qx))))
            yaw = math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz))
        else:
            roll, pitch, yaw = values[3:]
            if node.get('degrees', 'false').strip().lower() in ('true', '1'):
                roll, pitch, yaw = (math.radians(a) for a in (roll, pitch, yaw))
        if abs(roll) > 1e-6 or abs(pitch) > 1e-6:
            raise self.fail(f'{where}/pose', 'expected a planar pose (roll = pitch = 0)')
        return values[0], values[1], yaw

    def walls(self, model: ET.Element, parent: tuple[float, float, float], prefix: str) -> list[Wall]:
        name = model.get('name', '?')
        where = f"{prefix}model '{name}'"
        frame = _compose(parent, self.pose(model, where))
        walls: list[Wall] = []
        for link in model.findall('link'):
            link_where = f"{where}/link '{link.get('name', '?')}'"
            link_frame = _compose(frame, self.pose(link, link_where))
            for collision in link.findall('collision'):
                box = collision.find('geometry/box')
                if box is None:
                    continue
                col_where = f"{link_where}/collision '{collision.get('name', '?')}'"
                size_node = box.find('size')
                size = self.numbers(size_node.text if size_node is not None else None, 3,
                                    f'{col_where}/geometry/box/size', "3 numbers 'sx sy sz'")
                if min(size) <= 0:
                    raise self.fail(f'{col_where}/geometry/box/size', 'expected positive sizes')
                x, y, yaw = _compose(link_frame, self.pose(collision, col_where))
                walls.append(Wall(f'{name}/{link.get("name", "?")}/{collision.get("name", "?")}',
                                  x, y, yaw, size[0], size[1]))
        for nested in model.findall('model'):
            walls.extend(self.walls(nested, frame, where + '/'))
        return walls

    def area(self, element: ET.Element, kind: str) -> tuple[str, tuple[float, float], tuple[float, float]]:
        name = self.attribute(element, 'name', f'<robot_team:{kind}>')
        where = f"<robot_team:{kind} name='{name}'>"
        center = self.numbers(self.child(element, 'center', where, "'x y'").text, 2,
                              f'{where}/center', "2 numbers 'x y'")
        size = self.numbers(self.child(element, 'size', where, "'sx sy'").text, 2,
                            f'{where}/size', "2 positive numbers 'sx sy'")
        if min(size) <= 0:
            raise self.fail(f'{where}/size', f"expected 2 positive numbers 'sx sy', got {size}")
        return name, (center[0], center[1]), (size[0], size[1])

    def load(self) -> EdWorld:
        try:
            text = self.path.read_text(encoding='utf-8')
        except OSError as exc:
            raise WorldError(f'world file {self.path}: cannot read ({exc.strerror})') from exc
        try:
            root = ET.fromstring(text)
        except ET.ParseError as exc:
            raise WorldError(f'world file {self.path}: not valid XML ({exc})') from exc
        if root.tag != 'sdf':
            raise self.fail(f'<{root.tag}>', 'expected an <sdf> root element')
        world = root.find('world')
        if world is None:
            raise self.fail('<sdf>', 'missing <world>')

        walls: list[Wall] = []
        for model in world.findall('model'):
            walls.extend(self.walls(model, (0.0, 0.0, 0.0), ''))
        if not walls:
            raise self.fail('<world>', 'expected walls: <model> elements with <box> collisions')

        rooms: dict[str, Room] = {}
        for element in world.findall(_NS + 'room'):
            name, center, size = self.area(element, 'room')
            where = f"<robot_team:room name='{name}'>"
            if name in rooms:
                raise self.fail(where, 'duplicate room name')
            door_el = self.child(element, 'door', where, "approach pose 'x y yaw'")
            door = Pose2D(*self.numbers(door_el.text, 3, f'{where}/door', "3 numbers 'x y yaw'"))
            width = self.numbers(door_el.get('width', '1.2'), 1, f'{where}/door@width', 'a width in m')[0]
            room = Room(name, element.get('kind', 'room'), center, size, door, width)
            if _ray_entry(room, door) is None or room.contains(door.x, door.y):
                raise self.fail(f'{where}/door', 'expected an approach pose outside the room, facing it')
            rooms[name] = room
        if not rooms:
            raise self.fail('<world>', f'no <robot_team:room> elements (namespace {NAMESPACE} '
                            'declared on <sdf> as xmlns:robot_team)')

        corridors = []
        for element in world.findall(_NS + 'corridor'):
            corridors.append(Area(*self.area(element, 'corridor')))

        readers: list[BadgeReader] = []
        for element in world.findall(_NS + 'badge_reader'):
            reader_id = self.attribute(element, 'id', '<robot_team:badge_reader>')
            where = f"<robot_team:badge_reader id='{reader_id}'>"
            room = self.attribute(element, 'room', where)
            if room not in rooms:
                raise self.fail(where, f"room '{room}' is not a <robot_team:room> of this world")
            x, y = self.numbers(self.child(element, 'position', where, "'x y'").text, 2,
                                f'{where}/position', "2 numbers 'x y'")
            radius = self.numbers(self.child(element, 'radius', where, 'in m').text, 1,
                                  f'{where}/radius', 'a positive radius in m')[0]
            if radius <= 0:
                raise self.fail(f'{where}/radius', f'expected a positive radius in m, got {radius}')
            readers.append(BadgeReader(reader_id, room, x, y, radius))

        docks: dict[str, Dock] = {}
        for element in world.findall(_NS + 'dock'):
            robot = self.attribute(element, 'robot', '<robot_team:dock>')
            where = f"<robot_team:dock robot='{robot}'>"
            docks[robot] = Dock(robot, Pose2D(*self.numbers(element.text, 3, where, "3 numbers 'x y yaw'")))

        corners = np.vstack([w.corners() for w in walls])
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        return EdWorld(name=world.get('name', self.path.stem), walls=walls, rooms=rooms, readers=readers,
                       docks=docks, bounds=(float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])),
                       corridors=corridors, path=self.path)


def load_world(path: str | Path) -> EdWorld:
    """Load an SDFormat world and its ``robot_team`` annotations.

    Parameters
    ----------
    path
        The ``.sdf`` file.

    Returns
    -------
    EdWorld
        Walls, rooms, corridors, badge readers, docks and bounds, in the map frame (m, rad).

    Raises
    ------
    WorldError
        If the file is missing or not XML, or an element is missing or malformed; the message
        names the file, the element and what was expected.
    """
    return _Parser(Path(path)).load()
