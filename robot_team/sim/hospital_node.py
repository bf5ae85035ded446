"""The hospital's systems as a ROS 2 node (``hospital_systems``): HCWs, RTLS, paging, readers, displays.

The embedded stand-in for the hospital's staff and systems, and the source of patient arrivals:
a thin facade over :class:`~robot_team.sim.hospital.engine.HospitalEngine`. It sees the robots the way
a hospital's systems on a real floor would: only through the poses every Nav2 robot publishes
(``amcl_pose``, or ``odom``, or TF where ``tf2_ros`` is installed), never through the motion
simulator's internals, so it serves the team unchanged whether the robots move in the embedded
motion simulator (``motion_sim``), in Gazebo with Nav2, or on a real floor. It runs on ROS time:
sim time from ``/clock`` under ``use_sim_time:=true`` (as in every simulated run), else wall time.

Interfaces (names from :mod:`robot_team.contracts.names`, relative to the team namespace ``T``)
-----------------------------------------------------------------------------------
* ``ed/rtls/locate_staff`` (LocateStaff): where HCWs are and whether they are free.
* ``ed/paging/page_staff`` (PageStaff action): page an HCW and wait, in ROS time, up to
  ``timeout_s`` for the acknowledgement; an HCW who acknowledges a page naming a robot follows
  that robot. While pages are awaited and nothing else is due, the node tells the follow clock
  when the first of them is answered or runs out (the HCW's answer time, or the page's
  deadline): sim time may jump across a page awaited (the goal's acceptance tells the robot that
  the paging system has it, :class:`~robot_team.ros.clock.ScheduledWaits`).
* ``ed/display/show`` (ShowDisplay) and ``ed/display/content`` (DisplayContent, reliable +
  transient local, 50 deep: each screen update, with the entries and lines shown).
* ``ed/rtls/locations`` (StaffLocation, reliable, volatile): the RTLS stream, every
  :data:`LOCATIONS_PERIOD_S` of ROS time the HCWs whose location, availability or state changed
  (with ``state`` and ``robot``: whom they wait for or follow), every HCW each
  :data:`LOCATIONS_REFRESH_S` (late joiners).
* ``ed/badge_scans`` (BadgeScan, reliable): an HCW passing a door's badge reader.
* ``ed/patient_arrivals`` (PatientArrival, reliable + transient local): the scenario's patient.
* Subscribed, per robot: ``<robot>/amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped, as
  AMCL publishes it: reliable, transient local) or ``<robot>/odom`` (nav_msgs/Odometry, only where
  ``odom`` coincides with ``map``, as in simulators); or TF ``map`` -> ``<robot>/<base_frame>``.
  And ``<robot>/odom`` always, for its twist: whether the robot moves or stands. And, with
  ``amcl_pose``, ``<robot>/trajectory`` (nav_msgs/Path, transient local) where the robots' simulator
  publishes one (the embedded ``motion_sim`` does; Gazebo and real robots do not): the reports
  the robot will make on ``amcl_pose`` while its goal runs, each stamped with its time. The node
  then observes those at their own times, in place of the same poses on ``amcl_pose``
  (:meth:`~robot_team.sim.hospital.engine.HospitalEngine.advance_along`), however far the clock
  moves at once, and tells the follow clock when the HCWs' next event comes
  (:meth:`~robot_team.sim.hospital.engine.HospitalEngine.forecast_event_s`): sim time may jump
  across an escort. A pose on ``amcl_pose`` that the trajectory does not hold at its stamp (a goal
  changed before its new trajectory came) drops the trajectory.
* ``team/events``: ``node_started``; an ``EventKind.SIM`` event for every hospital event (patient
  arrival, pages and answers, HCWs following, entering, arriving, badge scans, displays) and
  ``EventKind.INPUT_ERROR`` for bad requests (unknown HCW, robot or room).

Parameters
----------
``scenario`` (str, default ``onboarding``)
    A scenario name in ``config/scenarios`` or a YAML path: floor, staff directory seed, patient,
    staff and badge overrides, closed doors.
``robots`` (string array, default the scenario's robots, :attr:`robot_team.contracts.config.Scenario.robots`)
    The robots HCWs may be paged to follow; their poses are watched.
``pose_source`` (str, default ``amcl_pose``)
    ``amcl_pose``, ``odom`` or ``tf`` (needs ``tf2_ros``).
``base_frame`` (str, default ``base_link``)
    With ``pose_source:=tf``, robot ``R``'s frame is ``R/<base_frame>``.
``update_period_s`` (float, default 0.1)
    Least ROS time between two updates of HCWs, pages and readers (sim s under ``use_sim_time``,
    where the node updates as ``/clock`` advances; else a wall-clock timer with this period).
``arrival_readers``, ``badge_scan_readers``, ``display_readers`` (int, default 0)
    How many nodes read ``ed/patient_arrivals``, ``ed/badge_scans`` and ``ed/display/content``
    (the launchers give them, :func:`robot_team.nodes_plan.hospital_readers`: the manager and the
    supervisor; every info-collection robot; every display robot). Under sim time each such message
    holds sim time until that many readers matched and every matched reader acknowledged it
    (:mod:`robot_team.contracts.delivery`); 0 waits for the readers already matched only.
``use_sim_time`` (bool)
    True in simulated runs; time 0 is the simulation's start. Without it, time 0 is the node's start.

Threading model
---------------
The node expects a ``MultiThreadedExecutor``. Under sim time the update runs in the node's
``/clock`` subscription (a clock jump callback), else in a timer; the pose subscriptions have a
mutually exclusive callback group; the services run in a reentrant group, and a page blocks its
executor thread while it waits (on an event the update sets), so the executor needs a thread per
concurrent page plus one. One lock serializes every call into the engine; publishing happens
under it, which keeps the event record in engine order.
"""

