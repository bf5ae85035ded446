"""The LLM clock: ``realtime`` (sim time runs while brains wait on their LLM) or ``lockstep`` (it holds).

In ``lockstep`` a brain announces each wait on its LLM endpoint on the team topic
``team/clock_holds`` (``robot_team/msg/ClockHold``: ``active`` true when the request starts,
false when it ends) and the clock source (the simulator, as Gazebo can be paused and stepped)
advances sim time only while no hold is active, then steps it by ``hold_step_s`` sim seconds per
hold that ended (default :data:`DEFAULT_HOLD_STEP_S`: a fast hosted model's latency). So
evaluation measures the decisions, not the model's latency: every request costs the same sim
time whatever the model's speed, and supervisor deadlines still bound how many requests a brain
may spend. ``realtime`` stays the default for live runs, where the floor does not wait.

The same topic holds sim time while a node waits for DDS to discover a server it must call (reason
:data:`SERVER_DISCOVERY`: the manager's and the robots' calls, :func:`robot_team.ros.util.wait_for_server`);
such a hold costs no sim time, so a slow discovery on a busy machine costs wall time only. So does
the runner's while a node it restarts is away (reason :data:`NODE_RESTART`), and the hospital's
while a patient arrival, a badge scan or a screen's content is on its way to its readers (reason
:data:`MESSAGE_DELIVERY`).

A lost release (a node that died mid-request) cannot freeze an episode: each hold expires after
``max_hold_s`` wall seconds (the clock source's parameter, default :data:`DEFAULT_MAX_HOLD_S`)
and the expiry is recorded (a ``sim`` event, ``what: clock_hold_expired``).

Pieces: :class:`HoldTracker` (the clock source's logic, no rclpy), :class:`ClockHoldPublisher`
(a brain's side: a context manager factory for :class:`~robot_team.llm.client.ChatClient`'s
``hold``), :func:`attach_clock_source` (wires a tracker to a clock-source node).
"""

from __future__ import annotations

import itertools
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from robot_team.contracts.errors import check_choice
from robot_team.contracts.events import EventKind
from robot_team.ros.messages import reliable_qos
from robot_team.llm.settings import STALL_TIMEOUT_S, LLMSettings
from robot_team.msg import ClockHold
from robot_team.contracts.names import CLOCK_HOLDS, team_name

LLM_CLOCKS = ('realtime', 'lockstep')
"""The LLM clock modes; ``realtime`` is the default."""

DEFAULT_HOLD_STEP_S = 2.0
"""Sim seconds charged per ended hold (one LLM request): about a hosted model's tool-call latency."""

LLM_REQUEST = 'llm_request'
"""Hold reason: a brain waits on its LLM endpoint (charged ``hold_step_s`` sim s when it ends)."""
SERVER_DISCOVERY = 'server_discovery'
"""Hold reason: a node waits for DDS to discover a server it must call (e.g. the manager, a robot's
ExecuteTask server; a robot, the RTLS or Nav2). Discovery is wall time that depends on how busy the
machine is, not on the ED; such a hold is charged no sim time."""
NODE_RESTART = 'node_restart'
"""Hold reason: the runner restarts a node that died, from its exit until the team has it back
(:class:`robot_team.run.restart_holds.RestartHolds`). The restart's wall time (the restart delay, the
process start, DDS discovery and liveliness) depends on the machine, not on the ED; charged nothing."""
MESSAGE_DELIVERY = 'message_delivery'
"""Hold reason: a node published a message the team's decisions start from (the hospital's patient
arrivals, badge scans and screens' content) and DDS has not yet delivered it to every reader
expected (:mod:`robot_team.contracts.delivery`). A late match or a repaired sample is wall time
that depends on the machine; charged nothing."""
BACK_NOTICE = 'back_notice'
"""Hold reason: the supervisor has a lost robot back (restarted, or its host back on the network) and
waits for its goals' cancels to be answered before the team hears it is back
(:meth:`robot_team.agents.supervisor_node.SupervisorNode.liveness_callback`): wall time of DDS
discovery and of the robot's start, not of the ED; charged nothing."""
UNCHARGED_REASONS = frozenset({SERVER_DISCOVERY, NODE_RESTART, MESSAGE_DELIVERY, BACK_NOTICE})
"""Hold reasons that cost no sim time when they end; any other reason costs ``hold_step_s``."""

