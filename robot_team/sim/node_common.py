"""ROS helpers the simulator's two nodes share: poses, the record of their events, their base (start, shutdown).

Stamps: :mod:`robot_team.ros.stamps`.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import rclpy.time
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor

from robot_team.contracts.config import ConfigError, Scenario, load_scenario
from robot_team.contracts.events import EventKind
from robot_team.contracts.names import MAP_FRAME
from robot_team.ros.emitter import EventEmitter
from robot_team.ros.stamps import s_to_stamp, s_to_time
from robot_team.sim.common import SimEvent, describe
from robot_team.sim.world import Pose2D


def pose_msg(pose: Pose2D, t: float, frame: str = MAP_FRAME) -> PoseStamped:
    """Return a planar pose (m, rad) at sim time ``t`` as a ``geometry_msgs/PoseStamped`` in ``frame``."""
    msg = PoseStamped()
    msg.header.stamp = s_to_stamp(t)
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y = float(pose.x), float(pose.y)
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(pose.yaw / 2), math.cos(pose.yaw / 2)
    return msg


def yaw_of(q) -> float:
    """Return the yaw (rad, about z) of a ``geometry_msgs/Quaternion``."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def pose2d(pose) -> Pose2D:
    """Return a ``geometry_msgs/Pose`` as a planar Pose2D (m, rad)."""
    return Pose2D(pose.position.x, pose.position.y, yaw_of(pose.orientation))


class _EngineClock:
    """The node as :class:`EventEmitter` sees it, with a clock that reads an engine's sim time.

    Team events are stamped with the time the engine holds when they are emitted, so that the
    record keeps engine order even where the node's own clock (``/clock``) runs a little ahead.
    """

    def __init__(self, node, sim_time: Callable[[], float]):
        self._node = node
        self._sim_time = sim_time

    def create_publisher(self, *args, **kwargs):
        return self._node.create_publisher(*args, **kwargs)

    def get_logger(self):
        return self._node.get_logger()

    def get_clock(self) -> '_EngineClock':
        return self

    def now(self) -> rclpy.time.Time:
        return s_to_time(self._sim_time())


class SimRecord:
    """Record a simulator node's events on ``team/events`` (an :class:`EventEmitter` on engine time).

    Parameters
    ----------
    node
        The simulator node (its name is the events' actor).
    sim_time
        Returns the engine's sim time, s; callable without the node's lock.
    """

    def __init__(self, node, sim_time: Callable[[], float]):
        self.emitter = EventEmitter(_EngineClock(node, sim_time), node.get_name())

    def sim_events(self, events: list[SimEvent]) -> None:
        """Record every engine event as an ``EventKind.SIM`` event (``data.what`` = its kind)."""
        for event in events:
            summary, target = describe(event)
            self.emitter.emit(EventKind.SIM, summary, target=target, what=event.kind, sim_time_s=event.t,
                              **event.data)

    def input_error(self, summary: str, target: str = '', **data) -> None:
        """Record a request the node could not act on (``EventKind.INPUT_ERROR``)."""
        self.emitter.emit(EventKind.INPUT_ERROR, summary, target=target, **data)


class InFlight:
    """The blocking callbacks a simulator node is running (pages, goals), so that its shutdown waits for them.

    ``with in_flight():`` around a callback counts it; :meth:`wait_idle` (from ``destroy_node``,
    after the node released its waiters) waits until none runs, at most ``timeout_s`` wall seconds.
    Thread-safe.
    """

    def __init__(self):
        self._count = 0
        self._idle = threading.Condition()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        """Count the enclosed callback as in flight."""
        with self._idle:
            self._count += 1
        try:
            yield
        finally:
            with self._idle:
                self._count -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout_s: float = 2.0) -> bool:
        """Wait until no callback is in flight (at most ``timeout_s`` wall s); return whether none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout=timeout_s)


class SimNode:
    """The start and shutdown both simulator nodes share (a mixin before ``rclpy.node.Node``).

    Parameters
    ----------
    node_name
        The node's name.
    scenario
        The episode; if None, the ``scenario`` parameter (a name in ``config/scenarios`` or a
        path) is loaded (:meth:`_load_scenario`).
    context
        The rclpy context (tests pass a private one).
    parameter_overrides
        As for ``rclpy.node.Node``.
    **node_kwargs
        Passed to ``rclpy.node.Node``.

    Notes
    -----
    The constructor declares the ``scenario`` parameter and sets ``scenario`` (None until
    :meth:`_load_scenario`), ``_lock`` (held by the node's updates), ``_stopping`` and
    ``_in_flight`` (an :class:`InFlight`). :meth:`stop` sets ``_stopping``, halts the node's updates
    (:meth:`_halt`), lets an update in flight finish (it holds ``_lock``; later ones see
    ``_stopping`` and return at once) and releases every callback that waits for sim time to pass
    (:meth:`_release_waiters`); :meth:`destroy_node` then waits for those callbacks
    (``_in_flight``) before destroying the node.
    """

    def __init__(self, node_name: str, scenario: Scenario | None = None, *, context=None, parameter_overrides=None,
                 **node_kwargs):
        super().__init__(node_name, context=context, parameter_overrides=parameter_overrides, **node_kwargs)
        self._lock = threading.Lock()
        self._stopping = False
        self._in_flight = InFlight()   # blocking callbacks running (destroy_node waits for them)
        self.scenario = scenario
        self._scenario_name = str(self.declare_parameter('scenario',
                                                         scenario.name if scenario else 'onboarding').value)

    def _load_scenario(self) -> Scenario:
        """Return the episode: the one given, else the one the ``scenario`` parameter names (kept as ``scenario``).

        Raises
        ------
        ConfigError
            If the named scenario cannot be loaded.
        """
        if self.scenario is None:
            self.scenario = load_scenario(self._scenario_name)
        return self.scenario

    def destroy_node(self) -> None:
        """Release the waiting callbacks, wait for them, then destroy the node."""
        self.stop()
        self._in_flight.wait_idle()
        super().destroy_node()

    def stop(self) -> None:
        """Stop updating and release every waiting callback (while the executor may still spin)."""
        self._stopping = True
        self._halt()
        with self._lock:     # an update in flight finishes first; later ones return at once
            pass
        self._release_waiters()

    def _number(self, name: str, default: float) -> float:
        """Declare the number parameter ``name`` (typed loosely: ``-p tick_hz:=50`` comes as an integer).

        Raises
        ------
        ConfigError
            If its value is not a number.
        """
        value = self.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True)).value
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f'parameter {name}: expected a number, got {value!r}') from None

    def _halt(self) -> None:
        """Stop the node's timers and clock callbacks (no update starts after this)."""

    def _release_waiters(self) -> None:
        """Wake every callback that waits for sim time to pass (it sees ``_stopping`` and returns)."""
