"""Occupancy grid of the ED floor and a grid path planner (the simulator's stand-in for Nav2's planner).

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
what the hospital's systems need to place and walk people. :class:`OccupancyGrid` adds inflation
and the planner, and imports scipy when it is built (so that a process that only needs the walls
does not pay for scipy).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Iterable

import numpy as np

from robot_team.floor import Floor, Wall
from robot_team.nav2_codes import ComputePathToPoseError

FREE = 0
OCCUPIED = 100


class PlanningError(RuntimeError):
    """No path could be planned; ``code`` is a Nav2 ``ComputePathToPose`` error code.

    Codes and names are those of :class:`robot_team.nav2_codes.ComputePathToPoseError`
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


def _raster_world(world: Floor, resolution: float, closed_doors: Iterable[str]) -> tuple[np.ndarray, tuple]:
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
        walls, origin = _raster_world(world, resolution, closed_doors)
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


class OccupancyGrid(WallGrid):
    """A 2-D occupancy grid with inflation and a cached 8-connected planner.

    Attributes
    ----------
    data : np.ndarray
        Shape (height, width), int8: 0 free, 100 wall or closed door (``nav_msgs/OccupancyGrid``).
    blocked : np.ndarray
        Shape (height, width), bool: cells the robot centre may not occupy (walls inflated by
        ``robot_radius``).
    resolution : float
        Cell size, m.
    origin : np.ndarray
        Shape (2,): map-frame position of the lower-left corner of cell (0, 0), m.
    robot_radius : float
        Inflation radius, m.

    Notes
    -----
    Not thread-safe: callers serialize access (the simulator holds one lock around its engine).
    """

    COST_WEIGHT = 4.0      # how much the cost near walls lengthens an edge (0: pure shortest path)
    COST_DECAY = 3.0       # 1/m: exponential decay of that cost beyond the inflation radius
    SNAP_DISTANCE = 0.5    # m: a start/goal in the inflation zone moves to a free cell this close
    CACHE_SIZE = 32        # shortest-path trees kept (one per goal cell)

    def __init__(self, walls: np.ndarray, resolution: float, origin: tuple[float, float],
                 robot_radius: float):
        from scipy import ndimage
        from scipy.sparse.csgraph import dijkstra
        self._dijkstra = dijkstra      # imported now, not at the first plan
        super().__init__(walls, resolution, origin)
        self.robot_radius = float(robot_radius)
        distance = ndimage.distance_transform_edt(~self._walls) * self.resolution
        self.blocked = distance < self.robot_radius + self.resolution / 2
        # Nearest free cell of every cell (for snapping starts and goals out of the inflation zone).
        snap_distance, snap_index = ndimage.distance_transform_edt(self.blocked, return_indices=True)
        self._snap_distance = snap_distance * self.resolution
        self._snap_index = snap_index
        cost = np.exp(-self.COST_DECAY * np.maximum(distance - self.robot_radius, 0.0))
        self._build_graph(cost)
        self._trees: OrderedDict[int, np.ndarray] = OrderedDict()

    @classmethod
    def from_world(cls, world: Floor, resolution: float = 0.1, robot_radius: float = 0.3,
                   closed_doors: Iterable[str] = ()) -> 'OccupancyGrid':
        """Rasterize ``world``'s walls; rooms named in ``closed_doors`` have their door gap filled.

        Parameters
        ----------
        world
            The floor (:func:`robot_team.floor.load_floor`; the simulator's ``EdWorld``).
        resolution
            Cell size, m.
        robot_radius
            Inflation radius (robot footprint radius), m.
        closed_doors
            Names of rooms whose door is closed.

        Raises
        ------
        FloorError
            (``WorldError`` in the simulator) if a room in ``closed_doors`` does not exist.
        """
        walls, origin = _raster_world(world, resolution, closed_doors)
        return cls(walls, resolution, origin, robot_radius)

    def is_free(self, x: float, y: float) -> bool:
        """Return whether the robot centre may be at (x, y) (in the grid, outside the inflation)."""
        cell = self.cell_of(x, y)
        return cell is not None and not self.blocked[cell]

    # --- planning ---------------------------------------------------------------------------

    def _build_graph(self, cost: np.ndarray) -> None:
        free = ~self.blocked
        index = -np.ones(free.shape, dtype=np.int64)
        index[free] = np.arange(int(free.sum()))
        self._node_index = index
        self._node_cells = np.argwhere(free)          # node -> (row, col)
        rows, cols, weights = [], [], []
        h, w = free.shape
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            r0, r1 = 0, h - dr
            c0, c1 = max(0, -dc), w - max(0, dc)
            a = (slice(r0, r1), slice(c0, c1))
            b = (slice(r0 + dr, r1 + dr), slice(c0 + dc, c1 + dc))
            ok = free[a] & free[b]
            if dr and dc:   # no corner cutting: both orthogonal neighbours free too
                ok &= free[(slice(r0, r1), slice(c0 + dc, c1 + dc))]
                ok &= free[(slice(r0 + dr, r1 + dr), slice(c0, c1))]
            step = self.resolution * (math.sqrt(2.0) if dr and dc else 1.0)
            rows.append(index[a][ok])
            cols.append(index[b][ok])
            weights.append(step * (1.0 + self.COST_WEIGHT * 0.5 * (cost[a][ok] + cost[b][ok])))
        from scipy.sparse import coo_matrix
        n = len(self._node_cells)
        self._graph = coo_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))),
                                 shape=(n, n)).tocsr()

    def _snap(self, x: float, y: float, outside_code: int, occupied_code: int, what: str) -> int:
        """Return the graph node for (x, y), snapping out of the inflation zone; raise PlanningError."""
        cell = self.cell_of(x, y)
        if cell is None:
            raise PlanningError(outside_code, f'{what} ({x:.2f}, {y:.2f}) is outside the map')
        if self._walls[cell]:
            raise PlanningError(occupied_code, f'{what} ({x:.2f}, {y:.2f}) is inside a wall or closed door')
        if self.blocked[cell]:
            if self._snap_distance[cell] > self.SNAP_DISTANCE:
                raise PlanningError(occupied_code, f'{what} ({x:.2f}, {y:.2f}) is too close to a wall '
                                    f'(no free cell within {self.SNAP_DISTANCE} m)')
            cell = (int(self._snap_index[0][cell]), int(self._snap_index[1][cell]))
        return int(self._node_index[cell])

    def _cached(self, node: int) -> np.ndarray | None:
        """Return the cached shortest-path tree rooted at ``node``, if any (and mark it recently used)."""
        tree = self._trees.get(node)
        if tree is not None:
            self._trees.move_to_end(node)
        return tree

    def _tree(self, goal_node: int) -> np.ndarray:
        """Return the predecessor array of the shortest-path tree rooted at ``goal_node`` (cached)."""
        tree = self._cached(goal_node)
        if tree is None:
            _, tree = self._dijkstra(self._graph, directed=False, indices=goal_node, return_predecessors=True)
            self._trees[goal_node] = tree
            if len(self._trees) > self.CACHE_SIZE:
                self._trees.popitem(last=False)
        return tree

    def plan(self, start_xy, goal_xy) -> np.ndarray:
        """Plan a collision-free path from ``start_xy`` to ``goal_xy`` (map frame, m).

        A start or goal inside the inflation zone (but not in a wall) is first moved to the
        nearest free cell within 0.5 m.

        Returns
        -------
        np.ndarray
            Shape (N, 2), N >= 2: waypoints in metres from the start to the goal (both exact),
            through cell centres, with collinear points dropped.

        Raises
        ------
        PlanningError
            ``START_OUTSIDE_MAP`` / ``GOAL_OUTSIDE_MAP`` (outside the grid), ``START_OCCUPIED`` /
            ``GOAL_OCCUPIED`` (in a wall or no free cell within 0.5 m), ``NO_VALID_PATH`` (not
            connected, e.g. behind a closed door).
        """
        sx, sy = (float(v) for v in start_xy)
        gx, gy = (float(v) for v in goal_xy)
        start = self._snap(sx, sy, PlanningError.START_OUTSIDE_MAP, PlanningError.START_OCCUPIED, 'start')
        goal = self._snap(gx, gy, PlanningError.GOAL_OUTSIDE_MAP, PlanningError.GOAL_OCCUPIED, 'goal')
        # The graph is undirected: a tree rooted at the start serves as well, walked the other way.
        reverse = self._cached(goal) is None and self._cached(start) is not None
        root, leaf = (start, goal) if reverse else (goal, start)
        tree = self._tree(root)
        nodes = [leaf]
        if start != goal:
            if tree[leaf] < 0:
                raise PlanningError(PlanningError.NO_VALID_PATH,
                                    f'no valid path from ({sx:.2f}, {sy:.2f}) to ({gx:.2f}, {gy:.2f})')
            node = leaf
            while node != root:
                node = int(tree[node])
                nodes.append(node)
        if reverse:
            nodes.reverse()
        cells = self._node_cells[nodes]
        centres = self.origin + (cells[:, ::-1] + 0.5) * self.resolution
        path = np.vstack([[sx, sy], centres, [gx, gy]])
        return _simplify(path)

    @staticmethod
    def path_length(path: np.ndarray) -> float:
        """Return the length of a polyline of shape (N, 2), m (0 for fewer than 2 points)."""
        path = np.asarray(path, dtype=float)
        if len(path) < 2:
            return 0.0
        return float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())


