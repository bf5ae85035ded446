"""The embedded ED floor simulator as a ROS 2 node (``ed_sim``): the facade over ``SimEngine``.

It is the clock source: a wall-clock timer steps the engine and publishes ``/clock``, advancing
sim time by ``real_time_factor`` x the wall time elapsed. Other nodes run with
``use_sim_time:=true``.

Interfaces (names from :mod:`robot_team.names`)
-----------------------------------------------
Every name is relative: the simulator runs in the team namespace ``T`` (``/`` by default) and
reaches each robot's interfaces as ``<robot>/<name>`` (``T/<robot>/<name>``), as Nav2 and Gazebo
would serve a robot launched in namespace ``T/<robot>``.

* ``/clock`` (rosgraph_msgs/Clock), every tick (see :func:`robot_team.names.clock_remap`).
* ``map`` (nav_msgs/OccupancyGrid, reliable + transient local, as map_server), once: walls and
  closed doors.
* Per robot with a base (every :class:`~robot_team.names.Robot` but the manager), Nav2's
  interfaces, so that ``BasicNavigator(namespace='<robot>')`` works with its defaults:

  - ``<robot>/navigate_to_pose`` (nav2_msgs/action/NavigateToPose, bt_navigator): plan on the
    grid and drive; feedback every 0.5 s sim; planner error codes (2xx) on abort, ``TF_ERROR`` for
    an unknown frame.
  - ``<robot>/navigate_through_poses`` (nav2_msgs/action/NavigateThroughPoses, bt_navigator):
    the poses in order, each leg planned on the grid; feedback with ``number_of_poses_remaining``
    and ``waypoint_statuses``; the result's ``waypoint_statuses`` say which poses were reached.
  - ``<robot>/follow_path`` (nav2_msgs/action/FollowPath, controller_server, controller ID
    ``FollowPath``): drive along the given path (it must start within 1 m of the robot and cross
    no wall: else ``INVALID_PATH`` / ``NO_VALID_CONTROL``); feedback ``distance_to_goal``, ``speed``.
  - ``<robot>/compute_path_to_pose`` (nav2_msgs/action/ComputePathToPose, planner_server, planner
    ID ``GridBased``): a ``nav_msgs/Path`` in ``map`` (a pose every grid cell) from ``start`` or
    the robot's pose; aborts with ``START_/GOAL_OUTSIDE_MAP``, ``START_/GOAL_OCCUPIED``,
    ``NO_VALID_PATH``, ``TF_ERROR``, ``INVALID_PLANNER``. It never moves the robot.
  - ``<robot>/<node>/get_state`` (lifecycle_msgs/srv/GetState) for ``bt_navigator``,
    ``planner_server``, ``controller_server`` and ``amcl``: always ``active`` (id 3).
  - ``<robot>/amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped, frame ``map``, reliable +
    transient local, depth 1, as AMCL publishes it), ``<robot>/odom`` (nav_msgs/Odometry, frame
    ``odom``, child ``<robot>/base_link``; odom == map in the sim) and ``<robot>/pose``
    (geometry_msgs/PoseStamped, frame ``map``), every 0.1 s sim (at most once per tick). The pose
    is ground truth; ``initialpose`` is not subscribed (localization is exact).

  One driving goal per robot at a time: a goal on any of the three driving actions preempts
  (aborts) the robot's previous one, whichever action it came by.
* ``ed/rtls/locate_staff`` (LocateStaff), ``ed/paging/page_staff`` (PageStaff),
  ``ed/display/show`` (ShowDisplay).
* ``ed/badge_scans`` (BadgeScan, reliable), ``ed/patient_arrivals`` (PatientArrival,
  reliable + transient local), ``ed/display/content`` (std_msgs/String, transient local: a JSON
  object ``{"room", "title", "lines", "stamp_s"}`` per screen update).
* ``team/events``: an ``EventKind.SIM`` event for every simulator event (ground truth: every
  goal accepted, passed waypoint, success, abort, cancel and every planned or failed path), and
  ``EventKind.INPUT_ERROR`` for bad requests (unknown frame, planner or controller ID, a start or
  goal outside the map or in a wall, a path the robot cannot follow).

Threading model
---------------
The node expects a ``MultiThreadedExecutor``. The tick runs in its own mutually exclusive
callback group on a steady (wall) clock; navigation goals and pages run in a reentrant group and
block their executor thread while they wait (on a condition the tick notifies), so the executor
needs a thread per concurrent goal or page, plus one for the tick. One lock serializes every
call into the engine; publishing happens under it, which keeps the event record in engine order.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import rclpy
import rclpy.time
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from nav2_msgs.action import ComputePathToPose, FollowPath, NavigateThroughPoses, NavigateToPose
from nav2_msgs.msg import WaypointStatus
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import String

from robot_team import lockstep
from robot_team.config import ConfigError, Scenario, load_scenario, load_staff_seed
from robot_team.rosutil import spin_node
from robot_team.events import EventEmitter, EventKind
from robot_team.msg import BadgeScan, PatientArrival, StaffLocation
from robot_team.names import (AMCL_POSE, BADGE_SCANS, BASE_FRAME, CLOCK, COMPUTE_PATH_TO_POSE, DISPLAY_CONTENT,
                              FOLLOW_PATH, LOCATE_STAFF, MAP, MAP_FRAME, NAV2_LIFECYCLE_NODES,
                              NAVIGATE_THROUGH_POSES, NAVIGATE_TO_POSE, ODOM, ODOM_FRAME, PAGE_STAFF,
                              PATIENT_ARRIVALS, POSE, SHOW_DISPLAY, SIMULATOR, Robot, robot_name)
from robot_team.sim.engine import (ABORTED, ACTIVE, CANCELED, ROBOTS, SUCCEEDED, FollowPathError, GoalStatus,
                                   SimEngine, SimEvent, SimInputError)
from robot_team.sim.grid import PlanningError, densify
from robot_team.sim.world import Pose2D, load_world
from robot_team.srv import LocateStaff, PageStaff, ShowDisplay

FEEDBACK_PERIOD_S = 0.5     # sim s between feedback messages of the driving actions
STATE_PERIOD_S = 0.1        # sim s between odom/pose/amcl_pose messages
PLANNER_ID = 'GridBased'    # the one planner plugin (Nav2's default ID); '' selects it too
CONTROLLER_ID = 'FollowPath'   # the one controller plugin (Nav2's default ID); '' selects it too
AMCL_POSITION_VARIANCE = 0.05 ** 2   # m^2: covariance reported on amcl_pose (the sim localizes exactly)
AMCL_YAW_VARIANCE = 0.02 ** 2        # rad^2
GET_STATE = '{node}/get_state'       # lifecycle_msgs/srv/GetState of a Nav2 lifecycle node
MAX_TICK_WALL_S = 0.5       # a stalled tick advances sim time by at most this much wall time
MAX_PAGE_WAIT_S = 3600.0    # sim s: cap on PageStaff.timeout_s
BASE_ROBOTS = tuple(r.value for r in Robot if r is not Robot.MANAGER)


def _stamp(t: float) -> Time:
    sec = int(math.floor(t))
    return Time(sec=sec, nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def _duration(seconds: float) -> Duration:
    seconds = max(seconds, 0.0)
    sec = int(seconds)
    return Duration(sec=sec, nanosec=min(int(round((seconds - sec) * 1e9)), 999_999_999))


def _pose_msg(pose: Pose2D, t: float, frame: str = MAP_FRAME) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = _stamp(t)
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = float(pose.x), float(pose.y)
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(pose.yaw / 2), math.cos(pose.yaw / 2)
    return msg


def _yaw_of(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def _pose2d(pose) -> Pose2D:
    """Return a geometry_msgs/Pose as a map-frame Pose2D (m, rad)."""
    return Pose2D(pose.position.x, pose.position.y, _yaw_of(pose.orientation))


def _frame_problem(frame_id: str) -> str:
    """Return why ``frame_id`` cannot be used for a goal ('' if it can: '', 'map' or 'odom')."""
    frame = frame_id.strip().lstrip('/')
    if frame in ('', MAP_FRAME, ODOM_FRAME):
        return ''
    return f"frame '{frame_id}' is unknown: expected '{MAP_FRAME}' (or '{ODOM_FRAME}')"


def _path_msg(points, final_yaw: float, t: float, spacing: float) -> Path:
    """Return a nav_msgs/Path in ``map`` through ``points`` (shape (N, 2), m), a pose every ``spacing`` m.

    Each pose heads towards the next; the last one has ``final_yaw`` (rad).
    """
    dense = densify(points, spacing)
    msg = Path()
    msg.header.stamp, msg.header.frame_id = _stamp(t), MAP_FRAME
    for i, (x, y) in enumerate(dense):
        if i + 1 < len(dense):
            yaw = math.atan2(dense[i + 1][1] - y, dense[i + 1][0] - x)
        else:
            yaw = final_yaw
        msg.poses.append(_pose_msg(Pose2D(float(x), float(y), yaw), t))
    return msg


class _BadGoal(Exception):
    """A goal the simulator rejects before planning (unknown frame or plugin ID): ``code``, ``message``."""

    def __init__(self, code: int, message: str, **data):
        super().__init__(message)
        self.code, self.message, self.data = int(code), message, data


# Planner and controller errors that mean the request itself was bad (recorded as INPUT_ERROR too).
_BAD_INPUT_CODES = frozenset({
    PlanningError.START_OUTSIDE_MAP, PlanningError.GOAL_OUTSIDE_MAP, PlanningError.START_OCCUPIED,
    PlanningError.GOAL_OCCUPIED, FollowPathError.INVALID_PATH, FollowPathError.NO_VALID_CONTROL})


@dataclass(frozen=True)
class _DriveAction:
    """How one Nav2 driving action maps onto the engine: parse a goal, build feedback and results.

    ``parse(request)`` returns ``start(engine, robot) -> goal_id`` or raises :class:`_BadGoal`;
    ``feedback(status, t, speed, request)`` and ``result(error_code, message, state, status,
    request, failed_index)`` build the action's messages (``status`` may be None before the engine
    has a goal; ``failed_index`` is the pose whose leg could not be planned, if known).
    """

    name: str
    type: Any
    unknown: int
    parse: Callable
    feedback: Callable
    result: Callable


def _check_frame(pose: PoseStamped, code: int, what: str = 'goal', default_frame: str = '') -> None:
    frame = pose.header.frame_id or default_frame
    problem = _frame_problem(frame)
    if problem:
        raise _BadGoal(code, f'{what} {problem}', frame_id=frame)


def _parse_to_pose(request):
    _check_frame(request.pose, NavigateToPose.Result.TF_ERROR)
    target = _pose2d(request.pose.pose)
    return lambda engine, robot: engine.start_goal(robot, target)


def _parse_through_poses(request):
    goals = list(request.poses.goals)
    if not goals:
        raise _BadGoal(NavigateThroughPoses.Result.UNKNOWN, 'no poses given')
    for i, pose in enumerate(goals):
        _check_frame(pose, NavigateThroughPoses.Result.TF_ERROR, f'pose {i + 1} of {len(goals)}',
                     request.poses.header.frame_id)
    targets = [_pose2d(p.pose) for p in goals]
    return lambda engine, robot: engine.start_through_poses(robot, targets)


def _parse_follow_path(request):
    if request.controller_id not in ('', CONTROLLER_ID):
        raise _BadGoal(FollowPath.Result.INVALID_CONTROLLER, f"controller_id '{request.controller_id}' is "
                       f"unknown: expected '' or '{CONTROLLER_ID}'", controller_id=request.controller_id)
    problem = _frame_problem(request.path.header.frame_id)
    if problem:
        raise _BadGoal(FollowPath.Result.TF_ERROR, f'path {problem}', frame_id=request.path.header.frame_id)
    points = [(p.pose.position.x, p.pose.position.y) for p in request.path.poses]
    yaw = _yaw_of(request.path.poses[-1].pose.orientation) if points else 0.0
    return lambda engine, robot: engine.start_follow_path(robot, points, yaw)


def _nav_feedback(feedback, status: GoalStatus, t: float):
    feedback.current_pose = _pose_msg(status.pose, t)
    feedback.navigation_time = _duration(status.navigation_time_s)
    feedback.estimated_time_remaining = _duration(status.eta_s)
    feedback.number_of_recoveries = 0
    feedback.distance_remaining = float(status.distance_remaining)
    return feedback


def _waypoint_statuses(request, state: str, status: GoalStatus | None, error_code: int, message: str,
                       failed_index: int | None = None):
    """Return WaypointStatus per requested pose: COMPLETED if passed, FAILED where an abort stopped it.

    ``failed_index`` is the pose whose leg could not be planned (nothing was driven then).
    """
    goals = list(request.poses.goals)
    if failed_index is not None:
        reached, failed = 0, failed_index
    else:
        if state == SUCCEEDED:
            reached = len(goals)
        else:
            reached = status.poses_total - status.poses_remaining if status is not None else 0
        failed = reached if state == ABORTED else None
    out = []
    for i, pose in enumerate(goals):
        w = WaypointStatus(waypoint_index=i, waypoint_pose=pose)
        if i < reached:
            w.waypoint_status = WaypointStatus.COMPLETED
        elif i == failed:
            w.waypoint_status, w.error_code, w.error_msg = WaypointStatus.FAILED, int(error_code), message
        else:
            w.waypoint_status = WaypointStatus.PENDING
        out.append(w)
    return out


def _through_feedback(status: GoalStatus, t: float, speed: float, request):
    feedback = _nav_feedback(NavigateThroughPoses.Feedback(), status, t)
    feedback.number_of_poses_remaining = int(status.poses_remaining)
    feedback.waypoint_statuses = _waypoint_statuses(request, ACTIVE, status, 0, '')
    return feedback


def _through_result(error_code: int, message: str, state: str, status, request, failed_index=None):
    return NavigateThroughPoses.Result(error_code=error_code, error_msg=message,
                                       waypoint_statuses=_waypoint_statuses(request, state, status, error_code,
                                                                            message, failed_index))


def _follow_feedback(status: GoalStatus, t: float, speed: float, request):
    return FollowPath.Feedback(distance_to_goal=float(status.distance_remaining), speed=float(speed))


_DRIVE_ACTIONS = (
    _DriveAction(NAVIGATE_TO_POSE, NavigateToPose, NavigateToPose.Result.UNKNOWN, _parse_to_pose,
                 lambda status, t, speed, request: _nav_feedback(NavigateToPose.Feedback(), status, t),
                 lambda code, message, *_: NavigateToPose.Result(error_code=code, error_msg=message)),
    _DriveAction(NAVIGATE_THROUGH_POSES, NavigateThroughPoses, NavigateThroughPoses.Result.UNKNOWN,
                 _parse_through_poses, _through_feedback, _through_result),
    _DriveAction(FOLLOW_PATH, FollowPath, FollowPath.Result.UNKNOWN, _parse_follow_path, _follow_feedback,
                 lambda code, message, *_: FollowPath.Result(error_code=code, error_msg=message)),
)


class _SimTimeView:
    """The node as :class:`EventEmitter` sees it, with a clock that reads the engine's sim time.

    The simulator is the source of ``/clock``; rather than subscribing to its own clock topic
    (``use_sim_time``), it stamps its team events with the sim time it holds.
    """

    def __init__(self, node: 'EdSimNode'):
        self._node = node

    def create_publisher(self, *args, **kwargs):
        return self._node.create_publisher(*args, **kwargs)

    def get_logger(self):
        return self._node.get_logger()

    def get_clock(self) -> '_SimTimeView':
        return self

    def now(self) -> rclpy.time.Time:
        return rclpy.time.Time(nanoseconds=int(round(self._node._sim_t * 1e9)))


def describe(event: SimEvent) -> tuple[str, str]:
    """Return a one-sentence summary and the target (robot, HCW or room) of a simulator event."""
    d = event.data
    if event.kind == 'patient_arrival':
        return (f"Patient {d['patient_id']} arrived in {d['room']} ({d['presentation'] or 'no details'}); "
                f"assigned HCW #{d['assigned_hcw_id']}", d['room'])
    if event.kind == 'goal_accepted':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} accepted goal {d['goal_id']} to ({x:.2f}, {y:.2f}) in {d['target_area']}, "
                f"path {d['path_length']:.1f} m", d['robot'])
    if event.kind == 'waypoint_reached':
        return (f"{d['robot']} passed pose {d['index'] + 1} of goal {d['goal_id']} in {d['area']} "
                f"({d['poses_remaining']} to go)", d['robot'])
    if event.kind == 'path_computed':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} planned a path to ({x:.2f}, {y:.2f}) in {d['target_area']}, "
                f"{d['path_length']:.1f} m", d['robot'])
    if event.kind == 'path_failed':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} could not plan a path to ({x:.2f}, {y:.2f}): {d['message']} "
                f"(error {d['error_code']})", d['robot'])
    if event.kind == 'goal_succeeded':
        return f"{d['robot']} reached goal {d['goal_id']} in {d['area']}", d['robot']
    if event.kind == 'goal_aborted':
        code = f" (error {d['error_code']})" if d['error_code'] else ''
        return f"{d['robot']} goal {d['goal_id']} aborted: {d['message']}{code}", d['robot']
    if event.kind == 'goal_canceled':
        return f"{d['robot']} goal {d['goal_id']} canceled in {d['area']}", d['robot']
    if event.kind == 'page_delivered':
        return (f"Page delivered to HCW #{d['hcw_id']} ({d['availability']}) "
                f"for {d['robot'] or 'no robot'}", d['hcw_id'])
    if event.kind == 'page_acknowledged':
        return f"HCW #{d['hcw_id']} acknowledged the page: {d['reply']}", d['hcw_id']
    if event.kind == 'hcw_following':
        return f"HCW #{d['hcw_id']} is following {d['robot']} from {d['area']}", d['hcw_id']
    if event.kind == 'hcw_entering':
        return f"HCW #{d['hcw_id']} is entering {d['room']} behind {d['robot']}", d['hcw_id']
    if event.kind == 'hcw_arrived':
        return f"HCW #{d['hcw_id']} is in {d['room']}", d['hcw_id']
    if event.kind == 'hcw_entry_blocked':
        return f"HCW #{d['hcw_id']} cannot enter {d['room']}: {d['message']}", d['hcw_id']
    if event.kind == 'badge_scan':
        return (f"Badge {d['badge_id']} scanned at {d['reader_id']} ({d['room']}) by HCW #{d['hcw_id']}",
                d['room'])
    if event.kind == 'display_shown':
        return f"{d['room']} screen now shows '{d['title']}' ({d['entries']} member(s))", d['room']
    return f'{event.kind}: {d}', ''


class EdSimNode(Node):
    """The ED floor simulator node (``ed_sim``).

    Parameters
    ----------
    scenario
        The episode to simulate; if None, the ``scenario`` parameter (a name in
        ``config/scenarios`` or a path) is loaded.
    context
        The rclpy context (tests pass a private one).
    parameter_overrides
        As for ``rclpy.node.Node``. The node does not need ``use_sim_time``: it stamps its
        messages and team events with the engine's sim time directly.
    **node_kwargs
        Passed to ``rclpy.node.Node``.

    ROS parameters: ``scenario`` (str), ``real_time_factor`` (sim s per wall s, default the
    scenario's), ``tick_hz`` (wall ticks per second, default 100).

    Raises
    ------
    ConfigError
        If the scenario, the world, the staff seed or a parameter cannot be used (an
        ``INPUT_ERROR`` event is emitted first).

    Notes
    -----
    See the module docstring for the threading model: spin it in a ``MultiThreadedExecutor``
    with a thread per concurrent goal or page plus one.
    """

    def __init__(self, scenario: Scenario | None = None, *, context=None, parameter_overrides=None,
                 **node_kwargs):
        super().__init__(SIMULATOR, context=context, parameter_overrides=parameter_overrides, **node_kwargs)
        self._sim_t = 0.0   # the engine's time, readable without the lock (event stamps)
        self._events = EventEmitter(_SimTimeView(self), SIMULATOR)
        self._lock = threading.Lock()
        self._tick_cv = threading.Condition()
        self._stopping = False
        self._in_flight = 0          # goal and page callbacks running (destroy_node waits for them)
        self._idle_cv = threading.Condition()
        self._timer = None
        self._page_waiters: dict[int, tuple[threading.Event, float]] = {}   # page ID -> (done, deadline)
        name = self.declare_parameter('scenario', scenario.name if scenario else 'onboarding').value
        try:
            if scenario is None:
                scenario = load_scenario(str(name))
            self.scenario = scenario
            world = load_world(scenario.floor_path)
            staff = load_staff_seed(scenario.staff_path)
            # Numbers may come as integers from the command line (-p tick_hz:=50): type them loosely.
            number = ParameterDescriptor(dynamic_typing=True)
            self.real_time_factor = self._number('real_time_factor', scenario.real_time_factor, number)
            self.tick_hz = self._number('tick_hz', 100.0, number)
            if not (self.real_time_factor > 0 and self.tick_hz > 0):
                raise ConfigError(f'parameters real_time_factor ({self.real_time_factor}) and tick_hz '
                                  f'({self.tick_hz}) must be positive')
            self.engine = SimEngine(world, staff, scenario, robots=ROBOTS)
        except ConfigError as exc:
            self._events.emit(EventKind.INPUT_ERROR, f'simulator cannot start: {exc}', target=str(name))
            raise

        self._tick_group = MutuallyExclusiveCallbackGroup()
        self._reentrant_group = ReentrantCallbackGroup()
        latched = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._clock_pub = self.create_publisher(ClockMsg, CLOCK, 10)
        self._map_pub = self.create_publisher(OccupancyGridMsg, MAP, latched)
        self._arrival_pub = self.create_publisher(PatientArrival, PATIENT_ARRIVALS, QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._scan_pub = self.create_publisher(BadgeScan, BADGE_SCANS, QoSProfile(
            depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self._display_pub = self.create_publisher(String, DISPLAY_CONTENT, QoSProfile(
            depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._odom_pubs = {r: self.create_publisher(Odometry, robot_name(r, ODOM), 10) for r in BASE_ROBOTS}
        self._pose_pubs = {r: self.create_publisher(PoseStamped, robot_name(r, POSE), 10)
                           for r in BASE_ROBOTS}
        # As AMCL publishes it (and BasicNavigator subscribes to it): reliable, transient local, depth 1.
        self._amcl_pubs = {r: self.create_publisher(PoseWithCovarianceStamped, robot_name(r, AMCL_POSE), latched)
                           for r in BASE_ROBOTS}

        self._goal_locks = {r: threading.Lock() for r in BASE_ROBOTS}
        self._goal_handles: dict[str, object] = {}
        self._specs = {spec.name: spec for spec in _DRIVE_ACTIONS}
        executes = {NAVIGATE_TO_POSE: self.execute_callback,
                    NAVIGATE_THROUGH_POSES: self.navigate_through_poses_callback,
                    FOLLOW_PATH: self.follow_path_callback}
        # The three driving actions of a robot share one goal slot (handle_accepted_callback).
        self._action_servers = [
            ActionServer(self, spec.type, robot_name(r, spec.name),
                         execute_callback=partial(executes[spec.name], r),
                         goal_callback=self.goal_callback,
                         handle_accepted_callback=partial(self.handle_accepted_callback, r),
                         cancel_callback=self.cancel_callback,
                         callback_group=self._reentrant_group)
            for r in BASE_ROBOTS for spec in _DRIVE_ACTIONS]
        # Planning does not move the robot, so it runs beside a driving goal (as Nav2's planner
        # serves bt_navigator while the controller drives).
        self._action_servers += [
            ActionServer(self, ComputePathToPose, robot_name(r, COMPUTE_PATH_TO_POSE),
                         execute_callback=partial(self.compute_path_callback, r),
                         goal_callback=self.goal_callback, cancel_callback=self.cancel_callback,
                         callback_group=self._reentrant_group)
            for r in BASE_ROBOTS]
        self._lifecycle_srvs = [
            self.create_service(GetState, robot_name(r, GET_STATE.format(node=node)), self.get_state_callback,
                                callback_group=self._reentrant_group)
            for r in BASE_ROBOTS for node in NAV2_LIFECYCLE_NODES]
        self._locate_srv = self.create_service(LocateStaff, LOCATE_STAFF, self.locate_staff_callback,
                                               callback_group=self._reentrant_group)
        self._page_srv = self.create_service(PageStaff, PAGE_STAFF, self.page_staff_callback,
                                             callback_group=self._reentrant_group)
        self._display_srv = self.create_service(ShowDisplay, SHOW_DISPLAY, self.show_display_callback,
                                                callback_group=self._reentrant_group)

        self._publish_map()
        self._next_state_t = 0.0
        self._last_wall: float | None = None
        # The LLM clock: in lockstep, sim time holds while a brain waits on its LLM (robot_team.lockstep).
        self.llm_clock = self.declare_parameter('llm_clock', 'realtime').value
        self._holds = lockstep.attach_clock_source(self, self.llm_clock, self._events.emit, self._reentrant_group)
        # The simulator is the clock source: its timer must run on wall time, never on sim time.
        self._timer = self.create_timer(1.0 / self.tick_hz, self.tick_callback,
                                        callback_group=self._tick_group,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._events.emit(EventKind.SIM, f"simulator started: scenario '{scenario.name}', world "
                          f"'{world.name}', real-time factor {self.real_time_factor:g}",
                          what='started', scenario=scenario.name, world=str(world.path),
                          real_time_factor=self.real_time_factor, tick_hz=self.tick_hz, llm_clock=self.llm_clock,
                          blocked_doors=list(scenario.blocked_doors))

    def _number(self, name: str, default: float, descriptor: ParameterDescriptor) -> float:
        value = self.declare_parameter(name, default, descriptor).value
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f'parameter {name}: expected a number, got {value!r}') from None

    # --- clock and state ----------------------------------------------------------------------

    @property
    def sim_time(self) -> float:
        """Current sim time, s."""
        with self._lock:
            return self.engine.t

    def tick_callback(self) -> None:
        """Advance the simulation by real_time_factor x the wall time since the last tick."""
        now = time.monotonic()
        if self._holds is not None and self._holds.held():   # lockstep: a brain waits on its LLM
            self._last_wall = now
            return
        last = self._last_wall if self._last_wall is not None else now - 1.0 / self.tick_hz
        wall_dt, self._last_wall = min(now - last, MAX_TICK_WALL_S), now
        with self._lock:
            if self._stopping:
                return
            events = self.engine.step(wall_dt * self.real_time_factor
                                      + (self._holds.take_step() if self._holds is not None else 0.0))
            t = self._sim_t = self.engine.t
            self._clock_pub.publish(ClockMsg(clock=_stamp(t)))
            self._process(events)
            if t >= self._next_state_t:
                self._next_state_t = t + STATE_PERIOD_S
                self._publish_state(t)
            for page_id, (event, deadline) in list(self._page_waiters.items()):
                if self.engine.page_status(page_id).acknowledged or t >= deadline:
                    event.set()
        with self._tick_cv:
            self._tick_cv.notify_all()

    def _publish_state(self, t: float) -> None:
        for robot in BASE_ROBOTS:
            pose = self.engine.robot_pose(robot)
            speed, yaw_rate = self.engine.robot_velocity(robot)
            odom = Odometry()
            odom.header.stamp = _stamp(t)
            odom.header.frame_id = ODOM_FRAME
            odom.child_frame_id = f'{robot}/{BASE_FRAME}'
            odom.pose.pose = _pose_msg(pose, t).pose
            odom.twist.twist.linear.x = float(speed)
            odom.twist.twist.angular.z = float(yaw_rate)
            self._odom_pubs[robot].publish(odom)
            self._pose_pubs[robot].publish(_pose_msg(pose, t))
            amcl = PoseWithCovarianceStamped()
            amcl.header.stamp, amcl.header.frame_id = _stamp(t), MAP_FRAME
            amcl.pose.pose = odom.pose.pose
            amcl.pose.covariance[0] = amcl.pose.covariance[7] = AMCL_POSITION_VARIANCE
            amcl.pose.covariance[35] = AMCL_YAW_VARIANCE
            self._amcl_pubs[robot].publish(amcl)

    def _publish_map(self) -> None:
        grid = self.engine.grid
        msg = OccupancyGridMsg()
        msg.header.frame_id = MAP_FRAME
        msg.info.resolution = float(grid.resolution)
        msg.info.width, msg.info.height = grid.width, grid.height
        msg.info.origin.position.x, msg.info.origin.position.y = float(grid.origin[0]), float(grid.origin[1])
        msg.info.origin.orientation.w = 1.0
        msg.data = grid.data.ravel().tolist()
        self._map_pub.publish(msg)

    def _process(self, events: list[SimEvent]) -> None:
        """Publish what the events mean on the ED topics and record each as a SIM team event (lock held)."""
        for event in events:
            d = event.data
            if event.kind == 'patient_arrival':
                msg = PatientArrival(patient_id=d['patient_id'], room=d['room'],
                                     presentation=d['presentation'], esi_level=int(d['esi_level']),
                                     assigned_hcw_id=d['assigned_hcw_id'],
                                     required_specialty=d['required_specialty'])
                msg.header.stamp, msg.header.frame_id = _stamp(event.t), MAP_FRAME
                self._arrival_pub.publish(msg)
            elif event.kind == 'badge_scan':
                msg = BadgeScan(reader_id=d['reader_id'], room=d['room'], badge_id=d['badge_id'])
                msg.header.stamp = _stamp(event.t)
                msg.header.frame_id = d['reader_id'].removesuffix('_door') + '_badge_reader'
                self._scan_pub.publish(msg)
            elif event.kind == 'display_shown':
                self._display_pub.publish(String(data=json.dumps(
                    {'room': d['room'], 'title': d['title'], 'lines': d['lines'], 'stamp_s': event.t})))
            summary, target = describe(event)
            self._events.emit(EventKind.SIM, summary, target=target, what=event.kind, sim_time_s=event.t, **d)

    def _input_error(self, summary: str, target: str = '', **data) -> None:
        self._events.emit(EventKind.INPUT_ERROR, summary, target=target, **data)

    @contextmanager
    def _in_callback(self):
        """Count a blocking callback as in flight, so that destroy_node can wait for it."""
        with self._idle_cv:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._idle_cv:
                self._in_flight -= 1
                self._idle_cv.notify_all()

    def _wait_tick(self) -> None:
        with self._tick_cv:
            self._tick_cv.wait(timeout=0.1)

    # --- Nav2 lifecycle and navigation actions ------------------------------------------------

    def get_state_callback(self, request, response):
        """Answer a lifecycle GetState request: the stand-in Nav2 nodes are always active."""
        response.current_state = State(id=State.PRIMARY_STATE_ACTIVE, label='active')
        return response

    def goal_callback(self, goal_request) -> GoalResponse:
        """Accept or reject a client request to begin an action."""
        return GoalResponse.ACCEPT

    def handle_accepted_callback(self, robot: str, goal_handle) -> None:
        """Abort the robot's previous navigation goal (any of the three driving actions), then execute."""
        with self._goal_locks[robot]:
            previous = self._goal_handles.get(robot)
            if previous is not None and previous.is_active:
                previous.abort()
            self._goal_handles[robot] = goal_handle
        goal_handle.execute()

    def cancel_callback(self, goal_handle) -> CancelResponse:
        """Accept or reject a client request to cancel an action."""
        return CancelResponse.ACCEPT

    def _finish(self, robot: str, goal_handle, spec: '_DriveAction', state: str, error_code: int,
                message: str, status: GoalStatus | None = None, request=None, failed_index: int | None = None):
        """Move the goal to a terminal state (if still ours) and return its result."""
        result = spec.result(int(error_code), message, state, status, request, failed_index)
        with self._goal_locks[robot]:
            if goal_handle.is_active:
                if state == SUCCEEDED:
                    goal_handle.succeed()
                elif state == CANCELED:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
        return result

    def execute_callback(self, robot: str, goal_handle):
        """Drive the robot to the goal pose, publishing feedback every 0.5 s sim."""
        with self._in_callback():
            return self._drive(robot, goal_handle, self._specs[NAVIGATE_TO_POSE])

    def navigate_through_poses_callback(self, robot: str, goal_handle):
        """Drive the robot through the goal poses in order, publishing feedback every 0.5 s sim."""
        with self._in_callback():
            return self._drive(robot, goal_handle, self._specs[NAVIGATE_THROUGH_POSES])

    def follow_path_callback(self, robot: str, goal_handle):
        """Drive the robot along the given path, publishing feedback every 0.5 s sim."""
        with self._in_callback():
            return self._drive(robot, goal_handle, self._specs[FOLLOW_PATH])

    def _drive(self, robot: str, goal_handle, spec: '_DriveAction'):
        request = goal_handle.request
        try:
            start = spec.parse(request)
        except _BadGoal as exc:
            with self._lock:
                self._input_error(f'{robot}: {spec.name} goal rejected: {exc.message}', target=robot,
                                  action=spec.name, error_code=exc.code, **exc.data)
            return self._finish(robot, goal_handle, spec, ABORTED, exc.code, exc.message, request=request)
        with self._lock:
            if not goal_handle.is_active:
                return spec.result(spec.unknown, 'preempted before it started', ABORTED, None, request, None)
            try:
                goal_id = start(self.engine, robot)
            except (PlanningError, FollowPathError) as exc:
                self._process(self.engine.drain_events())
                if exc.code in _BAD_INPUT_CODES:
                    self._input_error(f'{robot}: {spec.name} goal rejected: {exc.message}', target=robot,
                                      action=spec.name, error_code=exc.code)
                return self._finish(robot, goal_handle, spec, ABORTED, exc.code, exc.message, request=request,
                                    failed_index=getattr(exc, 'pose_index', None))
            except SimInputError as exc:
                self._input_error(f'{robot}: {spec.name} goal rejected: {exc}', target=robot, action=spec.name)
                return self._finish(robot, goal_handle, spec, ABORTED, spec.unknown, str(exc), request=request)
            self._process(self.engine.drain_events())
        next_feedback = -math.inf
        while True:
            with self._lock:
                status = self.engine.goal(goal_id)
                t = self.engine.t
                speed = self.engine.robot_velocity(robot)[0]
                if goal_handle.is_cancel_requested and status.state == ACTIVE:
                    current = self.engine.goal_status(robot)
                    if current is not None and current.goal_id == goal_id:
                        self.engine.cancel_goal(robot)
                        self._process(self.engine.drain_events())
                    status = self.engine.goal(goal_id)
            if not goal_handle.is_active:
                return spec.result(spec.unknown, status.message or 'preempted by a newer goal', ABORTED, status,
                                   request, None)
            if status.state != ACTIVE:
                return self._finish(robot, goal_handle, spec, status.state, status.error_code, status.message,
                                    status, request)
            if self._stopping or not self.context.ok():
                return self._finish(robot, goal_handle, spec, ABORTED, spec.unknown, 'simulator shutting down',
                                    status, request)
            if t >= next_feedback:
                next_feedback = t + FEEDBACK_PERIOD_S
                feedback = spec.feedback(status, t, speed, request)
                with self._lock:
                    if self._stopping:
                        continue
                    goal_handle.publish_feedback(feedback)
            self._wait_tick()

    def compute_path_callback(self, robot: str, goal_handle):
        """Plan a path on the grid from the start (or the robot's pose) to the goal; never moves the robot."""
        with self._in_callback():
            return self._compute_path(robot, goal_handle)

    def _compute_path(self, robot: str, goal_handle):
        request = goal_handle.request
        result = ComputePathToPose.Result()
        problem = None
        if request.planner_id not in ('', PLANNER_ID):
            problem = (ComputePathToPose.Result.INVALID_PLANNER,
                       f"planner_id '{request.planner_id}' is unknown: expected '' or '{PLANNER_ID}'")
        else:
            for what, pose in (('goal', request.goal), ('start', request.start if request.use_start else None)):
                if pose is not None and _frame_problem(pose.header.frame_id):
                    problem = (ComputePathToPose.Result.TF_ERROR,
                               f'{what} {_frame_problem(pose.header.frame_id)}')
                    break
        if problem is None:
            goal = _pose2d(request.goal.pose)
            start = _pose2d(request.start.pose) if request.use_start else None
            with self._lock:
                began = time.perf_counter()
                try:
                    path = self.engine.plan_path(robot, goal, start)
                except PlanningError as exc:
                    problem = (exc.code, exc.message)
                    if exc.code in _BAD_INPUT_CODES:
                        self._input_error(f'{robot}: compute_path_to_pose rejected: {exc.message}', target=robot,
                                          action=COMPUTE_PATH_TO_POSE, error_code=exc.code,
                                          goal=[goal.x, goal.y, goal.yaw],
                                          start=[start.x, start.y, start.yaw] if start else None)
                else:
                    result.path = _path_msg(path, goal.yaw, self.engine.t, self.engine.grid.resolution)
                    result.planning_time = _duration(time.perf_counter() - began)
                self._process(self.engine.drain_events())
        else:
            with self._lock:
                self._input_error(f'{robot}: compute_path_to_pose rejected: {problem[1]}', target=robot,
                                  action=COMPUTE_PATH_TO_POSE, error_code=problem[0])
        if problem is not None:
            result.error_code, result.error_msg = int(problem[0]), problem[1]
            goal_handle.abort()
        elif goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return result

    # --- services --------------------------------------------------------------------------------

    def locate_staff_callback(self, request, response):
        """Locate HCWs by ID, or every HCW of a specialty."""
        with self._lock:
            records, unknown = self.engine.locate(list(request.hcw_ids), request.specialty)
            t = self.engine.t
            if unknown:
                self._input_error(f"locate_staff: unknown HCW ID(s) {', '.join(unknown)}",
                                  target=LOCATE_STAFF, unknown_ids=unknown)
        for r in records:
            response.staff.append(StaffLocation(hcw_id=r.hcw_id, specialty=r.specialty, area=r.area,
                                                pose=_pose_msg(r.pose, t), availability=r.availability,
                                                detail=r.detail))
        response.unknown_ids = unknown
        return response

    def page_staff_callback(self, request, response):
        """Page an HCW and wait, in sim time, up to timeout_s for the acknowledgement.

        ``response_time_s`` is the sim time from the page to the acknowledgement, or the time
        waited when there was none.
        """
        with self._in_callback():
            return self._page(request, response)

    def _page(self, request, response):
        timeout = float(request.timeout_s) if math.isfinite(request.timeout_s) else 0.0
        timeout = min(max(timeout, 0.0), MAX_PAGE_WAIT_S)
        with self._lock:
            try:
                page = self.engine.page(request.hcw_id.strip(), request.robot.strip(), request.message)
            except SimInputError as exc:
                self._input_error(f'page_staff: {exc}', target=request.hcw_id, robot=request.robot)
                response.delivered, response.acknowledged = False, False
                response.reply = f'(not delivered: {exc})'
                return response
            self._process(self.engine.drain_events())
            done = threading.Event()
            self._page_waiters[page.page_id] = (done, page.sent_at + timeout)
        if page.delivered:
            while not done.wait(timeout=0.1):
                if self._stopping or not self.context.ok():
                    break
        with self._lock:
            self._page_waiters.pop(page.page_id, None)
            page = self.engine.page_status(page.page_id)
            waited = self.engine.t - page.sent_at
        response.delivered = page.delivered
        response.acknowledged = page.acknowledged
        response.reply = page.reply if page.delivered else f'(not delivered: HCW #{page.hcw_id} is off shift)'
        response.response_time_s = float(page.response_time_s if page.acknowledged else
                                         (waited if page.delivered else 0.0))
        return response

    def show_display_callback(self, request, response):
        """Show a care-team layout on a room's screen."""
        with self._lock:
            success, message, lines = self.engine.show_display(
                request.room, request.title, list(request.entries), request.layout)
            if not success:
                self._input_error(f'show_display: {message}', target=request.room, title=request.title)
            self._process(self.engine.drain_events())
        response.success, response.message, response.rendered_lines = success, message, lines
        return response

    def destroy_node(self) -> None:
        """Release waiting goals and pages, then destroy the node."""
        self.stop()
        with self._idle_cv:
            self._idle_cv.wait_for(lambda: self._in_flight == 0, timeout=2.0)
        super().destroy_node()

    def stop(self) -> None:
        """Stop the clock and release every waiting goal and page (while the executor may still spin)."""
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:     # a tick in flight finishes first; later ones return at once
            waiters = list(self._page_waiters.values())
        for event, _ in waiters:
            event.set()
        with self._tick_cv:
            self._tick_cv.notify_all()


def main(args=None) -> int:
    """Run the simulator node until interrupted."""
    # Goals and pages block a thread each while they wait for sim time to pass: give the
    # executor one per robot goal and concurrent page, plus the tick and services.
    return spin_node('ed_sim', EdSimNode, lambda: MultiThreadedExecutor(num_threads=16), args)


if __name__ == '__main__':
    sys.exit(main())
