"""Occupancy grid of the ED floor: its walls (the planner on top of it is :mod:`robot_team.sim.planner`).

The grid follows ``nav_msgs/OccupancyGrid``: cells of ``resolution`` metres, row-major from the
origin at the lower-left corner (row = y index, column = x index, REP-103 map frame), values 0
(free) and 100 (occupied). Walls and closed doors are occupied; the robot's footprint is taken
into account by inflating them by ``robot_radius`` (cells the robot centre may not enter), as
Nav2's inflation layer does, plus a decaying cost beyond it that keeps paths in the middle of
corridors and door gaps.

Planning is an 8-connected shortest path on the free cells with ``scipy.sparse.csgraph``
(Dijkstra from the goal). The graph is built once per grid and undirected; the shortest-path
tree of a cell is cached, so re-planning to the same goal, or from a cell that was a goal
before (a robot leaving the place it was sent to), costs only the path walk. No rclpy here.

:class:`WallGrid` is the walls alone (occupancy, clearance, line of sight) with numpy only; it is
what the hospital's systems need to place and walk people.
:class:`~robot_team.sim.planner.OccupancyGrid` adds inflation and the planner with scipy, in its
own module (so that a process that only needs the walls does not import scipy).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from robot_team.contracts.floor import Floor, Wall
from robot_team.contracts.nav2_codes import ComputePathToPoseError

FREE = 0
OCCUPIED = 100


class PlanningError(RuntimeError):
    """No path could be planned; ``code`` is a Nav2 ``ComputePathToPose`` error code.

    Codes and names are those of :class:`robot_team.contracts.nav2_codes.ComputePathToPoseError`
    (``nav2_msgs/action/ComputePathToPose.action``, Jazzy), available here as class constants.
    Nav2's bt_navigator reports the planner's code as the ``NavigateToPose`` result's
    ``error_code``, and so does the simulator.

    Parameters
    ----------
    code
        One of the class constants below.
    message
        What went wrong, in words.
    pose_index
        For a goal through several poses, the index (from 0) of the pose whose leg failed; else None.
    """

    NONE = int(ComputePathToPoseError.NONE)
    UNKNOWN = int(ComputePathToPoseError.UNKNOWN)
    INVALID_PLANNER = int(ComputePathToPoseError.INVALID_PLANNER)
    TF_ERROR = int(ComputePathToPoseError.TF_ERROR)
    START_OUTSIDE_MAP = int(ComputePathToPoseError.START_OUTSIDE_MAP)
    GOAL_OUTSIDE_MAP = int(ComputePathToPoseError.GOAL_OUTSIDE_MAP)
    START_OCCUPIED = int(ComputePathToPoseError.START_OCCUPIED)
    GOAL_OCCUPIED = int(ComputePathToPoseError.GOAL_OCCUPIED)
    TIMEOUT = int(ComputePathToPoseError.TIMEOUT)
    NO_VALID_PATH = int(ComputePathToPoseError.NO_VALID_PATH)

    NAMES = {int(c): c.name for c in ComputePathToPoseError}

    def __init__(self, code: int, message: str, pose_index: int | None = None):
        super().__init__(f'{self.NAMES.get(code, code)}: {message}')
        self.code = int(code)
        self.message = message
        self.pose_index = pose_index

    @property
    def name(self) -> str:
        """The Nav2 name of the code, e.g. ``'NO_VALID_PATH'``."""
        return self.NAMES.get(self.code, 'UNKNOWN')


def _rasterize(mask: np.ndarray, origin: np.ndarray, resolution: float, boxes: Iterable[Wall]) -> None:
    """Mark in ``mask`` (rows = y) every cell whose centre lies in one of the oriented ``boxes``.

    Boxes are grown by just under half a cell so that walls thinner than a cell still leave a
    line of occupied cells.
    """
    grow = 0.49 * resolution
    rows, cols = mask.shape
    for box in boxes:
        corners = box.corners()
        lo = np.floor((corners.min(axis=0) - origin) / resolution).astype(int) - 1
        hi = np.ceil((corners.max(axis=0) - origin) / resolution).astype(int) + 1
        c0, r0 = np.maximum(lo, 0)
        c1, r1 = min(hi[0], cols), min(hi[1], rows)
        if c0 >= c1 or r0 >= r1:
            continue
        xs = origin[0] + (np.arange(c0, c1) + 0.5) * resolution - box.x
        ys = origin[1] + (np.arange(r0, r1) + 0.5) * resolution - box.y
        c, s = math.cos(box.yaw), math.sin(box.yaw)
        u = c * xs[None, :] + s * ys[:, None]          # along the box's x axis
        v = -s * xs[None, :] + c * ys[:, None]         # along its y axis
        inside = (np.abs(u) <= box.sx / 2 + grow) & (np.abs(v) <= box.sy / 2 + grow)
        mask[r0:r1, c0:c1] |= inside


def raster_walls(world: Floor, resolution: float, closed_doors: Iterable[str]) -> tuple[np.ndarray, tuple]:
    """Return ``world``'s walls (rooms in ``closed_doors`` with their door gap filled) as a grid and its origin."""
    xmin, ymin, xmax, ymax = world.bounds
    # Align the origin on the resolution (ignoring rounding noise of the wall corners, < 1 mm).
    origin = resolution * np.array([math.floor(round(xmin / resolution, 2)),
                                    math.floor(round(ymin / resolution, 2))])
    width = int(math.ceil(round((xmax - origin[0]) / resolution, 2)))
    height = int(math.ceil(round((ymax - origin[1]) / resolution, 2)))
    walls = np.zeros((height, width), dtype=bool)
    _rasterize(walls, origin, resolution, world.walls)
    doors = []
    for name in closed_doors:
        room = world.room(name)
        gx, gy = room.door_gap
        # A panel across the gap, along the wall (perpendicular to the approach heading).
        doors.append(Wall(f'{name}/closed_door', gx, gy, room.door.yaw + math.pi / 2,
                          room.door_width + 0.4, 0.4))
    _rasterize(walls, origin, resolution, doors)
    return walls, (float(origin[0]), float(origin[1]))


