"""The Nav2 planner stand-in: an inflated occupancy grid and its shortest paths (scipy).

:class:`OccupancyGrid` extends the walls-only :class:`~robot_team.sim.grid.WallGrid` (numpy only,
what ``hospital_systems`` needs) with the robot's clearance, a cost map and Dijkstra shortest
paths over the free cells (``scipy.sparse.csgraph``), as Nav2's planner server plans on the map
server's map. Only ``motion_sim`` imports it. Units: m, rad, ``map`` frame.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Iterable

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from robot_team.contracts.floor import Floor
from robot_team.sim.grid import PlanningError, WallGrid, raster_walls


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
        self._dijkstra = dijkstra
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
            The floor (:func:`robot_team.contracts.floor.load_floor`; the simulator's ``EdWorld``).
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
        walls, origin = raster_walls(world, resolution, closed_doors)
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
