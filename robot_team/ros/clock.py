"""A node's side of the follow clock: acknowledge each ``/clock`` value once it is processed.

Every team node on sim time (``use_sim_time:=true``) calls :func:`follow_clock` once it is built.
Each time the node's time source takes a new ``/clock`` value (rclpy's clock jump callback, run
inside the time source's ``/clock`` callback, after the jump callbacks the node registered
before), it publishes a ``robot_team/msg/ClockAck`` (the node's fully qualified name and the
value) on ``team/clock_acks``. The time source's callback belongs to the node's default callback
group: an acknowledgement waits for the work the node had queued there, so a node that falls
behind holds the clock back. The clock source's rules are in :mod:`robot_team.contracts.clock_sync`; a
source in ``wall`` mode (or Gazebo) ignores the acknowledgements.

With each acknowledgement a node tells when its next scheduled work is (``next_event_s``, from the
``next_event`` it passes to :func:`follow_clock`; a node that passes none always has work now), so
that the clock may jump across quiet time (:mod:`robot_team.contracts.clock_sync`). A node that
did something on the record since its previous acknowledgement (``activity``: its
:class:`~robot_team.ros.emitter.EventEmitter`'s count grew) has work now, whatever
``next_event`` says: what it just sent (a delegation, a report, an escalation) gets whole steps to
reach its receiver and make it busy before the clock may jump.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable

from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts.clock_sync import BUSY
from robot_team.msg import ClockAck
from robot_team.contracts.names import CLOCK_ACKS, team_name


def clock_acks_qos(subscriber: bool = False) -> QoSProfile:
    """Return the QoS of ``team/clock_acks``: reliable, transient local.

    An acknowledgement is a state (the latest sim time a node processed): a publisher keeps its
    last one (depth 1) for a clock source that matches it late; the source keeps up to 100 (one per
    follower at least) so that acknowledgements of several nodes arriving together are all taken.
    """
    return QoSProfile(depth=100 if subscriber else 1, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ClockFollower:
    """Acknowledge every forward step of ``node``'s ROS time on ``team/clock_acks``.

    Parameters
    ----------
    node
        An rclpy node on sim time. Robot nodes must have their ``team_namespace`` attribute set.
    next_event
        Returns the sim time (s, ROS time) of the node's next scheduled work while it has nothing
        to do now, :data:`~robot_team.contracts.clock_sync.NOTHING_SCHEDULED` when nothing is scheduled,
        :data:`~robot_team.contracts.clock_sync.BUSY` while it has work; called in the time source's
        ``/clock`` callback, so it must be quick and never wait. None: always busy.
    activity
        Returns a count that grows whenever the node acts (its events emitted so far: an
        :class:`~robot_team.ros.emitter.EventEmitter`'s ``count``); an acknowledgement after it
        grew says :data:`~robot_team.contracts.clock_sync.BUSY`. None: ``next_event`` alone.
    """

    def __init__(self, node, next_event: Callable[[], float] | None = None,
                 activity: Callable[[], int] | None = None):
        self.node_name = node.get_fully_qualified_name()
        self._next_event = next_event
        self._activity = activity
        self._seen_activity = activity() if activity is not None else 0
        self._clock = node.get_clock()
        self._pub = node.create_publisher(ClockAck, team_name(node, CLOCK_ACKS), clock_acks_qos())
        self._jump = self._clock.create_jump_callback(
            JumpThreshold(min_forward=Duration(nanoseconds=1), min_backward=None, on_clock_change=False),
            post_callback=self._on_jump)
        self.ack()

    def _on_jump(self, _jump) -> None:
        self.ack()

    def ack(self) -> None:
        """Publish the node's current ROS time as processed (at start, then at each forward jump)."""
        next_event = BUSY if self._next_event is None else float(self._next_event())
        if self._activity is not None:
            count = self._activity()
            if count != self._seen_activity:
                self._seen_activity, next_event = count, BUSY
        self._pub.publish(ClockAck(node=self.node_name, clock=self._clock.now().to_msg(), next_event_s=next_event))


class ScheduledWaits:
    """A node's waits on work that another follower of the clock schedules: a Nav2 goal being driven.

    A robot's task that waits for its ``navigate_to_pose`` result once the goal is accepted has
    nothing to do before the result, and the simulator that drives it says when that is (its
    robot's arrival: ``motion_sim``'s next event). While every task of the node waits so, the node
    has nothing to do now, up to the earliest of the waits' own deadlines (their timeouts, ROS
    time). A wait ends when its answer comes, in the callback that takes it (before the waiting
    thread resumes: the node has work again from then on), or when the node asks to cancel.
    Thread-safe.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._deadlines: dict[int, float] = {}
        self._ids = itertools.count(1)

    def begin(self, deadline_s: float) -> int:
        """Record a wait that ends by ``deadline_s`` (ROS time, s) at the latest; return its token."""
        with self._lock:
            token = next(self._ids)
            self._deadlines[token] = float(deadline_s)
            return token

    def end(self, token: int) -> None:
        """Record that the wait ``token`` ended (again: nothing)."""
        with self._lock:
            self._deadlines.pop(token, None)

    def earliest(self) -> float | None:
        """Return the earliest deadline of the waits under way (ROS time, s); None when none is."""
        with self._lock:
            return min(self._deadlines.values(), default=None)


def scheduled_waits_of(node) -> ScheduledWaits | None:
    """Return ``node``'s :class:`ScheduledWaits` (its ``scheduled_waits`` attribute: the robots set one), or None."""
    return getattr(node, 'scheduled_waits', None)


class ResultWait:
    """A task's wait for the result of a goal another follower of the clock accepted and schedules.

    Begun once the goal is accepted (only the acceptance proves the server has it): from then the
    wait is one of ``node``'s :class:`ScheduledWaits` (none where the node keeps none), up to
    ``deadline_s`` (ROS time, s). It ends in the callback that takes ``result_future``'s answer,
    before :attr:`done` is set (the waiting thread resumes after it), or at :meth:`end` (a cancel,
    a time out). For a robot's ``navigate_to_pose`` goal and its page.
    """

    def __init__(self, node, result_future, deadline_s: float):
        self._waits = scheduled_waits_of(node)
        self._token = self._waits.begin(deadline_s) if self._waits is not None else None
        self.done = threading.Event()
        """Set once the result came (or by whoever asks again for it: see the navigator's cancel)."""
        result_future.add_done_callback(self._on_result)

    def _on_result(self, _future) -> None:
        self.end()
        self.done.set()

    def end(self) -> None:
        """End the wait (the node has work from now on); again: nothing."""
        if self._token is not None:
            self._waits.end(self._token)


def follow_clock(node, next_event: Callable[[], float] | None = None,
                 activity: Callable[[], int] | None = None) -> ClockFollower | None:
    """Make ``node`` follow its team's clock when it runs on sim time; return the follower (None otherwise).

    ``next_event``, ``activity``: see :class:`ClockFollower`.
    """
    if not node.get_parameter('use_sim_time').value:
        return None
    return ClockFollower(node, next_event, activity)