DEFAULT_MAX_HOLD_S = STALL_TIMEOUT_S
"""Wall seconds after which a hold expires: a request that holds sim time is given up as stalled then
too (:data:`robot_team.llm.settings.STALL_TIMEOUT_S`)."""


def llm_clock_under(clock_mode: str, llm_clock: str) -> str:
    """Return the LLM clock that brains and the clock source run under with the sim clock ``clock_mode``.

    The follow clock (:mod:`robot_team.contracts.clock_sync`) cannot run on while a brain waits on its LLM:
    under ``follow`` it is always ``lockstep``; under ``wall``, ``llm_clock`` as given.
    """
    return 'lockstep' if clock_mode == 'follow' else llm_clock


def check_llm_clock(value: str, what: str = 'llm_clock') -> str:
    """Return ``value`` if it is an LLM clock mode.

    Raises
    ------
    ValueError
        Naming ``what`` and the modes, otherwise.
    """
    return check_choice(value, LLM_CLOCKS, what, 'an LLM clock')


class HoldTracker:
    """The holds a clock source knows of, and whether sim time must stand still.

    Parameters
    ----------
    max_hold_s
        Wall seconds after which a hold expires.
    hold_step_s
        Sim seconds to advance per hold that ended (:meth:`take_step`), but for a hold whose reason
        is in :data:`UNCHARGED_REASONS`.
    on_expired
        Called ``on_expired(hold_id, holder, age_s)`` for each hold that expired.
    wall
        Monotonic wall clock, s (tests may pass their own).

    Attributes
    ----------
    holds_seen : int
        Holds started so far.
    held_wall_s : float
        Wall seconds sim time stood still so far.
    expired : int
        Holds that expired without a release.

    Thread-safe: :meth:`update` runs in a subscription callback, :meth:`held` in the tick.
    """

    def __init__(self, max_hold_s: float = DEFAULT_MAX_HOLD_S,
                 on_expired: Callable[[str, str, float], None] | None = None,
                 wall: Callable[[], float] = time.monotonic, hold_step_s: float = DEFAULT_HOLD_STEP_S):
        if not max_hold_s > 0 or hold_step_s < 0:
            raise ValueError(f'max_hold_s must be positive and hold_step_s not negative, got {max_hold_s}, '
                             f'{hold_step_s}')
        self.max_hold_s = float(max_hold_s)
        self.hold_step_s = float(hold_step_s)
        self._steps = 0.0
        self._on_expired = on_expired
        self._wall = wall
        self._lock = threading.Lock()
        self._active: dict[str, tuple[str, float, float]] = {}   # hold_id -> (holder, wall start, sim s owed)
        self._ended: set[str] = set()                     # releases seen (a late duplicate start is ignored)
        self._since: float | None = None
        self.holds_seen = 0
        self.held_wall_s = 0.0
        self.expired = 0

    def update(self, hold_id: str, holder: str, active: bool, reason: str = LLM_REQUEST) -> None:
        """Start (``active``) or end one hold; ``reason`` (as the hold's start says) sets its charge."""
        with self._lock:
            if active and hold_id not in self._active and hold_id not in self._ended:
                owed = 0.0 if reason in UNCHARGED_REASONS else self.hold_step_s
                self._active[hold_id] = (holder, self._wall(), owed)
                self.holds_seen += 1
            elif not active and hold_id not in self._ended:
                started = self._active.pop(hold_id, None)
                if started is not None:
                    self._steps += started[2]
                self._ended.add(hold_id)
            self._account(self._wall())

    def held(self) -> bool:
        """Return whether a hold is active now (expiring those older than ``max_hold_s``)."""
        expired = []
        with self._lock:
            now = self._wall()
            for hold_id, (holder, start, _) in list(self._active.items()):
                if now - start > self.max_hold_s:
                    del self._active[hold_id]
                    self._ended.add(hold_id)
                    self.expired += 1
                    expired.append((hold_id, holder, now - start))
            held = bool(self._active)
            self._account(now)
        for item in expired:
            if self._on_expired is not None:
                self._on_expired(*item)
        return held

    def _account(self, now: float) -> None:
        """Track the wall time during which some hold was active (call with the lock held)."""
        if self._active and self._since is None:
            self._since = now
        elif not self._active and self._since is not None:
            self.held_wall_s += now - self._since
            self._since = None

    def take_step(self) -> float:
        """Return the sim seconds owed for holds that ended since the last call (``hold_step_s`` each, 0 uncharged)."""
        with self._lock:
            steps, self._steps = self._steps, 0.0
        return steps

    @property
    def active(self) -> list[str]:
        """The holders of the active holds."""
        with self._lock:
            return [holder for holder, _, _ in self._active.values()]