from __future__ import annotations

import math
import sys
import threading
from pathlib import Path

from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from nav_msgs.msg import Path as PathMsg
from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts import names
from robot_team.contracts.clock_sync import BUSY
from robot_team.contracts.config import ConfigError, Scenario
from robot_team.contracts.delivery import check_expected_readers
from robot_team.contracts.geometry import TRACK_MATCH, track_holds
from robot_team.directory import load_staff
from robot_team.contracts.events import EventKind
from robot_team.contracts.files import write_atomically
from robot_team.msg import BadgeScan, DisplayContent, DisplayEntry, NodeLiveness, PatientArrival, StaffLocation
from robot_team.contracts.names import (
    AMCL_POSE,
    BADGE_SCANS,
    BASE_FRAME,
    DISPLAY_CONTENT,
    HOSPITAL_SYSTEMS,
    LOCATE_STAFF,
    MAP_FRAME,
    ODOM,
    PAGE_STAFF,
    PATIENT_ARRIVALS,
    SHOW_DISPLAY,
    STAFF_LOCATIONS,
    TRAJECTORY,
    RobotId,
    robot_name,
)
from robot_team.ros.clock import follow_clock
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.messages import amcl_pose_qos
from robot_team.ros.liveness import announce_alive
from robot_team.ros.services import reported_deliveries
from robot_team.ros.stamps import now_s, s_to_stamp, stamp_to_s
from robot_team.ros.util import spin_node
from robot_team.sim.common import SimEvent, SimInputError
from robot_team.sim.delivery import DeliveryHolds
from robot_team.sim.hospital import HospitalEngine
from robot_team.sim.node_common import SimNode, SimRecord, pose2d, pose_msg
from robot_team.sim.world import load_world
from robot_team.action import PageStaff
from robot_team.srv import LocateStaff, ShowDisplay
from robot_team.tools.localization import RobotPose

POSE_SOURCES = ('amcl_pose', 'odom', 'tf')
MAX_PAGE_WAIT_S = 3600.0    # s: cap on PageStaff.timeout_s
LOCATIONS_PERIOD_S = 0.2    # ROS s between two RTLS updates on ed/rtls/locations (5 a sim second)
LOCATIONS_REFRESH_S = 2.0   # ROS s between two updates carrying every HCW, changed or not
LOCATIONS_BURST = 500       # locations a jump ahead may stream at once, beyond a step's (publisher depth)


