"""The ED floor simulation: robots, HCWs, pages, badge readers and room displays, without ROS.

:class:`SimEngine` is pure and deterministic: the same world, staff seed, scenario and sequence of
calls give the same events. Time only moves in :meth:`SimEngine.step`; calls between steps
(goals, pages, displays) take effect at the current sim time. ``sim/sim_node.py`` wraps it in a
ROS node (the facade); this module imports no rclpy.

What is simulated
-----------------
* Robots start at their docks and follow planned paths (:class:`~robot_team.sim.grid.OccupancyGrid`)
  at ``max_speed``, heading along the path; one goal per robot, a new goal preempts the old one.
  A goal is a pose (:meth:`SimEngine.start_goal`, Nav2's ``navigate_to_pose``), poses in order
  (:meth:`SimEngine.start_through_poses`, ``navigate_through_poses``) or a given path to drive along
  (:meth:`SimEngine.start_follow_path`, ``follow_path``). :meth:`SimEngine.plan_path` plans without
  moving (``compute_path_to_pose``).
* HCWs from the staff seed stand in their area's room (distinct spots); the scenario's
  ``staff_overrides`` change availability, detail or area.
* Paging: an available HCW acknowledges after ``page_response_delay_s``; busy or off-shift HCWs
  never do. An HCW who acknowledged waits where they are until the named robot comes within
  2.0 m (in line of sight), then follows it about 1.0 m behind along its trail. When that robot
  stops at the door approach pose of a room (other than the HCW's own area), the HCW walks
  through the door into the room. An escort whose goal is inside the room is followed in.
* Badge readers: an HCW entering a reader's radius scans their badge once per entry (the badge
  ID is the scenario's ``badge_overrides`` entry, if any, else the directory's).
* Closed doors (``scenario.blocked_doors``) are filled in the grid: no path through them.
* Room displays: :meth:`SimEngine.show_display` renders and keeps each room's screen.

Events (:class:`SimEvent`, ground truth): ``patient_arrival``, ``goal_accepted``,
``waypoint_reached``, ``goal_succeeded``, ``goal_aborted``, ``goal_canceled``, ``path_computed``,
``path_failed``, ``page_delivered``,
``page_acknowledged``, ``hcw_following``, ``hcw_entering``, ``hcw_arrived``,
``hcw_entry_blocked``, ``badge_scan``, ``display_shown``.

Units: SI (m, s, rad), poses in the map frame (REP-103/105).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from robot_team.config import ConfigError, Scenario, StaffMember, StaffSeed
from robot_team.names import Robot
from robot_team.sim.grid import OccupancyGrid, PlanningError
from robot_team.sim.world import EdWorld, Pose2D, WorldError

ROBOTS: tuple[str, ...] = tuple(r.value for r in Robot)
FOLLOW_TRIGGER_M = 2.0     # an HCW who acknowledged starts following when the robot is this close
FOLLOW_DISTANCE_M = 1.0    # how far behind the robot, along its trail, a follower walks
DOOR_MATCH_M = 0.75        # a goal this close to a room's door approach pose is "at that door"
MAX_SUBSTEP_S = 0.1        # step() integrates in substeps of at most this much sim time
PATH_START_TOLERANCE_M = 1.0  # a path to follow must start this close to the robot (in line of sight)

# Goal kinds: the Nav2 action each kind of goal stands for.
NAVIGATE_TO_POSE, NAVIGATE_THROUGH_POSES, FOLLOW_PATH = 'navigate_to_pose', 'navigate_through_poses', 'follow_path'

ACTIVE, SUCCEEDED, ABORTED, CANCELED = 'active', 'succeeded', 'aborted', 'canceled'


class SimInputError(ValueError):
    """A request the simulator cannot act on (unknown robot, HCW or room); the message says why."""


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
class SimEvent:
    """One ground-truth event: ``kind`` (see the module docstring), sim time ``t`` (s) and details."""

    kind: str
    t: float
    data: dict[str, Any] = field(default_factory=dict)


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
    robot: str
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
    robot: str = ''


@dataclass
class Page:
    """A page sent to an HCW and what came of it (times in sim s)."""

    page_id: int
    hcw_id: str
    robot: str
    message: str
    sent_at: float
    delivered: bool
    acknowledged: bool = False
    acknowledged_at: float | None = None
    reply: str = ''

    @property
    def response_time_s(self) -> float | None:
        """Sim seconds from the page to the acknowledgement (None if not acknowledged)."""
        return None if self.acknowledged_at is None else self.acknowledged_at - self.sent_at


class _Polyline:
    """A growing polyline with arc-length lookup (trails and paths)."""

    def __init__(self, points: Iterable[Sequence[float]]):
        self.points: list[tuple[float, float]] = []
        self.cum: list[float] = []
        for p in points:
            self.append(p[0], p[1])

    def append(self, x: float, y: float) -> None:
        if self.points:
            last = self.points[-1]
            step = math.hypot(x - last[0], y - last[1])
            if step < 1e-6:
                return
            self.cum.append(self.cum[-1] + step)
        else:
            self.cum.append(0.0)
        self.points.append((float(x), float(y)))

    @property
    def length(self) -> float:
        return self.cum[-1] if self.cum else 0.0

    def at(self, s: float) -> tuple[float, float]:
        s = min(max(s, 0.0), self.length)
        i = bisect.bisect_right(self.cum, s) - 1
        if i >= len(self.points) - 1:
            return self.points[-1]
        seg = self.cum[i + 1] - self.cum[i]
        f = (s - self.cum[i]) / seg if seg > 0 else 0.0
        (x0, y0), (x1, y1) = self.points[i], self.points[i + 1]
        return x0 + f * (x1 - x0), y0 + f * (y1 - y0)

    def heading(self, s: float, lookahead: float = 0.3) -> float | None:
        """Heading (rad) from the point at ``s`` to the point ``lookahead`` m on (None at the end)."""
        a, b = self.at(s), self.at(s + lookahead)
        if math.hypot(b[0] - a[0], b[1] - a[1]) < 1e-6:
            return None
        return math.atan2(b[1] - a[1], b[0] - a[0])


@dataclass
class _Goal:
    goal_id: int
    robot: str
    target: Pose2D
    path: _Polyline
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
    name: str
    x: float
    y: float
    yaw: float
    goal: _Goal | None = None
    speed: float = 0.0
    yaw_rate: float = 0.0


@dataclass
class _Hcw:
    member: StaffMember
    badge_id: str
    home: str
    x: float
    y: float
    yaw: float
    availability: str
    detail: str
    state: str = 'idle'           # idle | waiting | following | entering | arrived
    robot: str = ''
    trail: _Polyline | None = None
    s: float = 0.0
    entering_room: str = ''
    inside_readers: set[str] = field(default_factory=set)


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2 * math.pi) - math.pi


def _field(entry: Any, key: str) -> str:
    value = entry.get(key, '') if isinstance(entry, Mapping) else getattr(entry, key, '')
    return str(value or '')


class SimEngine:
    """A deterministic, time-stepped simulation of the ED floor.

    Parameters
    ----------
    world
        The ED floor (:func:`robot_team.sim.world.load_world`).
    staff
        The staff directory seed (``config/staff.yaml``).
    scenario
        The episode: patient, staff overrides, closed doors, badge overrides.
    robots
        Robot names; each must have a dock in the world. Robots start at their docks.
    max_speed
        Robot speed along its path, m/s.
    hcw_speed
        HCW walking speed, m/s.
    page_response_delay_s
        Sim seconds an available HCW takes to acknowledge a page.
    resolution, robot_radius
        Occupancy grid cell size and inflation radius, m.

    Raises
    ------
    ConfigError
        (or its subclass ``WorldError``) if a robot has no dock, a room named by the staff seed or
        the scenario does not exist, or an override names an HCW not in the directory.

    Notes
    -----
    Not thread-safe: the ROS node serializes every call with one lock. Events produced by calls
    between steps (goals, pages, displays) are returned by the next :meth:`step` (or
    :meth:`drain_events`), in the order they happened.
    """

    def __init__(self, world: EdWorld, staff: StaffSeed, scenario: Scenario, robots: Sequence[str] = ROBOTS,
                 max_speed: float = 0.5, hcw_speed: float = 1.2, page_response_delay_s: float = 8.0,
                 resolution: float = 0.1, robot_radius: float = 0.3):
        if max_speed <= 0 or hcw_speed <= 0:
            raise ConfigError(f'speeds must be positive (max_speed={max_speed}, hcw_speed={hcw_speed})')
        self.world = world
        self.scenario = scenario
        self.max_speed = float(max_speed)
        self.hcw_speed = float(hcw_speed)
        self.page_response_delay_s = float(page_response_delay_s)
        self.t = 0.0
        self._outbox: list[SimEvent] = []
        self.grid = OccupancyGrid.from_world(world, resolution, robot_radius,
                                             closed_doors=scenario.blocked_doors)
        world.room(scenario.patient.room)
        self._robots: dict[str, _RobotState] = {}
        for name in robots:
            dock = world.dock(name).pose
            self._robots[name] = _RobotState(name, dock.x, dock.y, dock.yaw)
        self._goals: dict[int, _Goal] = {}
        self._next_goal_id = 1
        self._pages: dict[int, Page] = {}
        self._pending_acks: list[int] = []
        self._arrived = False
        self.displays: dict[str, list[str]] = {}
        self._hcws = self._place_staff(staff, scenario)
        self._readers = world.readers
        self._reader_xy = np.array([[r.x, r.y] for r in self._readers]).reshape(-1, 2)
        self._reader_radius = np.array([r.radius for r in self._readers])
        for hcw in self._hcws.values():
            hcw.inside_readers = self._readers_at(hcw.x, hcw.y)

    # --- set-up ---------------------------------------------------------------------------------

    def _place_staff(self, staff: StaffSeed, scenario: Scenario) -> dict[str, _Hcw]:
        known = {m.hcw_id for m in staff.staff}
        overrides = (('staff_overrides', scenario.staff_overrides),
                     ('badge_overrides', scenario.badge_overrides))
        for what, ids in overrides:
            unknown = sorted(set(ids) - known)
            if unknown:
                raise ConfigError(f"scenario '{scenario.name}': {what} name HCWs not in the staff directory: "
                                  f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
        hcws: dict[str, _Hcw] = {}
        taken: dict[str, int] = {}
        for member in staff.staff:
            override = scenario.staff_overrides.get(member.hcw_id)
            area = override.area if override and override.area else member.area
            try:
                room = self.world.room(area)
            except WorldError as exc:
                raise ConfigError(f'staff member #{member.hcw_id} ({member.name}): area {exc}') from None
            x, y = self._spot(room, taken.get(area, 0))
            taken[area] = taken.get(area, 0) + 1
            gx, gy = room.door_gap
            hcws[member.hcw_id] = _Hcw(
                member=member, home=area,
                badge_id=scenario.badge_overrides.get(member.hcw_id, member.badge_id),
                x=x, y=y, yaw=math.atan2(gy - y, gx - x),
                availability=override.availability if override else member.availability,
                detail=override.detail if override else member.detail)
        return hcws

    def _spot(self, room, index: int) -> tuple[float, float]:
        """Return the ``index``-th free standing spot of a room: its centre, then rings 0.8 m apart."""
        cx, cy = room.center
        offsets = [(i * 0.8, j * 0.8) for i in range(-4, 5) for j in range(-4, 5)]
        offsets.sort(key=lambda o: (round(math.hypot(*o), 6), math.atan2(o[1], o[0]) % (2 * math.pi)))
        spots = [(cx + dx, cy + dy) for dx, dy in offsets
                 if room.contains(cx + dx, cy + dy, margin=-0.5) and self.grid.is_free(cx + dx, cy + dy)]
        if not spots:
            raise ConfigError(f"room '{room.name}' has no free spot to place staff")
        return spots[index % len(spots)]

    # --- queries ----------------------------------------------------------------------------------

    @property
    def robots(self) -> tuple[str, ...]:
        """Names of the simulated robots."""
        return tuple(self._robots)

    @property
    def staff_ids(self) -> tuple[str, ...]:
        """The simulated HCWs' IDs, in directory order."""
        return tuple(self._hcws)

    def _robot(self, robot: str) -> _RobotState:
        try:
            return self._robots[robot]
        except KeyError:
            raise SimInputError(f"unknown robot '{robot}': expected one of "
                                f"{', '.join(self._robots)}") from None

    def _hcw(self, hcw_id: str) -> _Hcw:
        try:
            return self._hcws[str(hcw_id)]
        except KeyError:
            raise SimInputError(f"unknown HCW '{hcw_id}': not in the staff directory "
                                f"(known: {', '.join(self._hcws)})") from None

    def robot_pose(self, robot: str) -> Pose2D:
        """Return the robot's current map-frame pose (m, rad). Raises SimInputError for an unknown robot."""
        r = self._robot(robot)
        return Pose2D(r.x, r.y, r.yaw)

    def robot_velocity(self, robot: str) -> tuple[float, float]:
        """Return the robot's current (linear m/s, angular rad/s) velocity in its base frame."""
        r = self._robot(robot)
        return r.speed, r.yaw_rate

    def hcw(self, hcw_id: str) -> StaffRecord:
        """Return where an HCW is and what they are doing. Raises SimInputError if unknown."""
        h = self._hcw(hcw_id)
        return StaffRecord(hcw_id=h.member.hcw_id, name=h.member.name, specialty=h.member.specialty,
                           area=self.world.room_at(h.x, h.y), pose=Pose2D(h.x, h.y, h.yaw),
                           availability=h.availability, detail=h.detail, state=h.state, robot=h.robot)

    def locate(self, hcw_ids: Sequence[str] = (), specialty: str = '') -> tuple[list[StaffRecord], list[str]]:
        """Locate HCWs as an RTLS would.

        Parameters
        ----------
        hcw_ids
            HCW IDs to locate, first and in request order.
        specialty
            Then every other HCW of this specialty (case-insensitive); with neither, everyone.

        Returns
        -------
        (records, unknown_ids)
            One :class:`StaffRecord` per known HCW (no duplicates) and the requested IDs not
            in the directory.
        """
        ids, unknown = [], []
        for hcw_id in (str(i).strip() for i in hcw_ids):
            bucket = ids if hcw_id in self._hcws else unknown
            if hcw_id not in bucket:
                bucket.append(hcw_id)
        wanted = specialty.strip().lower()
        if wanted or not hcw_ids:
            ids += [k for k, h in self._hcws.items()
                    if k not in ids and (not wanted or h.member.specialty.lower() == wanted)]
        return [self.hcw(i) for i in ids], unknown

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

    def goal_status(self, robot: str) -> GoalStatus | None:
        """Return the status of the robot's latest goal, or None if it never had one."""
        r = self._robot(robot)
        return self.goal(r.goal.goal_id) if r.goal is not None else None

    def page_status(self, page_id: int) -> Page:
        """Return the page ``page_id`` as it stands. Raises SimInputError if there is no such page."""
        try:
            return self._pages[page_id]
        except KeyError:
            raise SimInputError(f'unknown page {page_id}') from None

    def display(self, room: str) -> list[str]:
        """Return what ``room``'s screen shows (empty if nothing was shown)."""
        return list(self.displays.get(room, []))

    # --- commands ---------------------------------------------------------------------------------

    def _emit(self, kind: str, **data: Any) -> SimEvent:
        event = SimEvent(kind, self.t, data)
        self._outbox.append(event)
        return event

    def _end_goal(self, goal: _Goal, state: str, message: str, error_code: int = 0) -> None:
        goal.state, goal.message, goal.error_code, goal.ended_at = state, message, error_code, self.t
        r = self._robots[goal.robot]
        r.speed = r.yaw_rate = 0.0
        kind = {SUCCEEDED: 'goal_succeeded', ABORTED: 'goal_aborted', CANCELED: 'goal_canceled'}[state]
        self._emit(kind, goal_id=goal.goal_id, robot=goal.robot, x=r.x, y=r.y, yaw=r.yaw,
                   goal_pose=[goal.target.x, goal.target.y, goal.target.yaw], message=message,
                   error_code=error_code, navigation_time_s=self.t - goal.started_at,
                   area=self.world.room_at(r.x, r.y), action=goal.action)

    def start_goal(self, robot: str, target: Pose2D) -> int:
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

    def start_through_poses(self, robot: str, targets: Sequence[Pose2D],
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
        targets = [Pose2D(float(t.x), float(t.y), _wrap(float(t.yaw)) if math.isfinite(t.yaw) else float(t.yaw))
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
                    waypoint_s.append(_Polyline(np.vstack(points)).length)
        except PlanningError as exc:
            goal = _Goal(goal_id, robot, targets[-1], _Polyline([(r.x, r.y)]), self.t, action=action)
            self._goals[goal_id] = r.goal = goal
            self._end_goal(goal, ABORTED, exc.message, exc.code)
            raise
        goal = _Goal(goal_id, robot, targets[-1], _Polyline(np.vstack(points)), self.t, action=action,
                     waypoint_s=waypoint_s)
        return self._accept(r, goal, poses=[[t.x, t.y, t.yaw] for t in targets] if len(targets) > 1 else None)

    def start_follow_path(self, robot: str, path: Sequence[Sequence[float]], final_yaw: float) -> int:
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
        target = Pose2D(float(pts[-1, 0]), float(pts[-1, 1]), _wrap(final_yaw)) if len(pts) else \
            Pose2D(r.x, r.y, r.yaw)
        try:
            self._check_path(r, pts, final_yaw)
        except FollowPathError as exc:
            goal = _Goal(goal_id, robot, target, _Polyline([(r.x, r.y)]), self.t, action=FOLLOW_PATH)
            self._goals[goal_id] = r.goal = goal
            self._end_goal(goal, ABORTED, exc.message, exc.code)
            raise
        goal = _Goal(goal_id, robot, target, _Polyline(np.vstack([[r.x, r.y], pts])), self.t, action=FOLLOW_PATH)
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
        self._emit('goal_accepted', goal_id=goal.goal_id, robot=r.name,
                   goal_pose=[goal.target.x, goal.target.y, goal.target.yaw], path_length=goal.path.length,
                   target_area=self.world.room_at(goal.target.x, goal.target.y), action=goal.action, **extra)
        return goal.goal_id

    def plan_path(self, robot: str, goal: Pose2D, start: Pose2D | None = None) -> np.ndarray:
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
            self._emit('path_failed', robot=robot, start=[origin.x, origin.y, origin.yaw],
                       goal_pose=[goal.x, goal.y, goal.yaw], error_code=exc.code, message=exc.message,
                       use_start=start is not None)
            raise
        self._emit('path_computed', robot=robot, start=[origin.x, origin.y, origin.yaw],
                   goal_pose=[goal.x, goal.y, goal.yaw], path_length=_Polyline(path).length,
                   use_start=start is not None, target_area=self.world.room_at(goal.x, goal.y))
        return path

    def cancel_goal(self, robot: str) -> bool:
        """Cancel the robot's active goal (it stops where it is); return whether there was one."""
        r = self._robot(robot)
        if r.goal is None or r.goal.state != ACTIVE:
            return False
        self._end_goal(r.goal, CANCELED, 'canceled')
        return True

    def page(self, hcw_id: str, robot: str = '', message: str = '') -> Page:
        """Page an HCW, asking them to meet and follow ``robot`` ('' for none).

        Available HCWs acknowledge ``page_response_delay_s`` later; busy ones never answer;
        off-shift HCWs do not carry a pager (the page is not delivered).

        Raises
        ------
        SimInputError
            If the HCW or the robot is unknown.
        """
        h = self._hcw(hcw_id)
        if robot:
            self._robot(robot)
        page_id = len(self._pages) + 1
        delivered = h.availability != 'off_shift'
        page = Page(page_id, h.member.hcw_id, robot, message, self.t, delivered)
        self._pages[page_id] = page
        if delivered:
            self._emit('page_delivered', page_id=page_id, hcw_id=page.hcw_id, robot=robot, message=message,
                       availability=h.availability)
            if h.availability == 'available':
                self._pending_acks.append(page_id)
        return page

    def show_display(self, room: str, title: str, entries: Sequence[Any],
                     layout: str = '') -> tuple[bool, str, list[str]]:
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
        if room not in self.world.rooms:
            return False, f"unknown room '{room}': expected one of {', '.join(self.world.rooms)}", []
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
        self.displays[room] = lines
        self._emit('display_shown', room=room, title=title, layout=layout, lines=list(lines),
                   entries=len(ordered))
        message = f'{room} screen shows {len(ordered)} care-team member(s)'
        return True, message, list(lines)

    # --- time ---------------------------------------------------------------------------------

    def drain_events(self) -> list[SimEvent]:
        """Return and forget the events produced since the last call (or step)."""
        events, self._outbox = self._outbox, []
        return events

    def step(self, dt: float) -> list[SimEvent]:
        """Advance sim time by ``dt`` seconds (in substeps of at most 0.1 s); return the events.

        The returned list also holds the events of calls made since the previous step, first.
        """
        remaining = max(float(dt), 0.0)
        while remaining > 1e-12:
            h = min(MAX_SUBSTEP_S, remaining)
            remaining -= h
            self.t = round(self.t + h, 9)
            self._substep(h)
        return self.drain_events()

    def _substep(self, h: float) -> None:
        patient = self.scenario.patient
        if not self._arrived and self.t >= patient.arrival_time_s - 1e-9:
            self._arrived = True
            self._emit('patient_arrival', patient_id=patient.patient_id, room=patient.room,
                       presentation=patient.presentation, esi_level=patient.esi_level,
                       assigned_hcw_id=patient.assigned_hcw_id, required_specialty=patient.required_specialty)
        arrived = [self._move_robot(r, h) for r in self._robots.values()]
        for page_id in list(self._pending_acks):
            page = self._pages[page_id]
            if self.t >= page.sent_at + self.page_response_delay_s - 1e-9:
                self._pending_acks.remove(page_id)
                self._acknowledge(page)
        for hcw in self._hcws.values():
            self._move_hcw(hcw, h, [g for g in arrived if g is not None])
            self._check_readers(hcw)

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
            self._emit('waypoint_reached', goal_id=goal.goal_id, robot=r.name, index=index, x=wx, y=wy,
                       poses_remaining=len(goal.waypoint_s) + 1 - goal.waypoints_reached,
                       area=self.world.room_at(wx, wy))
        r.x, r.y = goal.path.at(goal.s)
        heading = goal.path.heading(goal.s)
        done = goal.s >= goal.path.length - 1e-9
        r.yaw = goal.target.yaw if done or heading is None else heading
        r.speed = math.hypot(r.x - old[0], r.y - old[1]) / h
        r.yaw_rate = _wrap(r.yaw - old[2]) / h
        for hcw in self._hcws.values():
            if hcw.state == 'following' and hcw.robot == r.name and hcw.trail is not None:
                hcw.trail.append(r.x, r.y)
        if done:
            self._end_goal(goal, SUCCEEDED, 'goal reached')
            return goal
        return None

    def _acknowledge(self, page: Page) -> None:
        h = self._hcws[page.hcw_id]
        page.acknowledged, page.acknowledged_at = True, self.t
        page.reply = (f'On my way — I will follow {page.robot}' if page.robot
                      else 'Acknowledged — on my way')
        if page.robot and not (h.state == 'following' and h.robot == page.robot):
            h.state, h.robot, h.trail = 'waiting', page.robot, None
        self._emit('page_acknowledged', page_id=page.page_id, hcw_id=page.hcw_id, robot=page.robot,
                   reply=page.reply, response_time_s=page.response_time_s)

    def _move_hcw(self, hcw: _Hcw, h: float, finished: list[_Goal]) -> None:
        if hcw.state == 'waiting':
            r = self._robots[hcw.robot]
            if (math.hypot(r.x - hcw.x, r.y - hcw.y) <= FOLLOW_TRIGGER_M
                    and self.grid.line_of_sight((hcw.x, hcw.y), (r.x, r.y))):
                hcw.state, hcw.trail, hcw.s = 'following', _Polyline([(hcw.x, hcw.y), (r.x, r.y)]), 0.0
                self._emit('hcw_following', hcw_id=hcw.member.hcw_id, robot=hcw.robot, x=hcw.x, y=hcw.y,
                           area=self.world.room_at(hcw.x, hcw.y))
            return
        if hcw.state == 'following':
            self._walk(hcw, h, hcw.trail.length - FOLLOW_DISTANCE_M)
            for goal in finished:
                if goal.robot == hcw.robot:
                    self._maybe_enter(hcw, goal)
            return
        if hcw.state == 'entering':
            self._walk(hcw, h, hcw.trail.length)
            if hcw.s >= hcw.trail.length - 1e-9:
                hcw.state = 'arrived'
                self._emit('hcw_arrived', hcw_id=hcw.member.hcw_id, room=hcw.entering_room, x=hcw.x, y=hcw.y)

    def _walk(self, hcw: _Hcw, h: float, target_s: float) -> None:
        """Walk an HCW along their trail towards arc length ``target_s`` at ``hcw_speed``."""
        if target_s <= hcw.s:
            return
        hcw.s = min(target_s, hcw.s + self.hcw_speed * h)
        x, y = hcw.trail.at(hcw.s)
        if math.hypot(x - hcw.x, y - hcw.y) > 1e-6:
            hcw.yaw = math.atan2(y - hcw.y, x - hcw.x)
        hcw.x, hcw.y = x, y

    def _maybe_enter(self, hcw: _Hcw, goal: _Goal) -> None:
        """After an escort stopped at a room's door approach pose, walk the HCW into that room."""
        room = next((room for room in self.world.rooms.values()
                     if room.door.distance_to(goal.target.x, goal.target.y) <= DOOR_MATCH_M), None)
        if room is None or room.name == hcw.home or room.contains(hcw.x, hcw.y):
            return
        try:
            path = self.grid.plan((hcw.x, hcw.y), (room.entry.x, room.entry.y))
        except PlanningError as exc:
            self._emit('hcw_entry_blocked', hcw_id=hcw.member.hcw_id, room=room.name, robot=hcw.robot,
                       error_code=exc.code, message=exc.message)
            return
        hcw.state, hcw.trail, hcw.s, hcw.entering_room = 'entering', _Polyline(path), 0.0, room.name
        self._emit('hcw_entering', hcw_id=hcw.member.hcw_id, room=room.name, robot=hcw.robot)

    def _readers_at(self, x: float, y: float) -> set[str]:
        if not self._readers:
            return set()
        inside = np.hypot(*(self._reader_xy - (x, y)).T) <= self._reader_radius
        return {self._readers[i].reader_id for i in np.flatnonzero(inside)}

    def _check_readers(self, hcw: _Hcw) -> None:
        inside = self._readers_at(hcw.x, hcw.y)
        for reader in self._readers:
            if reader.reader_id in inside and reader.reader_id not in hcw.inside_readers:
                self._emit('badge_scan', reader_id=reader.reader_id, room=reader.room, badge_id=hcw.badge_id,
                           hcw_id=hcw.member.hcw_id, x=hcw.x, y=hcw.y)
        hcw.inside_readers = inside