def clock_holds_qos():
    """Return the QoS of ``team/clock_holds``: reliable, transient local (a late clock source gets the state)."""
    return reliable_qos(depth=100)


class ClockHoldPublisher:
    """A brain's side of the lockstep clock: ``with publisher():`` holds sim time for the block.

    Parameters
    ----------
    node
        The rclpy node that publishes (robot nodes publish in their team's namespace).
    holder
        Who holds (recorded with each hold), e.g. ``'manager'``.
    reason
        Why: :data:`LLM_REQUEST` (charged ``hold_step_s``), :data:`SERVER_DISCOVERY`,
        :data:`NODE_RESTART`, :data:`MESSAGE_DELIVERY` or :data:`BACK_NOTICE` (charged nothing).
    """

    def __init__(self, node, holder: str, reason: str = LLM_REQUEST):
        self._msg = ClockHold
        self._pub = node.create_publisher(ClockHold, team_name(node, CLOCK_HOLDS), clock_holds_qos())
        self.holder = holder
        self.reason = reason
        self._ids = itertools.count(1)

    def _publish(self, hold_id: str, active: bool) -> None:
        self._pub.publish(self._msg(holder=self.holder, hold_id=hold_id, active=active, reason=self.reason,
                                    wall_time=time.time()))

    def begin(self) -> str:
        """Start a hold (sim time stands still from now); return its ID, for :meth:`end`."""
        hold_id = f'{self.holder}/{next(self._ids)}'
        self._publish(hold_id, True)
        return hold_id

    def end(self, hold_id: str) -> None:
        """End the hold ``hold_id`` (nothing if the node is gone already: the hold expires on its own)."""
        try:
            self._publish(hold_id, False)
        except Exception:  # noqa: BLE001 - a destroyed node at shutdown: the hold expires on its own
            pass

    @contextmanager
    def __call__(self) -> Iterator[str]:
        """Hold sim time while the block runs; yield the hold's ID."""
        hold_id = self.begin()
        try:
            yield hold_id
        finally:
            self.end(hold_id)


def attach_clock_source(node, llm_clock: str, emit: Callable[..., object] | None = None,
                        callback_group=None, on_update: Callable[[], None] | None = None) -> HoldTracker | None:
    """Make ``node`` (the clock source) follow the holds on ``team/clock_holds`` in ``lockstep``.

    Declares the node's ``max_hold_s`` (wall s, default :data:`DEFAULT_MAX_HOLD_S`) and ``hold_step_s``
    (sim s per ended hold, default the LLM settings' ``lockstep_step_s``, :data:`DEFAULT_HOLD_STEP_S`)
    parameters.
    Returns the tracker whose :meth:`HoldTracker.held` the tick asks, or None for ``realtime``.
    ``emit`` (the node's event emitter) records each expired hold as a ``sim`` event;
    ``on_update()`` is called after each hold or release the tracker took (e.g. to step at once).

    Raises
    ------
    ValueError
        If ``llm_clock`` or ``max_hold_s`` is invalid.
    """
    check_llm_clock(llm_clock, 'parameter llm_clock')
    max_hold = float(node.declare_parameter('max_hold_s', DEFAULT_MAX_HOLD_S).value)
    step = float(node.declare_parameter('hold_step_s', LLMSettings().lockstep_step_s).value)
    if llm_clock == 'realtime':
        return None

    def expired(hold_id: str, holder: str, age: float) -> None:
        if emit is not None:
            emit(EventKind.SIM, f'clock hold {hold_id} by {holder} expired after {age:.0f} s: sim time runs again',
                 target=holder, reason=f'no release within max_hold_s={max_hold:g} wall s',
                 what='clock_hold_expired', hold_id=hold_id, holder=holder, age_s=round(age, 3))

    tracker = HoldTracker(max_hold, on_expired=expired, hold_step_s=step)

    def take(msg: ClockHold) -> None:
        tracker.update(msg.hold_id, msg.holder, msg.active, msg.reason)
        if on_update is not None:
            on_update()

    node.create_subscription(ClockHold, team_name(node, CLOCK_HOLDS), take, clock_holds_qos(),
                             callback_group=callback_group)
    return tracker