class HospitalSystemsNode(SimNode, Node):
    """The ED's staff and systems (``hospital_systems``): RTLS, paging, badge readers, displays, arrivals.

    Parameters
    ----------
    scenario, context, **node_kwargs
        As for :class:`~robot_team.sim.node_common.SimNode`.
    parameter_overrides
        As for ``rclpy.node.Node`` (see the module docstring for the ROS parameters; simulated
        runs set ``use_sim_time`` true).

    Raises
    ------
    ConfigError
        If the scenario, the floor, the staff seed or a parameter cannot be used (an
        ``INPUT_ERROR`` event is emitted first).
    """

    def __init__(self, scenario: Scenario | None = None, *, context=None, parameter_overrides=None,
                 **node_kwargs):
        super().__init__(HOSPITAL_SYSTEMS, scenario, context=context, parameter_overrides=parameter_overrides,
                         **node_kwargs)
        self._page_waiters: dict[int, tuple[threading.Event, float]] = {}   # page ID -> (done, deadline)
        self._pages_accepted = 0   # pages from their goal's acceptance to the end of its callback (_next_event)
        self._trajectories: dict[str, list] = {}   # robot -> its forecast reports (engine time s, robot, pose)
        self._forecast: float | None = None   # engine time of the HCWs' next event, as forecast (_next_event)
        self._timer = self._jump = None
        self._update_group = MutuallyExclusiveCallbackGroup()
        self._pose_group = MutuallyExclusiveCallbackGroup()     # the robots' pose subscriptions, in order
        # Time 0 of the engine: the simulation's start under use_sim_time, else the node's start.
        sim_time = bool(self.get_parameter('use_sim_time').value)
        self._origin = 0.0 if sim_time else now_s(self)
        self._engine_t = 0.0   # the engine's time, readable without the lock (event stamps)
        self._record = SimRecord(self, lambda: self._origin + self._engine_t)
        try:
            scenario = self._load_scenario()
            self.pose_source = str(self.declare_parameter('pose_source', 'amcl_pose').value)
            if self.pose_source not in POSE_SOURCES:
                raise ConfigError(f"parameter pose_source: {self.pose_source!r} is not one of "
                                  f"{', '.join(POSE_SOURCES)}")
            base_frame = str(self.declare_parameter('base_frame', BASE_FRAME).value)
            self.update_period_s = self._number('update_period_s', 0.1)
            if not self.update_period_s > 0:
                raise ConfigError(f'parameter update_period_s must be positive, got {self.update_period_s}')
            self.arrival_readers = self._readers('arrival_readers')
            self.badge_scan_readers = self._readers('badge_scan_readers')
            self.display_readers = self._readers('display_readers')
            robots = tuple(self.declare_parameter('robots', scenario.robots).value)
            self.engine = HospitalEngine(load_world(scenario.floor_path), load_staff(scenario.staff_path),
                                         scenario, robots=robots)
            self._tf_poses = self._watch_poses(robots, base_frame)
        except ConfigError as exc:
            self._record.input_error(f'hospital systems cannot start: {exc}', target=self._scenario_name)
            raise
        self._state_file = str(self.declare_parameter('state_file', '').value)

        # every patient of the run stays announced for late joiners (a restarted manager or supervisor)
        latched = QoSProfile(depth=max(10, len(scenario.cases)), reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._arrival_pub = self.create_publisher(PatientArrival, PATIENT_ARRIVALS, latched)
        # sim time stands still until an arrival, a scan or a screen reached its readers (contracts.delivery)
        self._deliveries = DeliveryHolds(self, self._record.emitter.emit)
        # The badge system keeps its last 100 scans for late joiners (a restarted info-collection robot).
        self._scan_pub = self.create_publisher(BadgeScan, BADGE_SCANS, QoSProfile(
            depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._display_pub = self.create_publisher(DisplayContent, DISPLAY_CONTENT, QoSProfile(
            depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # deep enough for the changes of a jump ahead (one a sim second each, for up to a minute at once)
        self._locations_pub = self.create_publisher(StaffLocation, STAFF_LOCATIONS, QoSProfile(
            depth=max(10, 2 * len(self.engine.staff_ids)) + LOCATIONS_BURST, reliability=ReliabilityPolicy.RELIABLE))
        self._located: dict[str, tuple] = {}      # HCW ID -> what was last streamed
        self._located_at = self._refreshed_at = -math.inf
        self._services_group = ReentrantCallbackGroup()
        deliver = reported_deliveries(self.get_logger(), self._record.emitter.emit)
        self._locate_srv = deliver(self.create_service(LocateStaff, LOCATE_STAFF, self.locate_staff_callback,
                                                       callback_group=self._services_group))
        self._page_server = ActionServer(self, PageStaff, PAGE_STAFF, self.page_staff_callback,
                                         goal_callback=self.page_goal_callback, callback_group=self._services_group)
        self._display_srv = deliver(self.create_service(ShowDisplay, SHOW_DISPLAY, self.show_display_callback,
                                                        callback_group=self._services_group))
        # Robots the team's supervisor noticed lost: the HCWs they escorted wait (volatile: only news).
        self.create_subscription(NodeLiveness, names.LIVENESS, self.liveness_callback,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
                                 callback_group=self._services_group)
        self._last_update = -math.inf
        self._produced = False   # the engine produced events since the last clock acknowledgement
        if sim_time:
            # Update as each /clock message sets the time (in the node's clock subscription, no
            # extra callback per tick: a timer would wake the executor once more every tick).
            self._jump = self.get_clock().create_jump_callback(
                JumpThreshold(min_forward=Duration(nanoseconds=1), min_backward=None, on_clock_change=False),
                post_callback=lambda _jump: self.update_callback())
        else:
            self._timer = self.create_timer(self.update_period_s, self.update_callback,
                                            callback_group=self._update_group)
        self.restored = self._restore()   # publishers up: a patient who had arrived is announced again
        self._clock_follower = follow_clock(self, self._next_event)   # the follow clock waits for this node
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)
        self._record.emitter.emit(
            EventKind.NODE_STARTED, f"hospital systems ready: scenario '{scenario.name}', "
            f"{len(self.engine.staff_ids)} HCWs, robots seen through {self.pose_source}",
            scenario=scenario.name, staff=len(self.engine.staff_ids), robots=list(robots),
            pose_source=self.pose_source, use_sim_time=sim_time, update_period_s=self.update_period_s,
            state_file=self._state_file, restored=self.restored)

    def _readers(self, name: str) -> int:
        """Declare the reader-count parameter ``name`` (default 0) and return its value.

        Raises
        ------
        ConfigError
            If it is not a whole number, 0 or more.
        """
        readers = self._number(name, 0)
        try:
            return check_expected_readers(int(readers) if readers.is_integer() else readers)
        except ValueError as exc:
            raise ConfigError(f'parameter {name}: {exc}') from None

    def _restore(self) -> bool:
        """Take up the floor a previous incarnation saved in ``state_file`` (a restart); return whether it did.

        An unreadable file is recorded as an input error and the floor starts afresh. A patient who
        had arrived is announced again (``ed/patient_arrivals`` is transient local: late joiners).
        """
        path = Path(self._state_file) if self._state_file else None
        if path is None or not path.is_file():
            return False
        try:
            self.engine.restore(path.read_bytes())
        except (OSError, ValueError) as exc:
            self._record.input_error(f'hospital systems could not take up {path}: {exc}; the floor starts afresh',
                                     target=str(path))
            return False
        self._engine_t = self.engine.t
        arrived = set(self.engine.arrived)
        for p in self.scenario.cases:   # announced again for late joiners, not recorded again (it happened once)
            if p.patient_id in arrived:
                self._arrival_pub.publish(self._arrival_msg(
                    {'patient_id': p.patient_id, 'room': p.room, 'presentation': p.presentation,
                     'esi_level': p.esi_level, 'assigned_hcw_id': p.assigned_hcw_id,
                     'required_specialty': p.required_specialty}, p.arrival_time_s))
        return True

    def _save(self) -> None:
        """Write the floor's state to ``state_file`` (lock held; atomic: a crash leaves the previous one)."""
        if not self._state_file:
            return
        write_atomically(self._state_file, self.engine.checkpoint())

    def _watch_poses(self, robots, base_frame: str) -> dict:
        """Subscribe to each robot's pose (or prepare TF lookups); return the TF sources by robot."""
        sources = {}
        if self.pose_source == 'tf':
            try:
                sources = {r: RobotPose(self, source='tf', base_frame=f'{r}/{base_frame}') for r in robots}
            except ValueError as exc:
                raise ConfigError(f'parameter pose_source: {exc}') from None
        if self.pose_source == 'amcl_pose':
            # As BasicNavigator subscribes: the latest pose only. A node that falls behind (a sim clock
            # at 40x brings a pose every 12 ms) skips poses rather than lag; the engine bridges the gaps.
            for r in robots:
                self.create_subscription(PoseWithCovarianceStamped, robot_name(r, AMCL_POSE),
                                         lambda msg, r=r: self._observe_amcl(r, msg.header, msg.pose.pose),
                                         amcl_pose_qos(), callback_group=self._pose_group)
                self.create_subscription(PathMsg, robot_name(r, TRAJECTORY),
                                         lambda msg, r=r: self._take_trajectory(r, msg), amcl_pose_qos(),
                                         callback_group=self._pose_group)
        poses = self.pose_source == 'odom'
        for r in robots:     # the twist says whether the robot moves (the pose too with pose_source:=odom)
            self.create_subscription(Odometry, robot_name(r, ODOM),
                                     lambda msg, r=r: self._observe_odometry(r, msg, poses), 10,
                                     callback_group=self._pose_group)
        return sources

    def _observe_odometry(self, robot: RobotId, msg: Odometry, pose: bool) -> None:
        """Hand one odometry message's twist (and, if ``pose``, its pose) to the engine, at its stamp."""
        twist = msg.twist.twist
        with self._lock:
            if not self._stopping:
                self.engine.observe_motion(robot, math.hypot(twist.linear.x, twist.linear.y), twist.angular.z,
                                           self._engine_time(msg.header))
        if pose:
            self._observe(robot, msg.header, msg.pose.pose)

    def _take_trajectory(self, robot: RobotId, msg: PathMsg) -> None:
        """Keep ``robot``'s forecast reports (engine time, map pose) from its ``trajectory``, observed in time."""
        reports = [(t, robot, pose2d(p.pose)) for p in msg.poses if (t := self._engine_time(p.header)) is not None]
        with self._lock:
            self._trajectories[robot] = reports
            self._forecast = None

    def _observe_amcl(self, robot: RobotId, header, pose) -> None:
        """Hand an ``amcl_pose`` to the engine, unless ``robot``'s trajectory holds it (it is observed from there)."""
        reports = self._trajectories.get(robot)
        stamp = self._engine_time(header)
        if reports and stamp is not None and reports[0][0] - TRACK_MATCH <= stamp <= reports[-1][0] + TRACK_MATCH:
            if track_holds([(t, p.x, p.y) for t, _robot, p in reports], stamp, pose.position.x, pose.position.y):
                return
            with self._lock:   # not what the robot was to do: its goal changed, the trajectory is stale
                self._trajectories.pop(robot, None)
                self._forecast = None
        self._observe(robot, header, pose)

    def _reports(self) -> list:
        """Return the forecast reports of every robot's trajectory, ``(engine time, robot, pose)`` (lock held)."""
        return [r for reports in self._trajectories.values() for r in reports]

    def _observe(self, robot: RobotId, header, pose) -> None:
        """Hand one pose message to the engine, at its stamp (at the engine's time if unstamped)."""
        p = pose2d(pose)
        with self._lock:
            if not self._stopping:
                self.engine.observe_robot(robot, p.x, p.y, p.yaw, self._engine_time(header))

    def _engine_time(self, header) -> float | None:
        """Return a message's stamp on the engine's clock (s since the node's origin); None if unstamped."""
        t = stamp_to_s(header.stamp)
        return t - self._origin if t > 0 else None

    # --- time ----------------------------------------------------------------------------------

    def update_callback(self) -> None:
        """Advance HCWs, pages and readers to the current ROS time (at most every update_period_s); publish."""
        now = now_s(self) - self._origin
        with self._lock:
            if self._stopping or now - self._last_update < self.update_period_s - 1e-9:
                return
            self._last_update = now
            for robot, source in self._tf_poses.items():
                pose = source.latest()
                if pose is not None:
                    self.engine.observe_robot(robot, *pose)
            # across a jump ahead, the RTLS stream goes on each sim second, as it would step by step
            events, reports = [], self._reports()
            while True:
                events += self.engine.advance_along(min(now, math.floor(self.engine.t + 1e-6) + 1.0), reports)
                last = self.engine.t >= now - 1e-9
                self._stream_locations(refresh=last)
                if last:
                    break
            self._engine_t = self.engine.t
            self._process(events)
            self._save()
            for page_id, (event, deadline) in list(self._page_waiters.items()):
                if self.engine.page_status(page_id).acknowledged or self.engine.t >= deadline:
                    event.set()

    def _stream_locations(self, refresh: bool = True) -> None:
        """Publish the RTLS stream (lock held): changed HCWs every LOCATIONS_PERIOD_S, all every LOCATIONS_REFRESH_S.

        ``refresh`` False: the changed ones only (inside a jump ahead, where the refresh for late
        joiners waits for its end).
        """
        t = self.engine.t
        if t - self._located_at < LOCATIONS_PERIOD_S - 1e-9:
            return
        self._located_at = t
        refresh = refresh and t - self._refreshed_at >= LOCATIONS_REFRESH_S - 1e-9
        if refresh:
            self._refreshed_at = t
        records, _ = self.engine.locate()
        for r in records:
            seen = (round(r.pose.x, 2), round(r.pose.y, 2), round(r.pose.yaw, 2), r.area, r.availability,
                    r.detail, r.state, r.robot)
            if refresh or self._located.get(r.hcw_id) != seen:
                self._located[r.hcw_id] = seen
                self._locations_pub.publish(self._location_msg(r, self._origin + t))

    @staticmethod
    def _location_msg(r, t: float) -> StaffLocation:
        """Return an engine StaffRecord as a StaffLocation stamped at ROS time ``t`` (s)."""
        return StaffLocation(hcw_id=r.hcw_id, specialty=r.specialty, area=r.area, pose=pose_msg(r.pose, t),
                             availability=r.availability, detail=r.detail, state=r.state, robot=r.robot)

    def _arrival_msg(self, d: dict, t: float) -> PatientArrival:
        """Return the patient cue ``d`` (a ``patient_arrival`` event's data) that happened at engine time ``t`` (s)."""
        msg = PatientArrival(patient_id=d['patient_id'], room=d['room'], presentation=d['presentation'],
                             esi_level=int(d['esi_level']), assigned_hcw_id=d['assigned_hcw_id'],
                             required_specialty=d['required_specialty'])
        msg.header.stamp, msg.header.frame_id = s_to_stamp(self._origin + t), MAP_FRAME
        return msg

    def _next_event(self) -> float:
        """Return the ROS time (s) of the floor's next scheduled change, for the follow clock's jump ahead.

        The pages awaited count: each one's deadline (an HCW's answer is the engine's own event).
        Busy (:data:`~robot_team.contracts.clock_sync.BUSY`) at the first acknowledgement after the
        engine produced events (their messages, an arrival, must reach the team before the clock
        may jump: :mod:`robot_team.contracts.clock_sync`), from a page's acceptance until it is
        awaited, and from its answer (or time out) until its result is sent.
        """
        with self._lock:
            produced, self._produced = self._produced, False
            if produced:
                self._forecast = None
                return BUSY
            # a page accepted but not yet awaited, or answered but its result not yet sent: work now
            awaited = sum(not done.is_set() for done, _ in self._page_waiters.values())
            if self._pages_accepted > awaited:
                return BUSY
            deadlines = [deadline for _, deadline in self._page_waiters.values()]   # each page's time out
            t = self.engine.next_event_s()   # (an HCW's answer to a page among them)
            if t > self.engine.t:
                return self._origin + min([t, *deadlines])
            # HCWs moving: when the first of their events comes, if the robots drive as forecast (kept
            # until it is due or something else comes: a page, a trajectory, a robot lost, a screen)
            if self._forecast is None or self._forecast <= self.engine.t + 1e-9:
                self._forecast = self.engine.forecast_event_s(self._reports())
            return self._origin + min([self._forecast, *deadlines])

    def _process(self, events: list[SimEvent]) -> None:
        """Publish what the events mean on the ED topics and record each as a SIM team event (lock held)."""
        self._produced = self._produced or bool(events)
        for event in events:
            d = event.data
            if event.kind == 'patient_arrival':
                self._deliveries.publish(self._arrival_pub, self._arrival_msg(d, event.t), self.arrival_readers,
                                         patient_id=d['patient_id'])
            elif event.kind == 'badge_scan':
                msg = BadgeScan(reader_id=d['reader_id'], room=d['room'], badge_id=d['badge_id'])
                msg.header.stamp = s_to_stamp(self._origin + event.t)
                msg.header.frame_id = d['reader_id'].removesuffix('_door') + '_badge_reader'
                self._deliveries.publish(self._scan_pub, msg, self.badge_scan_readers, badge_id=d['badge_id'],
                                         room=d['room'])
            elif event.kind == 'display_shown':
                msg = DisplayContent(room=d['room'], title=d['title'], layout=d['layout'], lines=list(d['lines']),
                                     entries=[DisplayEntry(**member) for member in d['members']])
                msg.header.stamp = s_to_stamp(self._origin + event.t)
                self._deliveries.publish(self._display_pub, msg, self.display_readers, room=d['room'])
        self._record.sim_events(events)

    # --- services --------------------------------------------------------------------------------

    def locate_staff_callback(self, request, response):
        """Locate HCWs by ID, or every HCW of a specialty."""
        with self._lock:
            records, unknown = self.engine.locate(list(request.hcw_ids), request.specialty)
            t = self._origin + self.engine.t
            if unknown:
                self._record.input_error(f"{names.LOCATE_STAFF}: unknown HCW ID(s) {', '.join(unknown)}",
                                         target=LOCATE_STAFF, unknown_ids=unknown)
        response.staff = [self._location_msg(r, t) for r in records]
        response.unknown_ids = unknown
        return response

    def page_goal_callback(self, _goal_request) -> GoalResponse:
        """Accept every page (a bad one is answered as not delivered); it counts as work now until awaited."""
        with self._lock:
            self._pages_accepted += 1
        return GoalResponse.ACCEPT

    def page_staff_callback(self, goal_handle) -> PageStaff.Result:
        """Page an HCW and wait, in ROS time, up to the goal's timeout_s for the acknowledgement.

        The result's ``response_time_s`` is the time from the page to the acknowledgement, or the
        time waited when there was none. The goal always succeeds: the result says what the page
        got (delivered, acknowledged).
        """
        with self._in_flight():
            try:
                result = self._page(goal_handle)
                with self._lock:
                    if goal_handle.is_active:
                        goal_handle.succeed()
                return result
            finally:   # answered: the page no longer holds the clock (its result goes out on return)
                with self._lock:
                    self._pages_accepted -= 1

    def _page(self, goal_handle) -> PageStaff.Result:
        """Send the goal's page and wait for its answer (awaited: in ``_page_waiters``); return the result."""
        request, response = goal_handle.request, PageStaff.Result()
        timeout = float(request.timeout_s) if math.isfinite(request.timeout_s) else 0.0
        timeout = min(max(timeout, 0.0), MAX_PAGE_WAIT_S)
        with self._lock:
            try:
                page = self.engine.page(request.hcw_id.strip(), request.robot.strip(), request.message,
                                        request.room.strip())
            except SimInputError as exc:
                self._record.input_error(f'{names.PAGE_STAFF}: {exc}', target=request.hcw_id, robot=request.robot)
                response.delivered, response.acknowledged = False, False
                response.reply = f'(not delivered: {exc})'
                return response
            self._process(self.engine.drain_events())
            self._save()
            done = threading.Event()
            self._page_waiters[page.page_id] = (done, page.sent_at + timeout)
            goal_handle.publish_feedback(PageStaff.Feedback(delivered=page.delivered))
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

    def liveness_callback(self, msg) -> None:
        """A robot the supervisor noticed lost (``team/liveness``): the HCWs it escorted wait for it."""
        if msg.state != msg.STATE_LOST or msg.node not in self.engine.robots:
            return
        with self._lock:
            if not self._stopping:
                self.engine.robot_lost(msg.node)
                self._process(self.engine.drain_events())
                self._save()

    def show_display_callback(self, request, response):
        """Show a care-team layout on a room's screen."""
        with self._lock:
            success, message, lines = self.engine.render_display(
                request.room, request.title, list(request.entries), request.layout)
            if not success:
                self._record.input_error(f'{names.SHOW_DISPLAY}: {message}', target=request.room, title=request.title)
            self._process(self.engine.drain_events())
            self._save()
        response.success, response.message, response.rendered_lines = success, message, lines
        return response

    def _halt(self) -> None:
        """Stop the updates (the timer or the ``/clock`` jump callback) and end the delivery holds."""
        if self._timer is not None:
            self._timer.cancel()
        if self._jump is not None:
            self._jump.unregister()
        deliveries = getattr(self, '_deliveries', None)   # absent when the start failed
        if deliveries is not None:
            deliveries.stop()

    def _release_waiters(self) -> None:
        """Wake every page waiting for its acknowledgement (it sees ``_stopping`` and returns)."""
        with self._lock:
            waiters = list(self._page_waiters.values())
        for event, _ in waiters:
            event.set()


def main(args=None) -> int:
    """Run the hospital systems node until interrupted."""
    # Pages block a thread each while they wait for (sim) time to pass: give the executor one
    # per concurrent page, plus the update and the other services.
    return spin_node(HOSPITAL_SYSTEMS, HospitalSystemsNode, lambda: TeamExecutor(num_threads=8), args)


if __name__ == '__main__':
    sys.exit(main())
