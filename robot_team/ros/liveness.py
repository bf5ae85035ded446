"""The ROS side of the team's liveness (:mod:`robot_team.contracts.liveness`): announcements and the watch.

- :func:`announce_alive`: every team node publishes one ``robot_team/msg/Heartbeat`` per
  incarnation on ``team/heartbeat/<node>`` (in its team namespace), with the QoS of
  :func:`heartbeat_qos`: DDS liveliness ``AUTOMATIC`` with a lease of
  :data:`~robot_team.contracts.liveness.LIVELINESS_LEASE_S`, asserted by the middleware for as long as the
  process lives and reaches the network.
- :class:`LivenessWatch` (the supervisor's): one subscription per watched node with a liveliness
  event callback; each change goes to a callback. The graph's writers of each node's announcement
  (their GIDs) tell a restarted node (a new writer) from a reconnected one (the same writer).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Callable, Iterable

from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy, HistoryPolicy, LivelinessPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts.liveness import LIVELINESS_LEASE_S, LivenessChange, LivenessTracker
from robot_team.msg import Heartbeat
from robot_team.contracts.names import HEARTBEAT, team_name

GRAPH_RECHECK_PERIOD_S = 0.5
"""Wall s between two looks at each lapsed node (:meth:`~robot_team.contracts.liveness.LivenessTracker.confirm`)
and at the graph's writers of each lost node's announcement
(:meth:`~robot_team.contracts.liveness.LivenessTracker.graph_seen`)."""


def heartbeat_qos() -> QoSProfile:
    """Return the QoS of ``team/heartbeat/<node>``: reliable, transient local, depth 1, AUTOMATIC liveliness.

    Publisher and subscriber use the same profile (a subscriber's lease must not be shorter than the
    publisher's for them to match).
    """
    return QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL, liveliness=LivelinessPolicy.AUTOMATIC,
                      liveliness_lease_duration=Duration(seconds=LIVELINESS_LEASE_S))


def heartbeat_topic(node_name: str) -> str:
    """Return the announcement topic of node ``node_name``, relative to the team namespace."""
    return f'{HEARTBEAT}/{node_name}'


def announce_alive(node):
    """Announce ``node``'s incarnation on ``team/heartbeat/<name>``; return the publisher (keep it alive).

    Robot nodes must have their ``team_namespace`` attribute set (:func:`robot_team.contracts.names.team_name`).
    """
    publisher = node.create_publisher(Heartbeat, team_name(node, heartbeat_topic(node.get_name())), heartbeat_qos())
    publisher.publish(Heartbeat(stamp=node.get_clock().now().to_msg(), node=node.get_name(),
                                instance_id=uuid.uuid4().hex, pid=os.getpid(), host=socket.gethostname(),
                                started_wall=time.time()))
    return publisher


class LivenessWatch:
    """Watch ``nodes``' announcements from ``node``; call ``on_change`` with each :class:`LivenessChange`.

    Parameters
    ----------
    node
        The watching node (the supervisor): its subscriptions and its wall-clock tick, which looks
        again at each lost node's writers every :data:`GRAPH_RECHECK_PERIOD_S`.
    nodes
        Names of the nodes to watch (each announces on ``team/heartbeat/<name>``).
    on_change
        Called in ``callback_group`` with each change, oldest first.
    callback_group
        Where the subscriptions and the tick run (the supervisor's mutually exclusive group).
    """

    def __init__(self, node, nodes: Iterable[str], on_change: Callable[[LivenessChange], None],
                 callback_group=None):
        self.tracker = LivenessTracker(nodes)
        self._node = node
        self._on_change = on_change
        self._local: dict[str, bool] = {}
        self._subscriptions = []
        for name in self.tracker.nodes:
            events = SubscriptionEventCallbacks(liveliness=lambda info, name=name: self._liveliness(name, info))
            self._subscriptions.append(node.create_subscription(
                Heartbeat, heartbeat_topic(name), lambda msg, name=name: self._announced(name, msg), heartbeat_qos(),
                callback_group=callback_group, event_callbacks=events))
        # wall time (steady): liveness is about processes, and a held sim clock must not hold a return
        self._tick = node.create_timer(GRAPH_RECHECK_PERIOD_S, self._recheck, callback_group=callback_group,
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _recheck(self) -> None:
        for name in self.tracker.lapsed():   # liveliness out for LOSS_CONFIRM_S: lost
            self._report(self.tracker.confirm(name, time.monotonic()))
        for name in self.tracker.lost():
            self._report(self.tracker.graph_seen(name, self._writers(name), time.monotonic()))

    def _writers(self, name: str) -> list[str]:
        """Return the GIDs (hex) of the writers of ``name``'s announcement the graph shows now."""
        infos = self._node.get_publishers_info_by_topic(self._node.resolve_topic_name(heartbeat_topic(name)))
        return [bytes(info.endpoint_gid).hex() for info in infos]

    def _announced(self, name: str, msg) -> None:
        if msg.node != name or not msg.instance_id:
            return   # a stray announcement on another node's topic: not this node's incarnation
        self._local[name] = msg.pid == os.getpid() and msg.host == socket.gethostname()
        self._report(self.tracker.announced(name, msg.instance_id, self._writers(name), time.monotonic()))

    def _liveliness(self, name: str, info) -> None:
        if self._local.get(name):
            # A node in the watcher's own process is lost only with the watcher; and DDS does not
            # assert AUTOMATIC liveliness to readers of the same participant (measured: every
            # in-process writer "not alive" one lease after start), so its liveliness means nothing.
            return
        self._report(self.tracker.liveliness(name, info.alive_count, info.not_alive_count,
                                             info.not_alive_count_change, self._writers(name), time.monotonic()))

    def _report(self, changes: list[LivenessChange]) -> None:
        for change in changes:
            self._on_change(change)