def path_length(path: np.ndarray) -> float:
    """Return the length of a polyline of shape (N, 2), m."""
    return OccupancyGrid.path_length(path)


def densify(path: np.ndarray, spacing: float) -> np.ndarray:
    """Return ``path`` (shape (N, 2), m) with points added so that none are more than ``spacing`` m apart.

    Every original point is kept, in order; the result has shape (M, 2), M >= N. Nav2's grid
    planners return a pose per cell; :meth:`OccupancyGrid.plan` keeps only the corners.

    Raises
    ------
    ValueError
        If ``spacing`` is not positive.
    """
    if not spacing > 0:
        raise ValueError(f'spacing must be positive, got {spacing}')
    path = np.asarray(path, dtype=float).reshape(-1, 2)
    if len(path) < 2:
        return path.copy()
    out = [path[:1]]
    for a, b in zip(path[:-1], path[1:]):
        n = max(1, int(math.ceil(float(np.linalg.norm(b - a)) / spacing - 1e-9)))
        f = np.arange(1, n + 1)[:, None] / n
        out.append(a + f * (b - a))
    return np.vstack(out)


def _simplify(path: np.ndarray) -> np.ndarray:
    """Drop repeated points and interior points where the direction does not change."""
    keep = np.ones(len(path), dtype=bool)
    keep[1:] = np.linalg.norm(np.diff(path, axis=0), axis=1) > 1e-9
    path = path[keep]
    if len(path) < 3:
        return path if len(path) >= 2 else np.vstack([path, path])
    d = np.diff(path, axis=0)
    d /= np.linalg.norm(d, axis=1)[:, None]
    turn = np.abs(d[1:, 0] * d[:-1, 1] - d[1:, 1] * d[:-1, 0]) > 1e-9
    turn |= (d[1:] * d[:-1]).sum(axis=1) < 0
    keep = np.concatenate([[True], turn, [True]])
    return path[keep]
