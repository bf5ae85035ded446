"""Robot motion on the ED floor, without ROS: what Gazebo and Nav2 provide to each robot.

:class:`MotionEngine` is pure and deterministic: the same floor, closed doors and sequence of
calls give the same poses and events. Time only moves in :meth:`MotionEngine.step`; calls between
steps (goals, plans, cancels) take effect at the current sim time. ``sim/motion_node.py`` wraps it
in the ``motion_sim`` node (Nav2's actions, ``amcl_pose``, ``odom``, ``map``, ``/clock``); this
module imports no rclpy and knows nothing of HCWs or the hospital's systems
(:mod:`robot_team.sim.hospital`), which see the robots only through their published poses.

What is simulated
-----------------
* Robots start at their docks and follow planned paths (:class:`~robot_team.sim.grid.OccupancyGrid`)
  at ``max_speed``, heading along the path; one goal per robot, a new goal preempts the old one.
  A goal is a pose (:meth:`MotionEngine.start_goal`, Nav2's ``navigate_to_pose``), poses in order
  (:meth:`MotionEngine.start_through_poses`, ``navigate_through_poses``) or a given path to drive
  along (:meth:`MotionEngine.start_follow_path`, ``follow_path``). :meth:`MotionEngine.plan`
  plans without moving (``compute_path_to_pose``).
* Closed doors (``closed_doors``, the scenario's ``blocked_doors``) are filled in the grid: no
  path through them. Doors closing or opening at given times (``door_changes``, the scenario's)
  change the grid then. An active goal whose way ahead crosses a door that just closed ends
  ``aborted`` at once with ``NO_VALID_PATH`` (``NO_VALID_CONTROL`` for ``follow_path``): a room
  has one door, so that way enters or leaves the room and Nav2's replanning on its updated
  costmap would find no other. A door that opens does not shorten a way already planned.
* Localization as AMCL reports it (:meth:`MotionEngine.drain_localization`): a robot's pose at
  start, then whenever it has moved 0.25 m or turned 0.2 rad since the last report (Nav2's AMCL
  defaults ``update_min_d``, ``update_min_a``), checked every substep, and where it stops. Exact
  poses (no noise); nothing while a robot stands.

Events (:class:`~robot_team.sim.common.SimEvent`, ground truth): ``goal_accepted``,
``waypoint_reached``, ``goal_succeeded``, ``goal_aborted``, ``goal_canceled``, ``path_computed``,
``path_failed``.

Units: SI (m, s, rad), poses in the map frame (REP-103/105).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from robot_team.contracts import names
from robot_team.contracts.config import ConfigError
from robot_team.contracts.names import RobotId
from robot_team.sim.common import (BASE_ROBOTS, DoorTimeline, EventLog, Polyline, SimEvent, SimInputError,
                                   run_ahead_copy, substeps, wrap_angle)
from robot_team.sim.grid import PlanningError
from robot_team.sim.planner import OccupancyGrid
from robot_team.sim.world import EdWorld, Pose2D

MAX_SUBSTEP_S = 0.1        # step() integrates in substeps of at most this much sim time
AMCL_UPDATE_MIN_D = 0.25   # m: a localization report after this much travel (Nav2 amcl update_min_d)
AMCL_UPDATE_MIN_A = 0.2    # rad: ... or this much rotation (Nav2 amcl update_min_a)
PATH_START_TOLERANCE_M = 1.0  # a path to follow must start this close to the robot (in line of sight)
FORECAST_HORIZON_S = 900.0    # MotionEngine.forecast looks this far ahead at most (sim s)
FORECAST_STEP_S = 1.0         # ... stepping its copy as the follow clock steps the engine (sim s)

# Goal kinds: the Nav2 action each kind of goal stands for.
NAVIGATE_TO_POSE, NAVIGATE_THROUGH_POSES, FOLLOW_PATH = (
    names.NAVIGATE_TO_POSE, names.NAVIGATE_THROUGH_POSES, names.FOLLOW_PATH)

ACTIVE, SUCCEEDED, ABORTED, CANCELED = 'active', 'succeeded', 'aborted', 'canceled'


class FollowPathError(RuntimeError):
    """A path the robot cannot follow; ``code`` is a Nav2 ``FollowPath`` result error code.

    Codes and names are those of ``nav2_msgs/action/FollowPath.action`` (navigation2 ``kilted``,
    the same in Jazzy): ``INVALID_PATH=103`` (empty, not finite, outside the map, or starting
    farther than 1 m from the robot), ``NO_VALID_CONTROL=106`` (a segment crosses a wall or a
    closed door, so no collision-free command exists).

    Parameters
    ----------
    code
        ``INVALID_PATH`` or ``NO_VALID_CONTROL``.
    message
        What is wrong with the path, in words (names the offending pose index).
    """

    INVALID_PATH = 103
    NO_VALID_CONTROL = 106

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = int(code)
        self.message = message


@dataclass
class GoalStatus:
    """Snapshot of a navigation goal.

    ``state`` is ``active``, ``succeeded``, ``aborted`` or ``canceled``; distances in m, times in
    s (sim); ``error_code`` is a Nav2 ComputePathToPose code (0 unless planning failed) or, for a
    ``follow_path`` goal, a FollowPath code. ``action`` is the goal's kind (``navigate_to_pose``,
    ``navigate_through_poses`` or ``follow_path``); ``poses_remaining`` counts the goal's poses not
    yet reached (the final one included; 0 once it succeeded) and ``poses_total`` all of them.
    """

    goal_id: int
    robot: RobotId
    target: Pose2D
    state: str
    pose: Pose2D
    distance_remaining: float
    eta_s: float
    navigation_time_s: float
    path_length: float
    error_code: int = 0
    message: str = ''
    action: str = NAVIGATE_TO_POSE
    poses_remaining: int = 0
    poses_total: int = 1


@dataclass
class _Goal:
    goal_id: int
    robot: RobotId
    target: Pose2D
    path: Polyline
    started_at: float
    state: str = ACTIVE
    s: float = 0.0
    ended_at: float | None = None
    error_code: int = 0
    message: str = ''
    action: str = NAVIGATE_TO_POSE
    waypoint_s: list[float] = field(default_factory=list)   # arc length at each pose but the last
    waypoints_reached: int = 0


@dataclass
class _RobotState:
    name: RobotId
    x: float
    y: float
    yaw: float
    goal: _Goal | None = None
    speed: float = 0.0
    yaw_rate: float = 0.0
    reported: Pose2D | None = None   # the pose of the last localization report


class MotionEngine:
    """A deterministic, time-stepped simulation of the robots' motion on the ED floor.

    Parameters
    ----------
    world
        The ED floor (:func:`robot_team.sim.world.load_world`).
    robots
        Robot names; each must have a dock in the world. Robots start at their docks.
    closed_doors
        Names of rooms whose door is closed at the start (the scenario's ``blocked_doors``).
    door_changes
        Doors closing and opening at given sim times (:class:`robot_team.contracts.config.DoorChange`, the
        scenario's ``door_changes``), applied by :meth:`step`.
    max_speed
        Robot speed along its path, m/s.
    resolution, robot_radius
        Occupancy grid cell size and inflation radius, m.

    Raises
    ------
    ConfigError
        (or its subclass ``WorldError``) if a robot has no dock, a closed door or a door change
        names no room of the world, or ``max_speed`` is not positive.

    Notes
    -----
    Not thread-safe: the ROS node serializes every call with one lock. Events produced by calls
    between steps (goals, plans, cancels) are returned by the next :meth:`step` (or
    :meth:`drain_events`), in the order they happened.
    """

    def __init__(self, world: EdWorld, robots: Sequence[RobotId] = BASE_ROBOTS, closed_doors: Iterable[str] = (),
                 max_speed: float = 0.5, resolution: float = 0.1, robot_radius: float = 0.3,
                 door_changes: Iterable = ()):
        if not max_speed > 0:
            raise ConfigError(f'max_speed must be positive, got {max_speed}')
        self.world = world
        self.max_speed = float(max_speed)
        self.t = 0.0
        self._log = EventLog(lambda: self.t)
        self._doors = DoorTimeline.of(closed_doors, door_changes)
        for room in self._doors.rooms:
            world.room(room)
        self._grid_shape = (resolution, robot_radius)
        self._build_grid()
        self._robots: dict[RobotId, _RobotState] = {}
        for name in robots:
            dock = world.dock(name).pose
            self._robots[name] = _RobotState(name, dock.x, dock.y, dock.yaw)
        self._goals: dict[int, _Goal] = {}
        self._next_goal_id = 1
        self._localized: list[tuple[str, float, Pose2D]] = []
        for r in self._robots.values():
            self._report_pose(r)

    # --- queries ----------------------------------------------------------------------------------

    @property
    def robots(self) -> tuple[RobotId, ...]:
        """Names of the simulated robots."""
        return tuple(self._robots)

    def _robot(self, robot: RobotId) -> _RobotState:
        try:
            return self._robots[robot]
        except KeyError:
            raise SimInputError(f"unknown robot '{robot}': expected one of "
                                f"{', '.join(self._robots)}") from None

    def robot_pose(self, robot: RobotId) -> Pose2D:
        """Return the robot's current map-frame pose (m, rad). Raises SimInputError for an unknown robot."""
        r = self._robot(robot)
        return Pose2D(r.x, r.y, r.yaw)

    def robot_velocity(self, robot: RobotId) -> tuple[float, float]:
        """Return the robot's current (linear m/s, angular rad/s) velocity in its base frame."""
        r = self._robot(robot)
        return r.speed, r.yaw_rate

    # --- commands ------------------------------------------------------------------------------------

    def _end_goal(self, goal: _Goal, state: str, message: str, error_code: int = 0) -> None:
        goal.state, goal.message, goal.error_code, goal.ended_at = state, message, error_code, self.t
        r = self._robots[goal.robot]
        r.speed = r.yaw_rate = 0.0
        self._maybe_report_pose(r, stopped=True)
        kind = {SUCCEEDED: 'goal_succeeded', ABORTED: 'goal_aborted', CANCELED: 'goal_canceled'}[state]
        self._log.emit(kind, goal_id=goal.goal_id, robot=goal.robot, x=r.x, y=r.y, yaw=r.yaw,
                       goal_pose=[goal.target.x, goal.target.y, goal.target.yaw], message=message,
                       error_code=error_code, navigation_time_s=self.t - goal.started_at,
                       area=self.world.room_at(r.x, r.y), action=goal.action)

    def start_goal(self, robot: RobotId, target: Pose2D) -> int:
        """Send ``robot`` to ``target`` (map frame); return the new goal's ID (Nav2 ``navigate_to_pose``).

        An active goal of the same robot is preempted (it ends ``aborted``). The path is planned at
        once.

        Raises
        ------
        SimInputError
            If the robot is unknown.
        PlanningError
            If no path exists (the goal is recorded as ``aborted`` with the error code).
        """
        return self.start_through_poses(robot, [target], action=NAVIGATE_TO_POSE)

    def start_through_poses(self, robot: RobotId, targets: Sequence[Pose2D],
                            action: str = NAVIGATE_THROUGH_POSES) -> int:
        """Send ``robot`` through ``targets`` in order (map frame, m/rad); return the new goal's ID.

        Each leg is planned on the grid at once, from the robot's pose to the first target and from
        each target to the next. The robot passes intermediate targets without stopping (their yaw
        is not enforced) and ends at the last one with its yaw (Nav2 ``navigate_through_poses``). An
        active goal of the same robot is preempted (it ends ``aborted``).

        Parameters
        ----------
        robot
            The robot's name.
        targets
            One or more map-frame poses.
        action
            The goal kind recorded in its events (the Nav2 action it stands for).

        Raises
        ------
        SimInputError
            If the robot is unknown or ``targets`` is empty (nothing is recorded then).
        PlanningError
            If a leg cannot be planned; ``pose_index`` is the failing pose's index and the message
            names it (``pose 2 of 3``) when there are several. The goal is recorded as ``aborted``
            with the planner's error code.
        """
        r = self._robot(robot)
        targets = [Pose2D(float(t.x), float(t.y), wrap_angle(float(t.yaw)) if math.isfinite(t.yaw) else float(t.yaw))
                   for t in targets]
        if not targets:
            raise SimInputError(f'{action}: no poses given')
        goal_id = self._begin_goal(r)
        points: list[np.ndarray] = []
        waypoint_s: list[float] = []
        here = (r.x, r.y)
        try:
            for i, target in enumerate(targets):
                which = f'pose {i + 1} of {len(targets)} ' if len(targets) > 1 else ''
                if not all(math.isfinite(v) for v in (target.x, target.y, target.yaw)):
                    raise PlanningError(PlanningError.GOAL_OUTSIDE_MAP, f'goal {which}is not finite: {target}',
                                        pose_index=i)
                try:
                    leg = self.grid.plan(here, (target.x, target.y))
                except PlanningError as exc:
                    raise PlanningError(exc.code, f'{which}{exc.message}'.strip(), pose_index=i) from None
                points.append(leg if not points else leg[1:])
                here = (target.x, target.y)
                if i < len(targets) - 1:
                    waypoint_s.append(Polyline(np.vstack(points)).length)
        except PlanningError as exc:
            goal = _Goal(goal_id, robot, targets[-1], Polyline([(r.x, r.y)]), self.t, action=action)
            self._goals[goal_id] = r.goal = goal
            self._end_goal(goal, ABORTED, exc.message, exc.code)
            raise
        goal = _Goal(goal_id, robot, targets[-1], Polyline(np.vstack(points)), self.t, action=action,
                     waypoint_s=waypoint_s)
        return self._accept(r, goal, poses=[[t.x, t.y, t.yaw] for t in targets] if len(targets) > 1 else None)

    def start_follow_path(self, robot: RobotId, path: Sequence[Sequence[float]], final_yaw: float) -> int:
        """Drive ``robot`` along ``path`` as given (Nav2 ``follow_path``); return the new goal's ID.

        The robot first moves straight from its pose to the path's first point, then along the
        polyline at ``max_speed``, heading along it, and ends at the last point with ``final_yaw``.
        No planning: the path is checked against the walls, not the inflation zone. An active goal
        of the same robot is preempted (it ends ``aborted``).

        Parameters
        ----------
        robot
            The robot's name.
        path
            Shape (N, 2), N >= 1: map-frame points, m.
        final_yaw
            Heading at the end, rad.

        Raises
        ------
        SimInputError
            If the robot is unknown (nothing is recorded then).
        FollowPathError
            ``INVALID_PATH`` if the path is empty, not finite, leaves the map or starts more than
            1 m from the robot (or behind a wall from it); ``NO_VALID_CONTROL`` if a segment crosses
            a wall or a closed door. The goal is recorded as ``aborted`` with that code.
        """
        r = self._robot(robot)
        pts = np.asarray(path, dtype=float).reshape(-1, 2) if len(path) else np.zeros((0, 2))
        final_yaw = float(final_yaw)
        goal_id = self._begin_goal(r)
        target = Pose2D(float(pts[-1, 0]), float(pts[-1, 1]), wrap_angle(final_yaw)) if len(pts) else \
            Pose2D(r.x, r.y, r.yaw)
        try:
            self._check_path(r, pts, final_yaw)
        except FollowPathError as exc:
            goal = _Goal(goal_id, robot, target, Polyline([(r.x, r.y)]), self.t, action=FOLLOW_PATH)
            self._goals[goal_id] = r.goal = goal
            self._end_goal(goal, ABORTED, exc.message, exc.code)
            raise
        goal = _Goal(goal_id, robot, target, Polyline(np.vstack([[r.x, r.y], pts])), self.t, action=FOLLOW_PATH)
        return self._accept(r, goal)

    def _check_path(self, r: _RobotState, pts: np.ndarray, final_yaw: float) -> None:
        """Raise FollowPathError if the robot cannot drive along ``pts`` (shape (N, 2))."""
        if len(pts) == 0:
            raise FollowPathError(FollowPathError.INVALID_PATH, 'the path is empty')
        if not (np.isfinite(pts).all() and math.isfinite(final_yaw)):
            raise FollowPathError(FollowPathError.INVALID_PATH, 'the path has a pose that is not finite')
        for i, (x, y) in enumerate(pts):
            if self.grid.cell_of(x, y) is None:
                raise FollowPathError(FollowPathError.INVALID_PATH,
                                      f'path pose {i} ({x:.2f}, {y:.2f}) is outside the map')
        gap = math.hypot(pts[0, 0] - r.x, pts[0, 1] - r.y)
        if gap > PATH_START_TOLERANCE_M or not self.grid.line_of_sight((r.x, r.y), pts[0]):
            raise FollowPathError(FollowPathError.INVALID_PATH,
                                  f'the path starts at ({pts[0, 0]:.2f}, {pts[0, 1]:.2f}), {gap:.2f} m from the '
                                  f'robot at ({r.x:.2f}, {r.y:.2f}) (at most {PATH_START_TOLERANCE_M} m, '
                                  f'in line of sight)')
        for i in range(len(pts) - 1):
            if not self.grid.line_of_sight(pts[i], pts[i + 1]):
                raise FollowPathError(FollowPathError.NO_VALID_CONTROL,
                                      f'the path crosses a wall or closed door between pose {i} '
                                      f'({pts[i, 0]:.2f}, {pts[i, 1]:.2f}) and pose {i + 1} '
                                      f'({pts[i + 1, 0]:.2f}, {pts[i + 1, 1]:.2f})')

    def _begin_goal(self, r: _RobotState) -> int:
        """Allocate a goal ID and preempt the robot's active goal, if any."""
        goal_id = self._next_goal_id
        self._next_goal_id += 1
        if r.goal is not None and r.goal.state == ACTIVE:
            self._end_goal(r.goal, ABORTED, f'preempted by goal {goal_id}')
        return goal_id

    def _accept(self, r: _RobotState, goal: _Goal, poses: list | None = None) -> int:
        self._goals[goal.goal_id] = r.goal = goal
        extra = {'poses': poses} if poses is not None else {}
        self._log.emit('goal_accepted', goal_id=goal.goal_id, robot=r.name,
                       goal_pose=[goal.target.x, goal.target.y, goal.target.yaw], path_length=goal.path.length,
                       target_area=self.world.room_at(goal.target.x, goal.target.y), action=goal.action, **extra)
        return goal.goal_id

    def plan(self, robot: RobotId, goal: Pose2D, start: Pose2D | None = None) -> np.ndarray:
        """Plan a path for ``robot`` without moving it (Nav2 ``compute_path_to_pose``).

        Parameters
        ----------
        robot
            The robot's name.
        goal
            Map-frame goal pose (m, rad).
        start
            Map-frame start pose; None for the robot's current pose.

        Returns
        -------
        np.ndarray
            Shape (N, 2), N >= 2: waypoints in metres from the start to the goal (see
            :meth:`OccupancyGrid.plan`). A ``path_computed`` event records it.

        Raises
        ------
        SimInputError
            If the robot is unknown.
        PlanningError
            ``START_*``/``GOAL_*``/``NO_VALID_PATH`` as :meth:`OccupancyGrid.plan` (a ``path_failed``
            event records it), also for a start or goal that is not finite.
        """
        r = self._robot(robot)
        origin = Pose2D(r.x, r.y, r.yaw) if start is None else start
        try:
            for what, pose, code in (('start', origin, PlanningError.START_OUTSIDE_MAP),
                                     ('goal', goal, PlanningError.GOAL_OUTSIDE_MAP)):
                if not all(math.isfinite(float(v)) for v in (pose.x, pose.y, pose.yaw)):
                    raise PlanningError(code, f'{what} pose is not finite: {pose}')
            path = self.grid.plan((origin.x, origin.y), (goal.x, goal.y))
        except PlanningError as exc:
            self._log.emit('path_failed', robot=robot, start=[origin.x, origin.y, origin.yaw],
                           goal_pose=[goal.x, goal.y, goal.yaw], error_code=exc.code, message=exc.message,
                           use_start=start is not None)
            raise
        self._log.emit('path_computed', robot=robot, start=[origin.x, origin.y, origin.yaw],
                       goal_pose=[goal.x, goal.y, goal.yaw], path_length=Polyline(path).length,
                       use_start=start is not None, target_area=self.world.room_at(goal.x, goal.y))
        return path

    def cancel_goal(self, robot: RobotId) -> bool:
        """Cancel the robot's active goal (it stops where it is); return whether there was one."""
        r = self._robot(robot)
        if r.goal is None or r.goal.state != ACTIVE:
            return False
        self._end_goal(r.goal, CANCELED, 'canceled')
        return True

    def goal(self, goal_id: int) -> GoalStatus:
        """Return the status of goal ``goal_id``. Raises SimInputError if there is no such goal."""
        try:
            g = self._goals[goal_id]
        except KeyError:
            raise SimInputError(f'unknown goal {goal_id}') from None
        r = self._robots[g.robot]
        remaining = 0.0 if g.state == SUCCEEDED else max(g.path.length - g.s, 0.0)
        end = g.ended_at if g.ended_at is not None else self.t
        total = len(g.waypoint_s) + 1
        return GoalStatus(goal_id=g.goal_id, robot=g.robot, target=g.target, state=g.state,
                          pose=Pose2D(r.x, r.y, r.yaw), distance_remaining=remaining,
                          eta_s=remaining / self.max_speed if g.state == ACTIVE else 0.0,
                          navigation_time_s=end - g.started_at, path_length=g.path.length,
                          error_code=g.error_code, message=g.message, action=g.action,
                          poses_remaining=0 if g.state == SUCCEEDED else total - g.waypoints_reached,
                          poses_total=total)

    def goal_status(self, robot: RobotId) -> GoalStatus | None:
        """Return the status of the robot's latest goal, or None if it never had one."""
        r = self._robot(robot)
        return self.goal(r.goal.goal_id) if r.goal is not None else None

    # --- time ---------------------------------------------------------------------------------

    def drain_events(self) -> list[SimEvent]:
        """Return and forget the events produced since the last call (or step)."""
        return self._log.drain()

    def drain_localization(self) -> list[tuple[str, float, Pose2D]]:
        """Return and forget the localization reports since the last call: (robot, sim time s, map pose).

        In time order; see the module docstring for when a robot's pose is reported.
        """
        reports, self._localized = self._localized, []
        return reports

    def _report_pose(self, r: _RobotState) -> None:
        r.reported = Pose2D(r.x, r.y, r.yaw)
        self._localized.append((r.name, self.t, r.reported))

    def _maybe_report_pose(self, r: _RobotState, stopped: bool) -> None:
        """Report ``r``'s pose if it moved or turned enough since the last report, or if it stopped there."""
        last = r.reported
        if (math.hypot(r.x - last.x, r.y - last.y) >= AMCL_UPDATE_MIN_D
                or abs(wrap_angle(r.yaw - last.yaw)) >= AMCL_UPDATE_MIN_A
                or (stopped and (r.x, r.y, r.yaw) != (last.x, last.y, last.yaw))):
            self._report_pose(r)

    def step(self, dt: float) -> list[SimEvent]:
        """Advance sim time by ``dt`` seconds (in substeps of at most 0.1 s); return the events.

        The returned list also holds the events of calls made since the previous step, first.
        """
        for self.t, h in substeps(self.t, dt, MAX_SUBSTEP_S):
            if self._doors.due(self.t):
                self._doors_changed()
            for r in self._robots.values():
                self._move_robot(r, h)
        return self.drain_events()

    def next_event_s(self) -> float:
        """Return when the engine next changes by itself, in sim s (the follow clock's jump ahead).

        The earliest of the next door change (``inf``: none) and, for each goal under way, when the
        robot reaches its next pose (a waypoint, or the goal: the goal's event then), at
        ``max_speed`` along the rest of its path. The motion between is what
        :meth:`forecast` tells; nothing else changes it but the calls made between steps.
        """
        times = [self._doors.next_at]
        for r in self._robots.values():
            goal = r.goal
            if goal is None or goal.state != ACTIVE:
                continue
            ahead = [*goal.waypoint_s[goal.waypoints_reached:], goal.path.length][0]
            times.append(self.t + max(ahead - goal.s, 0.0) / self.max_speed)
        return min(times)

    def forecast(self, robot: RobotId, horizon_s: float = FORECAST_HORIZON_S) -> list[tuple[float, Pose2D]]:
        """Return the localization reports ``robot`` will make while its goal runs: ``[(sim time s, map pose)]``.

        What :meth:`step` will report of it (the same substeps, the door changes due on the way),
        if no call changes its goal first, up to the goal's end or ``horizon_s`` sim seconds from
        now; ``[]`` when it has no goal under way. The hospital's simulator replays it
        (``motion_sim`` publishes it on the robot's ``trajectory``), so that the follow clock may
        jump across a drive.

        Raises
        ------
        SimInputError
            If the robot is unknown.
        """
        r = self._robot(robot)
        if r.goal is None or r.goal.state != ACTIVE:
            return []
        # the floor, its grid and the goals ended shared (a door change gives the copy its own grid)
        shadow = run_ahead_copy(self, (self.world, self.grid, self._goals))
        shadow.drain_localization()
        end = self.t + horizon_s
        goal = shadow._robots[robot].goal
        while goal.state == ACTIVE and shadow.t < end - 1e-9:
            shadow.step(min(FORECAST_STEP_S, end - shadow.t))
        return [(t, pose) for name, t, pose in shadow.drain_localization() if name == robot]

    @property
    def closed_doors(self) -> list[str]:
        """The rooms whose door is closed now, sorted."""
        return sorted(self._doors.closed)

    def _build_grid(self) -> None:
        """Rasterize and inflate the floor's walls and the doors closed now (:attr:`grid`, what robots plan on)."""
        resolution, radius = self._grid_shape
        self.grid = OccupancyGrid.from_world(self.world, resolution, radius, closed_doors=self._doors.closed)

    def _doors_changed(self) -> None:
        """Take the doors as they are now: a new grid; an active goal whose way ahead is closed is aborted."""
        self._build_grid()
        for r in self._robots.values():
            goal = r.goal
            if goal is None or goal.state != ACTIVE:
                continue
            ahead = goal.path.between(goal.s, goal.path.length)
            if all(self.grid.line_of_sight(a, b) for a, b in zip(ahead, ahead[1:])):
                continue
            # A room has one door on a floor description: a way that crosses a closed door enters or
            # leaves its room, so no other way exists and replanning (Nav2's BT) fails as planning would.
            follow = goal.action == FOLLOW_PATH
            self._end_goal(goal, ABORTED, f'a door closed across the path ({", ".join(self.closed_doors)} closed)',
                           FollowPathError.NO_VALID_CONTROL if follow else PlanningError.NO_VALID_PATH)

    def _move_robot(self, r: _RobotState, h: float) -> _Goal | None:
        """Advance one robot; return its goal if it succeeded in this substep."""
        goal = r.goal
        if goal is None or goal.state != ACTIVE:
            r.speed = r.yaw_rate = 0.0
            return None
        old = (r.x, r.y, r.yaw)
        goal.s = min(goal.s + self.max_speed * h, goal.path.length)
        while (goal.waypoints_reached < len(goal.waypoint_s)
               and goal.s >= goal.waypoint_s[goal.waypoints_reached] - 1e-9):
            index = goal.waypoints_reached
            goal.waypoints_reached += 1
            wx, wy = goal.path.at(goal.waypoint_s[index])
            self._log.emit('waypoint_reached', goal_id=goal.goal_id, robot=r.name, index=index, x=wx, y=wy,
                           poses_remaining=len(goal.waypoint_s) + 1 - goal.waypoints_reached,
                           area=self.world.room_at(wx, wy))
        r.x, r.y = goal.path.at(goal.s)
        heading = goal.path.heading(goal.s)
        done = goal.s >= goal.path.length - 1e-9
        r.yaw = goal.target.yaw if done or heading is None else heading
        r.speed = math.hypot(r.x - old[0], r.y - old[1]) / h
        r.yaw_rate = wrap_angle(r.yaw - old[2]) / h
        self._maybe_report_pose(r, stopped=False)
        if done:
            self._end_goal(goal, SUCCEEDED, 'goal reached')
            return goal
        return None
