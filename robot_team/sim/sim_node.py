"""The embedded ED floor simulator as a ROS 2 node (``ed_sim``): the facade over ``SimEngine``.

It is the clock source: a wall-clock timer steps the engine and publishes ``/clock``, advancing
sim time by ``real_time_factor`` x the wall time elapsed. Other nodes run with
``use_sim_time:=true``.

Interfaces (names from :mod:`robot_team.names`)
-----------------------------------------------
* ``/clock`` (rosgraph_msgs/Clock), every tick.
* ``/map`` (nav_msgs/OccupancyGrid, transient local), once: walls and closed doors.
* Per robot with a base (every :class:`~robot_team.names.Robot` but the manager):
  ``/<robot>/navigate_to_pose`` (nav2_msgs/action/NavigateToPose), ``/<robot>/odom``
  (nav_msgs/Odometry, frame ``odom``, child ``<robot>/base_link``; odom == map in the sim) and
  ``/<robot>/pose`` (geometry_msgs/PoseStamped, frame ``map``), every 0.1 s sim (at most once
  per tick).
* ``/ed/rtls/locate_staff`` (LocateStaff), ``/ed/paging/page_staff`` (PageStaff),
  ``/ed/display/show`` (ShowDisplay).
* ``/ed/badge_scans`` (BadgeScan, reliable), ``/ed/patient_arrivals`` (PatientArrival,
  reliable + transient local), ``/ed/display/content`` (std_msgs/String, transient local: a JSON
  object ``{"room", "title", "lines", "stamp_s"}`` per screen update).
* ``/team/events``: an ``EventKind.SIM`` event for every simulator event (ground truth), and
  ``EventKind.INPUT_ERROR`` for bad requests.

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
from functools import partial

import rclpy
import rclpy.time
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import PoseStamped
from nav2_msgs.action import NavigateToPose
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import String

from robot_team.config import ConfigError, Scenario, load_scenario, load_staff_seed
from robot_team.rosutil import spin_node
from robot_team.events import EventEmitter, EventKind
from robot_team.msg import BadgeScan, PatientArrival, StaffLocation
from robot_team.names import (BADGE_SCANS, CLOCK, MAP, DISPLAY_CONTENT, LOCATE_STAFF, MAP_FRAME, NAVIGATE_TO_POSE,
                              ODOM, PAGE_STAFF, PATIENT_ARRIVALS, POSE, SHOW_DISPLAY, SIMULATOR, Robot,
                              robot_name)
from robot_team.sim.engine import (ABORTED, ACTIVE, CANCELED, ROBOTS, SUCCEEDED, SimEngine, SimEvent,
                                   SimInputError)
from robot_team.sim.grid import PlanningError
from robot_team.sim.world import Pose2D, load_world
from robot_team.srv import LocateStaff, PageStaff, ShowDisplay

FEEDBACK_PERIOD_S = 0.5     # sim s between NavigateToPose feedback messages
STATE_PERIOD_S = 0.1        # sim s between odom/pose messages
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

        self._goal_locks = {r: threading.Lock() for r in BASE_ROBOTS}
        self._goal_handles: dict[str, object] = {}
        self._action_servers = [
            ActionServer(self, NavigateToPose, robot_name(r, NAVIGATE_TO_POSE),
                         execute_callback=partial(self.execute_callback, r),
                         goal_callback=self.goal_callback,
                         handle_accepted_callback=partial(self.handle_accepted_callback, r),
                         cancel_callback=self.cancel_callback,
                         callback_group=self._reentrant_group)
            for r in BASE_ROBOTS]
        self._locate_srv = self.create_service(LocateStaff, LOCATE_STAFF, self.locate_staff_callback,
                                               callback_group=self._reentrant_group)
        self._page_srv = self.create_service(PageStaff, PAGE_STAFF, self.page_staff_callback,
                                             callback_group=self._reentrant_group)
        self._display_srv = self.create_service(ShowDisplay, SHOW_DISPLAY, self.show_display_callback,
                                                callback_group=self._reentrant_group)

        self._publish_map()
        self._next_state_t = 0.0
        self._last_wall: float | None = None
        # The simulator is the clock source: its timer must run on wall time, never on sim time.
        self._timer = self.create_timer(1.0 / self.tick_hz, self.tick_callback,
                                        callback_group=self._tick_group,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._events.emit(EventKind.SIM, f"simulator started: scenario '{scenario.name}', world "
                          f"'{world.name}', real-time factor {self.real_time_factor:g}",
                          what='started', scenario=scenario.name, world=str(world.path),
                          real_time_factor=self.real_time_factor, tick_hz=self.tick_hz,
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
        last = self._last_wall if self._last_wall is not None else now - 1.0 / self.tick_hz
        wall_dt, self._last_wall = min(now - last, MAX_TICK_WALL_S), now
        with self._lock:
            if self._stopping:
                return
            events = self.engine.step(wall_dt * self.real_time_factor)
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
            odom.header.frame_id = 'odom'
            odom.child_frame_id = f'{robot}/base_link'
            odom.pose.pose = _pose_msg(pose, t).pose
            odom.twist.twist.linear.x = float(speed)
            odom.twist.twist.angular.z = float(yaw_rate)
            self._odom_pubs[robot].publish(odom)
            self._pose_pubs[robot].publish(_pose_msg(pose, t))

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

    # --- navigate_to_pose ------------------------------------------------------------------------

    def goal_callback(self, goal_request) -> GoalResponse:
        """Accept or reject a client request to begin an action."""
        return GoalResponse.ACCEPT

    def handle_accepted_callback(self, robot: str, goal_handle) -> None:
        """Abort the robot's previous goal, if any, then start executing the new one."""
        with self._goal_locks[robot]:
            previous = self._goal_handles.get(robot)
            if previous is not None and previous.is_active:
                previous.abort()
            self._goal_handles[robot] = goal_handle
        goal_handle.execute()

    def cancel_callback(self, goal_handle) -> CancelResponse:
        """Accept or reject a client request to cancel an action."""
        return CancelResponse.ACCEPT

    def _finish(self, robot: str, goal_handle, state: str, error_code: int, message: str):
        """Move the goal to a terminal state (if still ours) and return its result."""
        result = NavigateToPose.Result(error_code=int(error_code), error_msg=message)
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
            return self._execute(robot, goal_handle)

    def _execute(self, robot: str, goal_handle):
        request = goal_handle.request.pose
        frame = request.header.frame_id.strip().lstrip('/')
        if frame not in ('', MAP_FRAME, 'odom'):
            message = f"goal frame '{request.header.frame_id}' is unknown: expected '{MAP_FRAME}' (or 'odom')"
            with self._lock:
                self._input_error(f'{robot}: navigate_to_pose goal rejected: {message}', target=robot,
                                  frame_id=request.header.frame_id)
            return self._finish(robot, goal_handle, ABORTED, NavigateToPose.Result.TF_ERROR, message)
        target = Pose2D(request.pose.position.x, request.pose.position.y, _yaw_of(request.pose.orientation))
        with self._lock:
            if not goal_handle.is_active:
                return NavigateToPose.Result(error_msg='preempted before it started')
            try:
                goal_id = self.engine.start_goal(robot, target)
            except PlanningError as exc:
                self._process(self.engine.drain_events())
                return self._finish(robot, goal_handle, ABORTED, exc.code, exc.message)
            self._process(self.engine.drain_events())
        next_feedback = -math.inf
        while True:
            with self._lock:
                status = self.engine.goal(goal_id)
                t = self.engine.t
                if goal_handle.is_cancel_requested and status.state == ACTIVE:
                    current = self.engine.goal_status(robot)
                    if current is not None and current.goal_id == goal_id:
                        self.engine.cancel_goal(robot)
                        self._process(self.engine.drain_events())
                    status = self.engine.goal(goal_id)
            if not goal_handle.is_active:
                return NavigateToPose.Result(error_msg=status.message or 'preempted by a newer goal')
            if status.state != ACTIVE:
                return self._finish(robot, goal_handle, status.state, status.error_code, status.message)
            if self._stopping or not self.context.ok():
                return self._finish(robot, goal_handle, ABORTED, NavigateToPose.Result.UNKNOWN,
                                    'simulator shutting down')
            if t >= next_feedback:
                next_feedback = t + FEEDBACK_PERIOD_S
                feedback = NavigateToPose.Feedback()
                feedback.current_pose = _pose_msg(status.pose, t)
                feedback.navigation_time = _duration(status.navigation_time_s)
                feedback.estimated_time_remaining = _duration(status.eta_s)
                feedback.number_of_recoveries = 0
                feedback.distance_remaining = float(status.distance_remaining)
                with self._lock:
                    if self._stopping:
                        continue
                    goal_handle.publish_feedback(feedback)
            self._wait_tick()

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
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:     # a tick in flight finishes first; later ones return at once
            waiters = list(self._page_waiters.values())
        for event, _ in waiters:
            event.set()
        with self._tick_cv:
            self._tick_cv.notify_all()
        with self._idle_cv:
            self._idle_cv.wait_for(lambda: self._in_flight == 0, timeout=2.0)
        super().destroy_node()


def main(args=None) -> int:
    """Run the simulator node until interrupted."""
    # Goals and pages block a thread each while they wait for sim time to pass: give the
    # executor one per robot goal and concurrent page, plus the tick and services.
    return spin_node('ed_sim', EdSimNode, lambda: MultiThreadedExecutor(num_threads=16), args)


if __name__ == '__main__':
    sys.exit(main())