class WallGrid:
    """A 2-D grid of the floor's walls and closed doors: occupancy, clearance and line of sight (numpy only).

    Attributes
    ----------
    data : np.ndarray
        Shape (height, width), int8: 0 free, 100 wall or closed door (``nav_msgs/OccupancyGrid``).
    resolution : float
        Cell size, m.
    origin : np.ndarray
        Shape (2,): map-frame position of the lower-left corner of cell (0, 0), m.
    """

    def __init__(self, walls: np.ndarray, resolution: float, origin: tuple[float, float]):
        self.resolution = float(resolution)
        self.origin = np.asarray(origin, dtype=float)
        self._walls = np.asarray(walls, dtype=bool)
        self.data = np.where(self._walls, OCCUPIED, FREE).astype(np.int8)

    @classmethod
    def from_world(cls, world: Floor, resolution: float = 0.1, closed_doors: Iterable[str] = ()) -> 'WallGrid':
        """Rasterize ``world``'s walls; rooms named in ``closed_doors`` have their door gap filled.

        Raises
        ------
        FloorError
            (``WorldError`` in the simulator) if a room in ``closed_doors`` does not exist.
        """
        walls, origin = raster_walls(world, resolution, closed_doors)
        return cls(walls, resolution, origin)

    # --- geometry ---------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """Number of columns (cells along x)."""
        return self.data.shape[1]

    @property
    def height(self) -> int:
        """Number of rows (cells along y)."""
        return self.data.shape[0]

    def cell_of(self, x: float, y: float) -> tuple[int, int] | None:
        """Return the (row, col) of the cell containing (x, y) (m), or None outside the grid."""
        col = int(math.floor((x - self.origin[0]) / self.resolution))
        row = int(math.floor((y - self.origin[1]) / self.resolution))
        if 0 <= row < self.height and 0 <= col < self.width:
            return row, col
        return None

    def center_of(self, row: int, col: int) -> tuple[float, float]:
        """Return the map-frame centre (x, y) of a cell, m."""
        return (float(self.origin[0] + (col + 0.5) * self.resolution),
                float(self.origin[1] + (row + 0.5) * self.resolution))

    def is_wall(self, x: float, y: float) -> bool:
        """Return whether (x, y) is in a wall or closed door (outside the grid counts as wall)."""
        cell = self.cell_of(x, y)
        return cell is None or bool(self._walls[cell])

    def is_clear(self, x: float, y: float, clearance: float) -> bool:
        """Return whether the cell of (x, y) is in the grid and no wall cell's centre is closer than ``clearance`` m.

        The distance is between cell centres, as a Euclidean distance transform measures it.
        """
        cell = self.cell_of(x, y)
        if cell is None:
            return False
        r = int(math.ceil(clearance / self.resolution))
        r0, c0 = max(cell[0] - r, 0), max(cell[1] - r, 0)
        window = self._walls[r0:cell[0] + r + 1, c0:cell[1] + r + 1]
        rows, cols = np.nonzero(window)
        distance = np.hypot(rows + r0 - cell[0], cols + c0 - cell[1]) * self.resolution
        return not (distance < clearance).any()

    def line_of_sight(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        """Return whether the segment from ``a`` to ``b`` (m) crosses no wall or closed door."""
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        steps = max(2, int(np.linalg.norm(b - a) / (self.resolution / 2)) + 1)
        points = a + np.linspace(0.0, 1.0, steps)[:, None] * (b - a)
        cells = np.floor((points - self.origin) / self.resolution).astype(int)
        inside = ((cells[:, 0] >= 0) & (cells[:, 0] < self.width)
                  & (cells[:, 1] >= 0) & (cells[:, 1] < self.height))
        if not inside.all():
            return False
        return not self._walls[cells[:, 1], cells[:, 0]].any()
