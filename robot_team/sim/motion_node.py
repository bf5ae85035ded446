"""Robot motion as a ROS 2 node (``motion_sim``): the embedded stand-in for Gazebo and Nav2.

A thin facade over :class:`~robot_team.sim.motion.MotionEngine`. It serves, per robot, what a
robot running Nav2 in Gazebo has (its messages: :mod:`robot_team.sim.nav2_messages`), and it is
the clock source: it steps the engine and publishes ``/clock``, advancing sim time by
``real_time_factor`` x the wall time elapsed, or as fast as the team keeps up (parameter
``clock_mode``; :class:`~robot_team.sim.clock_source.SimClock`). Other nodes run
with ``use_sim_time:=true``. It knows nothing of HCWs, pages, badges or displays: those are the hospital's systems
(``hospital_systems``, :mod:`robot_team.sim.hospital_node`), which see the robots only through
the poses published here.

Interfaces (names from :mod:`robot_team.contracts.names`)
-----------------------------------------------
Every name is relative: the node runs in the team namespace ``T`` (``/`` by default) and serves
each robot's interfaces as ``<robot>/<name>`` (``T/<robot>/<name>``), as Nav2 and Gazebo would
serve a robot launched in namespace ``T/<robot>``.

* ``/clock`` (rosgraph_msgs/Clock), every tick (see :func:`robot_team.contracts.names.clock_remap`).
* ``map`` (nav_msgs/OccupancyGrid, reliable + transient local, as map_server), once: walls and
  closed doors.
* Per robot (parameter ``robots``), Nav2's interfaces, so that
  ``BasicNavigator(namespace='<robot>')`` works with its defaults:

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
  - ``<robot>/odom`` (nav_msgs/Odometry, frame ``odom``, child ``<robot>/base_link``; odom == map
    in the sim) every 0.1 s sim (at most once per tick), and ``<robot>/amcl_pose``
    (geometry_msgs/PoseWithCovarianceStamped, frame ``map``, reliable + transient local, depth 1)
    as AMCL publishes it: at start, then after every 0.25 m or 0.2 rad of motion and where the
    robot stops, each stamped with its sim time (several per tick when a tick is long; after a
    jump ahead, the latest only); nothing while it stands. The pose is ground truth;
    ``initialpose`` is not subscribed (localization is exact).
  - ``<robot>/trajectory`` (nav_msgs/Path, reliable + transient local, depth 1; not a Nav2
    topic): when a goal begins, ends or is cancelled, the ``amcl_pose`` reports the robot will make
    while it drives, each pose stamped with its sim time (``MotionEngine.forecast``; empty: it
    stands). ``hospital_systems`` replays it, so that the follow clock may jump across a drive.

  One driving goal per robot at a time: a goal on any of the three driving actions preempts
  (aborts) the robot's previous one, whichever action it came by.
* ``team/events``: ``node_started``; an ``EventKind.SIM`` event for every motion event (ground
  truth: every goal accepted, passed waypoint, success, abort, cancel, every planned or failed
  path) and for the clock starting, pausing and resuming; ``EventKind.INPUT_ERROR`` for bad
  requests (unknown frame, planner or controller ID, a start or goal outside the map or in a
  wall, a path the robot cannot follow).

Parameters
----------
``scenario`` (str, default ``onboarding``)
    A scenario name in ``config/scenarios`` or a YAML path: the floor (``floor``), its closed
    doors (``blocked_doors``) and doors closing or opening at given times (``door_changes``), and
    the default real-time factor.
``robots`` (string array, default the scenario's robots, :attr:`robot_team.contracts.config.Scenario.robots`)
    The robots to simulate; each needs a dock in the floor description.
``clock_mode`` (str, default ``wall``)
    ``wall``: sim time runs at ``real_time_factor`` x wall time (Gazebo's real-time factor).
    ``follow``: sim time steps by ``max_step_size`` once every node that follows the clock
    acknowledged the current time on ``team/clock_acks`` (:mod:`robot_team.contracts.clock_sync`; the
    default of unattended runs, ``eval`` and ``bench``); it holds while a brain waits on its LLM
    (lockstep, whatever ``llm_clock`` says). A follower that stays behind for
    ``follower_timeout_s`` (wall s, default 10) stops counting (``sim`` event
    ``clock_follower_lost``); until it acknowledges again (for at most 60 wall s), sim time runs at
    most at real time.
``real_time_factor`` (float, default the scenario's in ``wall``, 0 in ``follow``)
    Sim seconds per wall second; in ``follow`` an upper bound (0: none).
``max_step_size`` (float, sim s, default 1.0: :data:`~robot_team.contracts.clock_sync.DEFAULT_MAX_STEP_SIZE_S`)
    The follow clock's step.
``jump_ahead`` (bool, default true)
    ``follow`` without a speed cap: while every follower has nothing to do but wait for a scheduled
    event (a robot that drives reaching its goal is one: its ``trajectory`` tells the way there), sim
    time jumps to the step that brings it (:mod:`robot_team.contracts.clock_sync`; ``sim`` event
    ``clock_jump``). The same decisions, sooner.
``tick_hz`` (float, default 100)
    Clock ticks per wall second (``follow``: the clock also steps on each last acknowledgement;
    without a speed cap it steps only then, and ticks at most 20 times a second).
``paused`` (bool, default false; may be set while running)
    Hold sim time (``/clock`` keeps being published, unchanged), as Gazebo's pause does. A
    launcher starts the node paused next to the team and resumes it once every node is up.
``followers_gone`` (string array, default none; may be set while running)
    ``follow``: the nodes that died and stay down (their names), set by the launcher that restarts
    nodes (``robot-team run --processes``): the clock stops waiting for them at once
    (:meth:`robot_team.contracts.clock_sync.FollowGate.gone`), where it would otherwise wait
    ``follower_timeout_s`` and then run at most at real time for a while.
``min_clock_subscribers`` (int, default 0)
    Sim time starts only once ``/clock`` has at least this many matched subscriptions (each node
    with ``use_sim_time`` has one), so that no node misses sim time while DDS discovers it; on the
    follow clock, also until every node matched on ``team/clock_acks`` acknowledged once. After
    ``clock_start_timeout_s`` (float, wall s, default 30) the clock starts anyway and an
    ``INPUT_ERROR`` event names the shortfall.
``min_clock_followers`` (int, default 0)
    ``follow``: how many nodes the launcher starts that follow the clock (the team and the
    hospital's systems). Sim time starts once that many acknowledged (or after
    ``clock_start_timeout_s``, recorded as above), and never jumps ahead while fewer were heard:
    a follower DDS has not yet discovered could not say it is busy.

Threading model
---------------
The node expects a ``MultiThreadedExecutor``. The tick runs in its own mutually exclusive
callback group on a steady (wall) clock; navigation goals run in a reentrant group and block
their executor thread while they wait (on a condition the tick notifies), so the executor needs a
thread per concurrent goal, plus one for the tick. One lock serializes every call into the
engine; publishing happens under it, which keeps the event record in engine order.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from functools import partial

from geometry_msgs.msg import PoseWithCovarianceStamped
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from nav2_msgs.action import ComputePathToPose
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry, Path
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts.config import ConfigError, Scenario
from robot_team.contracts.events import EventKind
from robot_team.contracts.clock_sync import DEFAULT_FOLLOWER_TIMEOUT_S, DEFAULT_MAX_STEP_SIZE_S, check_clock_mode
from robot_team.llm import lockstep
from robot_team.contracts.names import (
    AMCL_POSE, COMPUTE_PATH_TO_POSE, FOLLOW_PATH, MAP, MOTION_SIM, NAV2_LIFECYCLE_NODES, NAVIGATE_THROUGH_POSES,
    NAVIGATE_TO_POSE, ODOM, TRAJECTORY, RobotId, robot_name)
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.services import reported_deliveries
from robot_team.ros.stamps import s_to_duration
from robot_team.ros.util import spin_node
from robot_team.sim.clock_source import ClockSettings, SimClock
from robot_team.sim.common import SimEvent, SimInputError
from robot_team.sim.grid import PlanningError
from robot_team.ros.liveness import announce_alive
from robot_team.sim.motion import ABORTED, ACTIVE, CANCELED, SUCCEEDED, FollowPathError, GoalStatus, MotionEngine
from robot_team.sim.nav2_messages import (
    BAD_INPUT_CODES, DRIVE_ACTIONS, BadGoal, DriveAction, amcl_pose_msg, map_msg, odometry_msg, path_msg,
    path_request_problem, trajectory_msg)
from robot_team.sim.node_common import SimNode, SimRecord, pose2d
from robot_team.sim.world import load_world

FEEDBACK_PERIOD_S = 0.5     # sim s between feedback messages of the driving actions
STATE_PERIOD_S = 0.1        # sim s between odom/amcl_pose messages
GET_STATE = '{node}/get_state'       # lifecycle_msgs/srv/GetState of a Nav2 lifecycle node


class MotionSimNode(SimNode, Node):
    """The robots' motion on the ED floor (``motion_sim``): Nav2's interfaces per robot and ``/clock``.

    Parameters
    ----------
    scenario, context, **node_kwargs
        As for :class:`~robot_team.sim.node_common.SimNode`.
    parameter_overrides
        As for ``rclpy.node.Node`` (see the module docstring for the ROS parameters). The node
        does not need ``use_sim_time``: it is the clock and stamps everything with its sim time.

    Raises
    ------
    ConfigError
        If the scenario, the floor or a parameter cannot be used (an ``INPUT_ERROR`` event is
        emitted first).

    Notes
    -----
    See the module docstring for the threading model: spin it in a ``MultiThreadedExecutor``
    with a thread per concurrent goal plus one.
    """

    def __init__(self, scenario: Scenario | None = None, *, context=None, parameter_overrides=None,
                 **node_kwargs):
        super().__init__(MOTION_SIM, scenario, context=context, parameter_overrides=parameter_overrides,
                         **node_kwargs)
        self._sim_t = 0.0   # the engine's time, readable without the lock (event stamps)
        self._record = SimRecord(self, lambda: self._sim_t)
        self._sim_clock: SimClock | None = None
        try:
            scenario = self._load_scenario()
            world = load_world(scenario.floor_path)
            self.clock_mode = str(self.declare_parameter('clock_mode', 'wall').value)
            try:
                check_clock_mode(self.clock_mode, 'parameter clock_mode')
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            follow = self.clock_mode == 'follow'
            self.real_time_factor = self._number('real_time_factor', 0.0 if follow else scenario.real_time_factor)
            self.tick_hz = self._number('tick_hz', 100.0)
            self.max_step_size = self._number('max_step_size', DEFAULT_MAX_STEP_SIZE_S)
            self.follower_timeout_s = self._number('follower_timeout_s', DEFAULT_FOLLOWER_TIMEOUT_S)
            self.clock_start_timeout_s = self._number('clock_start_timeout_s', 30.0)
            self.min_clock_subscribers = int(self._number('min_clock_subscribers', 0))
            self.min_clock_followers = int(self._number('min_clock_followers', 0))
            if self.min_clock_subscribers < 0 or self.min_clock_followers < 0:
                raise ConfigError(f'parameters min_clock_subscribers ({self.min_clock_subscribers}) and '
                                  f'min_clock_followers ({self.min_clock_followers}) must be 0 or more')
            if not ((self.real_time_factor >= 0 if follow else self.real_time_factor > 0) and self.tick_hz > 0
                    and self.max_step_size > 0 and self.follower_timeout_s > 0):
                raise ConfigError(f'parameters real_time_factor ({self.real_time_factor}; 0 for no cap with '
                                  f'clock_mode follow), tick_hz ({self.tick_hz}), max_step_size '
                                  f'({self.max_step_size}) and follower_timeout_s ({self.follower_timeout_s}) '
                                  'must be positive')
            paused = bool(self.declare_parameter('paused', False).value)
            self.declare_parameter('followers_gone', Parameter.Type.STRING_ARRAY)
            # the follow clock without a speed cap only (a cap paces every step, a jump is many)
            self.jump_ahead = (bool(self.declare_parameter('jump_ahead', True).value) and follow
                               and self.real_time_factor <= 0)
            self.robots = tuple(self.declare_parameter('robots', scenario.robots).value)
            self.engine = MotionEngine(world, robots=self.robots, closed_doors=scenario.blocked_doors,
                                       door_changes=scenario.door_changes)
        except ConfigError as exc:
            self._record.input_error(f'motion simulator cannot start: {exc}', target=self._scenario_name)
            raise
        self.add_post_set_parameters_callback(self._parameters_set_callback)

        self._reentrant_group = ReentrantCallbackGroup()
        latched = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._map_pub = self.create_publisher(OccupancyGridMsg, MAP, latched)
        self._odom_pubs = {r: self.create_publisher(Odometry, robot_name(r, ODOM), 10) for r in self.robots}
        # As AMCL publishes it (and BasicNavigator subscribes to it): reliable, transient local, depth 1.
        self._amcl_pubs = {r: self.create_publisher(PoseWithCovarianceStamped, robot_name(r, AMCL_POSE), latched)
                           for r in self.robots}
        # What each robot's goal will make it report (the hospital replays it: jump ahead across a drive)
        self._trajectory_pubs = {r: self.create_publisher(Path, robot_name(r, TRAJECTORY), latched)
                                 for r in self.robots}
        self._trajectories: dict[str, tuple | None] = {}   # robot -> (goal ID, state) of the last one published
        self._drives: dict[str, tuple] = {}   # robot -> (goal handle, engine goal ID) of the goal it drives

        self._goal_locks = {r: threading.Lock() for r in self.robots}
        self._goal_handles: dict[str, object] = {}
        self._specs = {spec.name: spec for spec in DRIVE_ACTIONS}
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
            for r in self.robots for spec in DRIVE_ACTIONS]
        # Planning does not move the robot, so it runs beside a driving goal (as Nav2's planner
        # serves bt_navigator while the controller drives).
        self._action_servers += [
            ActionServer(self, ComputePathToPose, robot_name(r, COMPUTE_PATH_TO_POSE),
                         execute_callback=partial(self.compute_path_callback, r),
                         goal_callback=self.goal_callback, cancel_callback=self.cancel_callback,
                         callback_group=self._reentrant_group)
            for r in self.robots]
        # BasicNavigator polls these with no timeout of its own: a response the middleware dropped is sent again
        deliver = reported_deliveries(self.get_logger(), self._record.emitter.emit)
        self._lifecycle_srvs = [
            deliver(self.create_service(GetState, robot_name(r, GET_STATE.format(node=node)),
                                        self.get_state_callback, callback_group=self._reentrant_group))
            for r in self.robots for node in NAV2_LIFECYCLE_NODES]

        self._map_pub.publish(map_msg(self.engine.grid))
        self._next_state_t = 0.0
        # The LLM clock: in lockstep, sim time holds while a brain waits on its LLM (robot_team.llm.lockstep).
        llm_clock = self.declare_parameter('llm_clock', 'realtime').value
        self.llm_clock = lockstep.llm_clock_under(self.clock_mode, llm_clock)   # follow: always lockstep
        # The node is the clock source (robot_team.sim.clock_source): it steps the engine, publishes /clock.
        self._sim_clock = SimClock(
            self, ClockSettings(self.clock_mode, self.real_time_factor, self.tick_hz, self.max_step_size,
                                self.follower_timeout_s, self.clock_start_timeout_s, self.min_clock_subscribers,
                                self.jump_ahead, self.llm_clock, end_s=scenario.time_limit_s,
                                min_clock_followers=self.min_clock_followers),
            self.engine, self._lock, self._record, self._step_locked, self._goals_pending, paused,
            self._reentrant_group)
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)
        self._record.emitter.emit(
            EventKind.NODE_STARTED, f"motion simulator ready: scenario '{scenario.name}', world '{world.name}', "
            f"robots {', '.join(self.robots)}, {self.clock_description()}" + (', paused' if paused else ''),
            scenario=scenario.name, world=str(world.path), robots=list(self.robots),
            real_time_factor=self.real_time_factor, tick_hz=self.tick_hz, paused=paused,
            clock_mode=self.clock_mode, max_step_size=self.max_step_size, jump_ahead=self.jump_ahead,
            min_clock_subscribers=self.min_clock_subscribers, min_clock_followers=self.min_clock_followers,
            llm_clock=self.llm_clock,
            blocked_doors=list(scenario.blocked_doors),
            door_changes=[change.model_dump() for change in scenario.door_schedule])

    def _parameters_set_callback(self, parameters) -> None:
        """Hold or resume sim time when ``paused`` is set; stop waiting for ``followers_gone``."""
        for p in parameters:
            if p.name == 'paused' and bool(p.value) != self._sim_clock.paused:
                self._sim_clock.set_paused(bool(p.value))
            elif p.name == 'followers_gone' and p.value:
                self._sim_clock.followers_gone(list(p.value))

    # --- clock and state ----------------------------------------------------------------------

    @property
    def sim_time(self) -> float:
        """Current sim time, s."""
        with self._lock:
            return self.engine.t

    @property
    def clock_followers(self) -> list[str]:
        """The nodes the follow clock waits for (fully qualified names; [] on the wall clock)."""
        return self._sim_clock.followers

    @property
    def _timer(self):
        """The clock's tick timer (on wall time)."""
        return self._sim_clock.timer

    def clock_description(self) -> str:
        """Return the clock's mode in words, e.g. ``'follow clock, steps of 0.25 s, no speed cap'``."""
        return self._sim_clock.settings.describe()

    def _goals_pending(self) -> bool:
        """Return whether a goal is accepted but not driving, or ended but not answered (lock held).

        The follow clock does not jump ahead then. A goal the engine drives does not hold it: the
        engine says when it reaches its next pose (``MotionEngine.next_event_s``), and the
        robot's ``trajectory`` what it reports on the way.
        """
        for robot, handle in self._goal_handles.items():
            if not handle.is_active:
                continue
            drive = self._drives.get(robot)
            if drive is None or drive[0] is not handle or self.engine.goal(drive[1]).state != ACTIVE:
                return True
        return False

    def _publish_trajectories(self) -> None:
        """Publish each robot's ``trajectory`` whose goal began, ended or changed since its last one (lock held)."""
        for robot in self.robots:
            status = self.engine.goal_status(robot)
            key = (status.goal_id, status.state) if status is not None and status.state == ACTIVE else None
            if robot in self._trajectories and self._trajectories[robot] == key:
                continue
            self._trajectories[robot] = key
            reports = self.engine.forecast(robot) if key is not None else []
            self._trajectory_pubs[robot].publish(trajectory_msg(reports, self.engine.t))

    def _step_locked(self, step: float) -> tuple[float, list[SimEvent]]:
        """Step the engine by ``step`` sim s and publish poses and odometry (lock held); return its time and events."""
        events = self.engine.step(step)
        t = self._sim_t = self.engine.t
        # the robots' poses first: a node woken by /clock finds them there (after a jump, the latest only)
        self._publish_localization(latest_only=step > self.max_step_size + 1e-9)
        self._publish_trajectories()
        if t >= self._next_state_t:
            self._next_state_t = t + STATE_PERIOD_S
            self._publish_odom(t)
        return t, events

    def _publish_odom(self, t: float) -> None:
        """Publish every robot's odometry (as a base controller does, moving or not)."""
        for robot in self.robots:
            speed, yaw_rate = self.engine.robot_velocity(robot)
            self._odom_pubs[robot].publish(odometry_msg(robot, self.engine.robot_pose(robot), speed, yaw_rate, t))

    def _publish_localization(self, latest_only: bool = False) -> None:
        """Publish the engine's localization reports on their robot's amcl_pose, stamped when each was made.

        ``latest_only``: each robot's latest (after a jump ahead: its ``trajectory`` told the rest).
        """
        reports = self.engine.drain_localization()
        if latest_only:
            reports = list({robot: (robot, t, pose) for robot, t, pose in reports}.values())
        for robot, t, pose in reports:
            self._amcl_pubs[robot].publish(amcl_pose_msg(pose, t))

    def _input_error(self, summary: str, target: str = '', **data) -> None:
        self._record.input_error(summary, target, **data)

    # --- Nav2 lifecycle and navigation actions ------------------------------------------------

    def get_state_callback(self, request, response):
        """Answer a lifecycle GetState request: the stand-in Nav2 nodes are always active."""
        response.current_state = State(id=State.PRIMARY_STATE_ACTIVE, label='active')
        return response

    def goal_callback(self, goal_request) -> GoalResponse:
        """Accept or reject a client request to begin an action."""
        return GoalResponse.ACCEPT

    def handle_accepted_callback(self, robot: RobotId, goal_handle) -> None:
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

    def _finish(self, robot: RobotId, goal_handle, spec: DriveAction, state: str, error_code: int,
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

    def execute_callback(self, robot: RobotId, goal_handle):
        """Drive the robot to the goal pose, publishing feedback every 0.5 s sim."""
        with self._in_flight():
            return self._drive(robot, goal_handle, self._specs[NAVIGATE_TO_POSE])

    def navigate_through_poses_callback(self, robot: RobotId, goal_handle):
        """Drive the robot through the goal poses in order, publishing feedback every 0.5 s sim."""
        with self._in_flight():
            return self._drive(robot, goal_handle, self._specs[NAVIGATE_THROUGH_POSES])

    def follow_path_callback(self, robot: RobotId, goal_handle):
        """Drive the robot along the given path, publishing feedback every 0.5 s sim."""
        with self._in_flight():
            return self._drive(robot, goal_handle, self._specs[FOLLOW_PATH])

    def _drive(self, robot: RobotId, goal_handle, spec: DriveAction):
        request = goal_handle.request
        try:
            start = spec.parse(request)
        except BadGoal as exc:
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
                self._record.sim_events(self.engine.drain_events())
                if exc.code in BAD_INPUT_CODES:
                    self._input_error(f'{robot}: {spec.name} goal rejected: {exc.message}', target=robot,
                                      action=spec.name, error_code=exc.code)
                return self._finish(robot, goal_handle, spec, ABORTED, exc.code, exc.message, request=request,
                                    failed_index=getattr(exc, 'pose_index', None))
            except SimInputError as exc:
                self._input_error(f'{robot}: {spec.name} goal rejected: {exc}', target=robot, action=spec.name)
                return self._finish(robot, goal_handle, spec, ABORTED, spec.unknown, str(exc), request=request)
            self._record.sim_events(self.engine.drain_events())
            self._drives[robot] = (goal_handle, goal_id)
            self._publish_trajectories()
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
                        self._record.sim_events(self.engine.drain_events())
                        self._publish_trajectories()
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
            self._sim_clock.wait_tick()

    def compute_path_callback(self, robot: RobotId, goal_handle):
        """Plan a path on the grid from the start (or the robot's pose) to the goal; never moves the robot."""
        with self._in_flight():
            return self._compute_path(robot, goal_handle)

    def _compute_path(self, robot: RobotId, goal_handle):
        request = goal_handle.request
        result = ComputePathToPose.Result()
        problem = path_request_problem(request)
        if problem is None:
            goal = pose2d(request.goal.pose)
            start = pose2d(request.start.pose) if request.use_start else None
            with self._lock:
                began = time.perf_counter()
                try:
                    path = self.engine.plan(robot, goal, start)
                except PlanningError as exc:
                    problem = (exc.code, exc.message)
                    if exc.code in BAD_INPUT_CODES:
                        self._input_error(f'{robot}: compute_path_to_pose rejected: {exc.message}', target=robot,
                                          action=COMPUTE_PATH_TO_POSE, error_code=exc.code,
                                          goal=[goal.x, goal.y, goal.yaw],
                                          start=[start.x, start.y, start.yaw] if start else None)
                else:
                    result.path = path_msg(path, goal.yaw, self.engine.t, self.engine.grid.resolution)
                    result.planning_time = s_to_duration(time.perf_counter() - began)
                self._record.sim_events(self.engine.drain_events())
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

    def _halt(self) -> None:
        """Stop the clock (it neither ticks nor steps any more)."""
        if self._sim_clock is not None:
            self._sim_clock.stop()

    def _release_waiters(self) -> None:
        """Wake every goal waiting for a tick (it sees ``_stopping`` and returns)."""
        if self._sim_clock is not None:
            self._sim_clock.wake()


def main(args=None) -> int:
    """Run the motion simulator node until interrupted."""
    # Goals block a thread each while they wait for sim time to pass: give the executor one per
    # robot goal and concurrent plan, plus the tick and the lifecycle services.
    return spin_node(MOTION_SIM, MotionSimNode, lambda: TeamExecutor(num_threads=16), args)


if __name__ == '__main__':
    sys.exit(main())
