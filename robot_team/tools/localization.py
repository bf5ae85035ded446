"""The robot's pose in ``map``, the way every Nav2 robot has it (no simulator involved).

:class:`RobotPose` reads TF ``map`` -> ``base_link`` where ``tf2_ros`` is installed (a ROS 2
install), and otherwise AMCL's ``amcl_pose`` (``geometry_msgs/PoseWithCovarianceStamped``,
reliable + transient local, as AMCL publishes it; the topic is configurable, e.g. for another
localizer). Frames follow REP-105; poses are (x, y, yaw) in metres and radians.
"""

from __future__ import annotations

import threading
import time

from geometry_msgs.msg import PoseWithCovarianceStamped
from rclpy.time import Time

from robot_team.contracts import names
from robot_team.contracts.errors import ToolError
from robot_team.contracts.geometry import quaternion_to_yaw
from robot_team.ros.messages import amcl_pose_qos

POSE_SOURCES = ('auto', 'tf', 'amcl_pose')
"""``auto``: TF when ``tf2_ros`` is importable, else ``amcl_pose``."""


class RobotPose:
    """Where the robot is in ``map``: TF ``map`` -> ``base_frame``, or the ``topic`` AMCL publishes.

    Parameters
    ----------
    node
        The robot's node (names resolve in its namespace).
    source
        One of :data:`POSE_SOURCES`.
    topic
        The pose topic for ``amcl_pose`` (relative: ``amcl_pose`` in the robot's namespace).
    base_frame
        The robot's base frame for TF (REP-105 ``base_link``; a prefixed frame on multi-robot TF trees).
    callback_group
        Group of the subscription.

    Raises
    ------
    ValueError
        If ``source`` is unknown, or ``'tf'`` is asked for where ``tf2_ros`` is not installed.
    """

    def __init__(self, node, *, source: str = 'auto', topic: str = names.AMCL_POSE,
                 base_frame: str = names.BASE_FRAME, callback_group=None):
        if source not in POSE_SOURCES:
            raise ValueError(f"pose source {source!r}: expected one of {', '.join(POSE_SOURCES)}")
        self._node = node
        self._base_frame = base_frame
        self._pose: tuple[float, float, float] | None = None
        self._received = threading.Event()
        self._tf_buffer = None
        if source in ('auto', 'tf'):
            try:
                import tf2_ros
            except ImportError:
                if source == 'tf':
                    raise ValueError("pose source 'tf' needs tf2_ros, which is not installed here; use "
                                     "'amcl_pose' (or 'auto')") from None
            else:
                self._tf_buffer = tf2_ros.Buffer()
                self._tf_listener = tf2_ros.TransformListener(self._tf_buffer, node)
        self.source = 'tf' if self._tf_buffer is not None else 'amcl_pose'
        self.topic = topic
        if self.source == 'amcl_pose':
            node.create_subscription(PoseWithCovarianceStamped, topic, self._pose_callback, amcl_pose_qos(),
                                     callback_group=callback_group)

    def _pose_callback(self, msg) -> None:
        p = msg.pose.pose
        self._pose = (p.position.x, p.position.y, quaternion_to_yaw(p.orientation))
        self._received.set()

    def latest(self) -> tuple[float, float, float] | None:
        """Return the last known pose (x m, y m, yaw rad in ``map``) without waiting, or None."""
        if self.source == 'tf':
            try:
                return self.get(0.0)
            except ToolError:
                return None
        return self._pose

    def get(self, timeout_s: float) -> tuple[float, float, float]:
        """Return the pose (x m, y m, yaw rad in ``map``), waiting up to ``timeout_s`` wall seconds for one.

        Raises
        ------
        ToolError
            If no pose is known within ``timeout_s`` (names the topic or the transform).
        """
        if self.source == 'tf':

            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    t = self._tf_buffer.lookup_transform(names.MAP_FRAME, self._base_frame, Time()).transform
                    return (t.translation.x, t.translation.y, quaternion_to_yaw(t.rotation))
                except Exception as exc:  # noqa: BLE001 - tf2 raises several lookup exception types
                    if time.monotonic() >= deadline:
                        raise ToolError(f'the robot pose is unknown: no transform {names.MAP_FRAME} -> '
                                        f'{self._base_frame} within {timeout_s:.0f} s ({exc})') from exc
                    time.sleep(0.05)
        if not self._received.wait(timeout_s):
            raise ToolError(f'the robot pose is unknown: nothing received on '
                            f'{self._node.resolve_topic_name(self.topic)} within {timeout_s:.0f} s')
        return self._pose
