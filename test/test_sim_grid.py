"""Occupancy grid and planner of the simulator (no ROS graph needed)."""

import time

import numpy as np
import pytest

from robot_team.sim.grid import OCCUPIED, PlanningError
from robot_team.sim.planner import OccupancyGrid, densify, path_length
from robot_team.sim.world import WorldError, load_world


@pytest.fixture(scope='module')
def world():
    return load_world('ed_floor.yaml')


@pytest.fixture(scope='module')
def grid(world):
    return OccupancyGrid.from_world(world)


def test_grid_follows_nav_msgs_layout(grid, world):
    assert grid.resolution == pytest.approx(0.1)
    assert grid.data.dtype == np.int8 and set(np.unique(grid.data)) == {0, OCCUPIED}
    # Row-major from the lower-left origin: row = y index, column = x index.
    row, col = grid.cell_of(15.0, 3.0)          # on the wall between ER-1 and ER-2
    assert grid.data[row, col] == OCCUPIED
    assert grid.center_of(row, col) == pytest.approx((15.0, 3.0), abs=grid.resolution)
    assert grid.data[grid.cell_of(12.5, 3.0)] == 0
    assert not grid.is_free(15.2, 3.0) and grid.is_free(12.5, 3.0)   # inflation by the robot radius
    assert grid.cell_of(-5.0, 3.0) is None


def test_plans_around_walls(grid, world):
    dock = world.dock('navigation_robot').pose
    goal = world.room('ER-12').entry
    path = grid.plan((dock.x, dock.y), (goal.x, goal.y))
    assert path.shape[1] == 2 and len(path) > 2
    assert path[0] == pytest.approx((dock.x, dock.y)) and path[-1] == pytest.approx((goal.x, goal.y))
    # Every point of the densely resampled path is clear of the inflated walls.
    dense = np.vstack([np.linspace(a, b, 20) for a, b in zip(path[:-1], path[1:])])
    assert all(grid.is_free(x, y) for x, y in dense[1:-1])
    straight = np.hypot(goal.x - dock.x, goal.y - dock.y)
    assert path_length(path) > straight + 10      # walls force a detour through the corridors
    assert path_length(path) < 80


def test_plan_is_fast_and_cached(grid, world):
    a, b = world.room('Triage').center, world.room('ER-9').entry
    start = time.perf_counter()
    grid.plan(a, (b.x, b.y))
    first = time.perf_counter() - start
    start = time.perf_counter()
    grid.plan((a[0] + 0.5, a[1]), (b.x, b.y))
    again = time.perf_counter() - start
    assert first < 0.25 and again < first    # loose bounds: shared CI machines


def test_a_tree_serves_both_ways(world):
    """The graph is undirected: leaving a place that was a goal reuses the tree rooted there."""
    grid = OccupancyGrid.from_world(world)
    dock = world.dock('navigation_robot').pose
    lounge, er12 = world.room('Staff lounge').center, world.room('ER-12').entry
    grid.plan((dock.x, dock.y), lounge)                  # one tree, rooted at the lounge
    assert len(grid._trees) == 1
    out = grid.plan(lounge, (er12.x, er12.y))            # from the lounge: the same tree, walked back
    assert len(grid._trees) == 1
    fresh = OccupancyGrid.from_world(world).plan(lounge, (er12.x, er12.y))   # rooted at ER-12
    assert out[0] == pytest.approx(lounge) and out[-1] == pytest.approx((er12.x, er12.y))
    assert path_length(out) == pytest.approx(path_length(fresh), rel=0.02)
    dense = np.vstack([np.linspace(p, q, 20) for p, q in zip(out[:-1], out[1:])])
    assert all(grid.is_free(x, y) for x, y in dense[1:-1])
    closed = OccupancyGrid.from_world(world, closed_doors=['ER-12'])
    closed.plan((dock.x, dock.y), lounge)
    with pytest.raises(PlanningError) as err:            # unreachable, found in the reused tree too
        closed.plan(lounge, (er12.x, er12.y))
    assert err.value.code == PlanningError.NO_VALID_PATH and len(closed._trees) == 1


def test_closed_door_gives_no_valid_path(world):
    closed = OccupancyGrid.from_world(world, closed_doors=['ER-12'])
    start = world.dock('navigation_robot').pose
    with pytest.raises(PlanningError) as err:
        closed.plan((start.x, start.y), world.room('ER-12').center)
    assert err.value.code == PlanningError.NO_VALID_PATH == 208
    assert err.value.name == 'NO_VALID_PATH'
    # The corridor in front of the closed door is still reachable.
    door = world.room('ER-12').door
    assert len(closed.plan((start.x, start.y), (door.x, door.y))) >= 2
    with pytest.raises(WorldError, match='unknown room'):
        OccupancyGrid.from_world(world, closed_doors=['ER-99'])


def test_error_codes_for_bad_starts_and_goals(grid):
    cases = [((-3.0, 5.0), (12.5, 3.0), PlanningError.START_OUTSIDE_MAP),
             ((12.5, 3.0), (100.0, 5.0), PlanningError.GOAL_OUTSIDE_MAP),
             ((15.0, 3.0), (12.5, 3.0), PlanningError.START_OCCUPIED),
             ((12.5, 3.0), (15.0, 3.0), PlanningError.GOAL_OCCUPIED)]
    for start, goal, code in cases:
        with pytest.raises(PlanningError) as err:
            grid.plan(start, goal)
        assert err.value.code == code, (start, goal, err.value)


def test_start_in_inflation_zone_is_snapped(grid):
    # 0.2 m from the wall at x = 15 (inside the 0.3 m inflation, not in the wall).
    path = grid.plan((14.8, 3.0), (12.5, 3.0))
    assert path[0] == pytest.approx((14.8, 3.0))
    assert grid.is_free(*path[1])
    assert np.hypot(*(path[1] - path[0])) <= 0.5


def test_densify_keeps_points_and_bounds_spacing():
    path = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.35]])
    dense = densify(path, 0.1)
    assert len(dense) == 10 + 4 + 1
    steps = np.linalg.norm(np.diff(dense, axis=0), axis=1)
    assert steps.max() <= 0.1 + 1e-9
    assert all(any(np.allclose(p, q) for q in dense) for p in path)
    assert path_length(dense) == pytest.approx(path_length(path))
    with pytest.raises(ValueError):
        densify(path, 0.0)
