"""Feed a :class:`~robot_team.contracts.scene.SceneState` from a team's topics (the recorder's and the console's side).

:class:`SceneFeed` subscribes, on a node it is given, to the team's

- ``ed/rtls/locations`` (``robot_team/msg/StaffLocation``, reliable): the HCWs as the RTLS streams them;
- ``<robot>/amcl_pose`` (``geometry_msgs/PoseWithCovarianceStamped``, as AMCL publishes it:
  reliable, transient local) of each robot it is told of, and of each robot a ``node_started``
  event of ``hospital_systems`` or ``motion_sim`` lists (``data.robots``), so that a recorder or
  a console needs no robot list to see a fleet; and its ``<robot>/trajectory`` (``nav_msgs/Path``,
  the embedded simulator's: the reports its goal will make): after the follow clock jumped across
  a drive, the simulator publishes the robot's latest pose only, and the reports before it come
  from there (those the trajectory holds up to that pose, if it holds that pose);
- optionally ``team/events`` (``robot_team/msg/TeamEvent``), for a client that does not receive
  them otherwise (a recorder passes its events to :meth:`SceneFeed.on_event` itself).

Names are resolved in the team's namespace, so the node may live anywhere. Poses are stamped
with their header (ROS time, sim time in simulated runs), map frame (REP-105), m and rad.
"""

from __future__ import annotations

import threading
from typing import Sequence

from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import Path
from rclpy.qos import QoSProfile, ReliabilityPolicy

from robot_team.contracts import names
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.geometry import TRACK_MATCH, quaternion_to_yaw, track_holds
from robot_team.contracts.names import RobotId
from robot_team.msg import StaffLocation, TeamEvent
from robot_team.ros.messages import amcl_pose_qos, event_from_msg, events_qos
from robot_team.ros.stamps import stamp_to_s
from robot_team.contracts.config import ConfigError
from robot_team.contracts.scene import SceneState, floor_of

ROBOT_LISTERS = (names.HOSPITAL_SYSTEMS, names.MOTION_SIM)
"""Nodes whose ``node_started`` event lists the team's robots (``data.robots``)."""


class SceneFeed:
    """Subscriptions that keep ``scene`` up to date with a team's poses, RTLS stream and (optionally) events.

    Parameters
    ----------
    node
        The rclpy node to subscribe on (spun by the caller's executor).
    scene
        The state to update (thread-safe).
    team_namespace
        The team's namespace (``/`` by default).
    robots
        Robots to watch from the start (more come from ``node_started`` events).
    events
        Subscribe to ``team/events`` too (else call :meth:`on_event` with each event).

    Raises
    ------
    ValueError
        If ``team_namespace`` is not a valid ROS namespace.
    """

    def __init__(self, node, scene: SceneState, team_namespace: str = '/', robots: Sequence[RobotId] = (),
                 events: bool = False):
        self.node = node
        self.scene = scene
        self.namespace = names.validate_namespace(team_namespace, 'team namespace')
        self._lock = threading.Lock()
        self._poses: dict[str, object] = {}
        self._trajectories: dict[str, list[tuple[float, float, float, float]]] = {}   # robot -> (t, x, y, yaw)
        self._seen_s: dict[str, float] = {}   # robot -> stamp of the last pose put in the scene
        self._subscriptions = [node.create_subscription(
            StaffLocation, names.join(self.namespace, names.STAFF_LOCATIONS), self._location,
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))]   # a jump ahead streams many at once
        if events:
            self._subscriptions.append(node.create_subscription(
                TeamEvent, names.join(self.namespace, names.TEAM_EVENTS),
                lambda msg: self.on_event(event_from_msg(msg)), events_qos()))
        self.watch(robots)

    @property
    def robots(self) -> list[RobotId]:
        """The robots whose poses are watched."""
        with self._lock:
            return list(self._poses)

    def watch(self, robots: Sequence[RobotId]) -> None:
        """Subscribe to the ``amcl_pose`` of each robot not yet watched."""
        with self._lock:
            for robot in robots:
                robot = str(robot)
                if robot and robot not in self._poses:
                    topic = names.join(self.namespace, names.robot_name(robot, names.AMCL_POSE))
                    self._poses[robot] = self.node.create_subscription(
                        PoseWithCovarianceStamped, topic, lambda msg, r=robot: self._pose(r, msg), amcl_pose_qos())
                    self._subscriptions.append(self.node.create_subscription(
                        Path, names.join(self.namespace, names.robot_name(robot, names.TRAJECTORY)),
                        lambda msg, r=robot: self._trajectory(r, msg), amcl_pose_qos()))

    def on_event(self, event: TeamEventModel) -> None:
        """Apply a team event to the scene.

        A ``node_started`` listing robots adds them to the watch; ``hospital_systems``' gives the
        scene its floor (its scenario's, :func:`robot_team.contracts.scene.floor_of`) if it has none.
        """
        if event.kind == EventKind.NODE_STARTED.value and event.actor in ROBOT_LISTERS:
            robots = event.data.get('robots')
            if isinstance(robots, list):
                self.watch(robots)
            if self.scene.floor is None and event.actor == names.HOSPITAL_SYSTEMS:
                try:
                    self.scene.floor = floor_of([event])
                except ConfigError:
                    pass     # a floor that cannot be used: the scene goes on without geometry
        self.scene.apply(event)

    def destroy(self) -> None:
        """Remove the feed's subscriptions from the node."""
        with self._lock:
            subscriptions = self._subscriptions + list(self._poses.values())
            self._subscriptions, self._poses = [], {}
        for sub in subscriptions:
            self.node.destroy_subscription(sub)

    def _trajectory(self, robot: RobotId, msg) -> None:
        reports = [(stamp_to_s(p.header.stamp), p.pose.position.x, p.pose.position.y,
                    quaternion_to_yaw(p.pose.orientation)) for p in msg.poses]
        with self._lock:
            self._trajectories[robot] = reports

    def _pose(self, robot: RobotId, msg) -> None:
        p = msg.pose.pose
        stamp, x, y = stamp_to_s(msg.header.stamp), p.position.x, p.position.y
        with self._lock:
            reports = self._trajectories.get(robot, [])
            since = self._seen_s.get(robot, -1.0)
            self._seen_s[robot] = max(since, stamp)
        if track_holds(reports, stamp, x, y):   # the reports between the last pose heard and this one
            for t, rx, ry, ryaw in reports:           # (a jump ahead published none)
                if since + TRACK_MATCH < t < stamp - TRACK_MATCH:
                    self.scene.observe_robot(robot, rx, ry, ryaw, t)
        self.scene.observe_robot(robot, x, y, quaternion_to_yaw(p.orientation), stamp)

    def _location(self, msg) -> None:
        p = msg.pose.pose
        self.scene.observe_staff(msg.hcw_id, x=p.position.x, y=p.position.y,
                                 yaw=quaternion_to_yaw(p.orientation), stamp_s=stamp_to_s(msg.pose.header.stamp),
                                 area=msg.area, specialty=msg.specialty, availability=msg.availability,
                                 detail=msg.detail, state=msg.state, robot=msg.robot)
