"""Sim time that follows the team: the clock source's rules, without ROS.

Two clock modes (:data:`CLOCK_MODES`) for the simulator's clock source (``motion_sim``):

``wall``
    Sim time advances by ``real_time_factor`` x the wall time elapsed, whatever the nodes manage
    (Gazebo's real-time factor). For demos, and for a team mixed with physical robots. On a loaded
    host the team's nodes fall behind sim time and the outcome depends on the load.
``follow`` (the default of unattended runs, ``eval`` and ``bench``)
    Conservative synchronisation: sim time advances in steps of ``max_step_size`` sim seconds
    (Gazebo's name for its physics step), and the source publishes the next step only once every
    node that follows the clock has acknowledged the current one (each acknowledges each ``/clock``
    value it processed on ``team/clock_acks``, :mod:`robot_team.ros.clock`). Every node thus sees
    every sim time in order, and sim time never runs ahead of the slowest node by more than one
    step: the same decisions under any load, as fast as the team keeps up. A positive
    ``real_time_factor`` caps the speed (0: no cap). The lockstep LLM hold
    (:mod:`robot_team.llm.lockstep`) is one more condition of the step: sim time stands while a
    brain waits on its LLM.

**Jump ahead.** While nothing but scheduled work is pending, the follow clock jumps to the step
that brings the next scheduled event instead of stepping through the quiet time one step at a time (a
shift's quiet hours then cost almost nothing). Each follower tells, with every acknowledgement,
when its next scheduled work is (``ClockAck.next_event_s``: 0 while it has work now, ``inf`` when
nothing is scheduled); the clock source adds its own (a driving robot reaching its next pose; a
door change due). The clock jumps only when every counting follower said "nothing now" in its last **two**
acknowledgements, so that a message sent in one step (an arrival, a closed case) has a whole step
to reach its receiver and make it busy before anyone may jump; a follower that published events
since its previous acknowledgement says "work now" itself (the hospital's arrivals). A jump keeps
the grid of steps: it lands on the first step at or after the event, the step that would have
brought it, so every node sees the events at the same sim times as without it (nothing in the
jump's earlier steps: every follower said so): the same decisions. A jump that landed on the step
before (as before 2026-12-03) cost one more step per jump that reaches its event (a jump cut at
:data:`JUMP_AHEAD_MAX_S` has none): the 8 h benchmark shift stepped 1,230 sim s then, 1,036 now.
It is bounded by :data:`JUMP_AHEAD_MAX_S`, and never made while a follower is lost, a brain holds
the clock or a speed cap is set, nor when nothing is scheduled anywhere (what comes next comes
from outside, e.g. a deployment's FHIR Encounters: sim time then runs on step by step). Nor while
a node that follows the clock may not have been heard yet: fewer followers heard than the
launcher expects (``expected``, the node's ``min_clock_followers``), or a node matched on
``team/clock_acks`` whose first acknowledgement has not come. A follower the gate has not heard
from cannot say it is busy: a deployment's robot still starting up, DDS discovery lagging on a
loaded host (CI: the clock started with one of seven followers heard and jumped 780 s across a
robot's escort; every deadline of the case passed before the robot could report).

A follower that stops acknowledging (a node that died or hangs) cannot freeze the team: after
``follower_timeout_s`` wall seconds behind, it no longer counts (:meth:`FollowGate.ready` reports
it as lost, the node records it); its next acknowledgement makes it count again. While one is
lost, sim time runs at most at real time for a while (:data:`LOST_FOLLOWER_RATE`,
:data:`LOST_FOLLOWER_WINDOW_S`), and for :data:`RETURN_SETTLE_S` after it is back.

:class:`FollowGate` is the clock source's bookkeeping; :class:`RateCap` its optional speed cap.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

from robot_team.contracts.errors import check_choice

CLOCK_MODES = ('follow', 'wall')
"""The clock source's modes (see the module)."""

DEFAULT_MAX_STEP_SIZE_S = 1.0
"""Sim seconds per step of the ``follow`` clock: the team sees sim time in steps this long. The motion
and hospital engines integrate in their own substeps (0.1 s), and triggers are segment tests, so
the step sets only how often the nodes' timers and deadlines are looked at: their periods are
0.5 s and more, deadlines tens of seconds. Measured on onboarding (protocol brain, one process):
0.5 s steps take about twice the wall time of 1.0 s steps for the same decisions."""

LOST_FOLLOWER_RATE = 1.0
"""Sim seconds per wall second at most while a follower is lost, for :data:`LOST_FOLLOWER_WINDOW_S`.

A lost follower (a robot's host cut off the network, a node that hangs) lives on in wall time:
sim time must not outrun it, or a 30 s network cut would last minutes of sim time at a high
real-time factor and pass deadlines that a physical team, where sim time is wall time, would
meet. The cut lasts in sim what it lasts in wall time (less the ``follower_timeout_s`` the clock
waited for it first), whatever the cap and the load."""

LOST_FOLLOWER_WINDOW_S = 60.0
"""Wall s after a follower stopped counting during which :data:`LOST_FOLLOWER_RATE` applies. A
follower away longer is taken for gone (a node that died and is not restarted: the rest of the
episode must not run at real time); a cut that long meets the supervisor's deadlines in sim time
as it would in the world's, only sooner in wall time."""

RETURN_SETTLE_S = 5.0
"""Wall s after a lost follower is back during which :data:`LOST_FOLLOWER_RATE` still applies.

The clock sees a follower back when its acknowledgements arrive again; the rest of the graph
sees it back in wall time too, but by other means and in any order: the supervisor by DDS
liveliness, then it cancels the robot's stale goals before it tells the manager (at most
``supervisor_node.BACK_NOTICE_WAIT_S``, 5 wall s). A clock free to run at its full speed
meanwhile would spend the manager's deadline before the manager could know the robot is back
(CI: the 60 s issue-handling deadline of a 30 s network cut passed; runs beside busy loops saw
the liveliness up to 1.24 wall s after the acknowledgements, some 50 sim s at 40x). At real time, those
seconds cost what they would cost a physical team."""

CLOCK_SPREAD_S = DEFAULT_MAX_STEP_SIZE_S
"""How far apart two team nodes' ROS times may be, s: one step of the follow clock. A node receives
``/clock`` and the other nodes' messages on separate topics, in any order: a message sent at sim
time t (the hospital's arrival, published once the hospital saw t) may reach a node whose clock
still reads the step before (CI: the supervisor served an arrival stamped 1 s at its 0 s)."""


def served_at_s(now_s: float, stamp_s: float, spread_s: float = CLOCK_SPREAD_S) -> float:
    """Return the ROS time (s) at which a node serves a message stamped ``stamp_s`` that it got at ``now_s``.

    The later of the two while the stamp is at most ``spread_s`` ahead of the node's clock (its
    clock lags the sender's by up to a step, :data:`CLOCK_SPREAD_S`): what the message starts (a
    deadline) never starts before the world's event happened. A stamp further ahead is not
    believed (a sender's clock that is wrong must not delay a deadline): ``now_s``. A stamp
    behind ``now_s`` (a message in flight, unstamped: 0) gives ``now_s``.

    Raises
    ------
    ValueError
        If ``spread_s`` is negative.
    """
    if spread_s < 0.0:
        raise ValueError(f'spread_s must be >= 0 s, got {spread_s!r}')
    return stamp_s if now_s < stamp_s <= now_s + spread_s else now_s


JUMP_AHEAD_MAX_S = 60.0
"""Sim seconds one jump of the follow clock covers at most (:meth:`FollowGate.jump_target`): a long
quiet time is crossed in a few jumps, and the nodes' periodic timers (checkpoints, the RTLS
stream's refresh) still run at least this often in sim time."""

BUSY = 0.0
"""``ClockAck.next_event_s`` of a follower that has work now (the clock steps as usual)."""

NOTHING_SCHEDULED = float('inf')
"""``ClockAck.next_event_s`` of a follower with nothing to do and nothing scheduled."""


def unscheduled(at_rest: bool) -> float:
    """Return the ``next_event_s`` of a follower whose work only ever comes in messages, never on a schedule.

    :data:`NOTHING_SCHEDULED` when it is ``at_rest`` (nothing to do now), else :data:`BUSY`.
    """
    return NOTHING_SCHEDULED if at_rest else BUSY


QUIET_ACKS_TO_JUMP = 2
"""Consecutive acknowledgements with nothing to do each follower must have sent before a jump."""

DEFAULT_FOLLOWER_TIMEOUT_S = 10.0
"""Wall seconds a follower may hold the clock back before it no longer counts (a node that died).
Longer than a loaded host's scheduling delays (twenty teams on two cores: under a second)."""


def check_clock_mode(value: str, what: str = 'clock_mode') -> str:
    """Return ``value`` if it is a clock mode.

    Raises
    ------
    ValueError
        Naming ``what`` and the modes, otherwise.
    """
    return check_choice(value, CLOCK_MODES, what, 'a clock mode')


@dataclass
class _Follower:
    acked_s: float       # the latest sim time it acknowledged, s
    wall: float          # when that acknowledgement arrived (monotonic wall s)
    lost: bool = False
    lost_wall: float = 0.0   # when it stopped counting (monotonic wall s)
    back_wall: float | None = None   # when it counted again after it was lost (monotonic wall s)
    next_event_s: float = BUSY   # its next scheduled work, as of its latest acknowledgement (sim s)
    quiet_acks: int = 0          # its consecutive acknowledgements with nothing to do


class FollowGate:
    """Which nodes follow the clock, how far each has caught up, and whether the clock may step.

    Parameters
    ----------
    follower_timeout_s
        Wall seconds a follower may stay behind before it no longer counts.
    wall
        Monotonic wall clock, s (tests may pass their own).
    expected
        How many followers the launcher starts: no jump ahead until that many were heard (see
        the module); 0 when unknown.

    Thread-safe: :meth:`ack` runs in a subscription callback, :meth:`ready` in the clock's step.

    Raises
    ------
    ValueError
        If ``follower_timeout_s`` is not positive or ``expected`` is negative.
    """

    def __init__(self, follower_timeout_s: float = DEFAULT_FOLLOWER_TIMEOUT_S,
                 wall: Callable[[], float] = time.monotonic, expected: int = 0):
        if not follower_timeout_s > 0:
            raise ValueError(f'follower_timeout_s must be positive, got {follower_timeout_s}')
        if expected < 0:
            raise ValueError(f'expected must be 0 or more followers, got {expected}')
        self.follower_timeout_s = float(follower_timeout_s)
        self.expected = int(expected)
        self._wall = wall
        self._lock = threading.Lock()
        self._followers: dict[str, _Follower] = {}
        self._returned: list[str] = []
        self._asked: tuple[float, float] | None = None   # (sim time awaited, when it was first awaited: wall s)

    def ack(self, follower: str, t: float, next_event_s: float = BUSY) -> None:
        """Record that ``follower`` (a node's fully qualified name) processed sim time ``t`` (s).

        ``next_event_s``: the sim time of its next scheduled work, later than ``t`` when it has
        nothing to do now (:data:`NOTHING_SCHEDULED` for none); :data:`BUSY` (or any time not
        after ``t``) when it has work now.
        """
        quiet = next_event_s > t + 1e-9
        with self._lock:
            entry = self._followers.get(follower)
            if entry is None:
                self._followers[follower] = _Follower(float(t), self._wall(), next_event_s=float(next_event_s),
                                                      quiet_acks=int(quiet))
                return
            if t >= entry.acked_s:
                forward = t > entry.acked_s + 1e-9
                entry.acked_s, entry.wall, entry.next_event_s = float(t), self._wall(), float(next_event_s)
                # the same time again (a resend) counts no further, but work now resets the count
                entry.quiet_acks = (entry.quiet_acks + forward) if quiet else 0
                if entry.lost:
                    entry.lost, entry.back_wall = False, self._wall()
                    self._returned.append(follower)

    def jump_target(self, t: float, step: float, own_next_event_s: float = NOTHING_SCHEDULED,
                    max_jump_s: float = JUMP_AHEAD_MAX_S) -> float | None:
        """Return the sim time the clock may jump to from ``t`` (s) instead of one ``step``; None to step.

        The target is ``t`` plus a whole number of steps (at least two), the first step at or after
        the earliest next event of every follower and of the clock source itself
        (``own_next_event_s``: the step that brings the event, as stepping would), and at most
        ``max_jump_s`` ahead. None when nothing is scheduled
        anywhere (what comes next comes from outside, e.g. a deployment's FHIR Encounters: sim
        time then runs as usual, not in jumps), and unless every follower
        counts, acknowledged ``t`` and said "nothing now" in its last :data:`QUIET_ACKS_TO_JUMP`
        acknowledgements, and at least ``expected`` followers were heard (see the module). The
        caller checks the rest (holds, caps, lost followers, matched followers not heard yet).

        Raises
        ------
        ValueError
            If ``step`` is not positive.
        """
        if not step > 0:
            raise ValueError(f'step must be positive, got {step}')
        with self._lock:
            entries = list(self._followers.values())
            if (not entries or len(entries) < self.expected
                    or any(e.lost or e.acked_s < t - 1e-9 or e.quiet_acks < QUIET_ACKS_TO_JUMP for e in entries)):
                return None
            wake = min([own_next_event_s, *(e.next_event_s for e in entries)])
        if math.isinf(wake):   # nothing scheduled anywhere: what comes next comes from outside (a deployment)
            return None
        steps = min(math.ceil((wake - t) / step - 1e-9), math.floor(max_jump_s / step + 1e-9))
        return round(t + steps * step, 9) if steps >= 2 else None

    def ready(self, t: float) -> tuple[bool, list[tuple[str, float]]]:
        """Return whether every counting follower acknowledged sim time ``t`` (s), and who was lost now.

        The list holds ``(follower, wall seconds behind)`` for each follower that stopped counting
        at this call: it has not acknowledged ``t`` for over ``follower_timeout_s`` since ``t`` was
        first awaited (or since its own latest acknowledgement, if later), so a follower that was
        waiting with everyone else on a slower one is never counted behind for that wait.
        """
        lost = []
        with self._lock:
            now = self._wall()
            if self._asked is None or self._asked[0] != t:
                self._asked = (t, now)
            ready = True
            for name, entry in self._followers.items():
                if entry.lost or entry.acked_s >= t - 1e-9:
                    continue
                behind = now - max(entry.wall, self._asked[1])
                if behind > self.follower_timeout_s:
                    entry.lost, entry.lost_wall = True, now
                    lost.append((name, behind))
                else:
                    ready = False
        return ready, lost

    def gone(self, names: set[str] | frozenset[str]) -> list[str]:
        """Stop waiting for the followers whose node name (the last part of their name) is in ``names``.

        For nodes that died and stay down (the runner says so): they no longer count, at once,
        without :attr:`follower_timeout_s` first, and sim time is not held to
        :data:`LOST_FOLLOWER_RATE` for them (a dead node does not live on in wall time, as a host
        cut off the network does). They are still among those heard. An acknowledgement from one
        makes it count again. Returns the followers newly taken for gone (fully qualified names).
        """
        out = []
        with self._lock:
            for name, entry in self._followers.items():
                if name.rsplit('/', 1)[-1] in names and not (entry.lost and entry.lost_wall == -math.inf):
                    entry.lost, entry.lost_wall, entry.back_wall = True, -math.inf, None
                    out.append(name)
        return out

    def returned(self) -> list[str]:
        """Return and forget the followers that acknowledged again after they were lost."""
        with self._lock:
            out, self._returned = self._returned, []
        return out

    @property
    def heard(self) -> int:
        """How many followers acknowledged at least once (those that count now and those lost)."""
        with self._lock:
            return len(self._followers)

    @property
    def followers(self) -> list[str]:
        """The followers that count now (sorted)."""
        with self._lock:
            return sorted(name for name, entry in self._followers.items() if not entry.lost)

    def lost_within(self, window_s: float) -> bool:
        """Return whether a follower is lost now and stopped counting less than ``window_s`` wall s ago."""
        with self._lock:
            now = self._wall()
            return any(entry.lost and now - entry.lost_wall < window_s for entry in self._followers.values())

    def back_within(self, settle_s: float) -> bool:
        """Return whether a follower that was lost counts again since less than ``settle_s`` wall s."""
        with self._lock:
            now = self._wall()
            return any(not entry.lost and entry.back_wall is not None and now - entry.back_wall < settle_s
                       for entry in self._followers.values())

    def real_time_due(self, window_s: float = LOST_FOLLOWER_WINDOW_S, settle_s: float = RETURN_SETTLE_S) -> bool:
        """Return whether sim time must run at most at :data:`LOST_FOLLOWER_RATE` now.

        While a follower is lost (for ``window_s`` wall s after it stopped counting) and for
        ``settle_s`` wall s after one is back (see :data:`RETURN_SETTLE_S`).
        """
        return self.lost_within(window_s) or self.back_within(settle_s)


class RateCap:
    """An upper bound on sim seconds per wall second for the ``follow`` clock.

    Parameters
    ----------
    real_time_factor
        Sim seconds per wall second at most; 0 (or less) for no cap.
    burst_s
        Sim seconds the allowance may run ahead of the clock (one step: no burst after a pause).
    wall
        Monotonic wall clock, s.
    """

    def __init__(self, real_time_factor: float, burst_s: float, wall: Callable[[], float] = time.monotonic):
        self.real_time_factor = float(real_time_factor)
        self.burst_s = float(burst_s)
        self._wall = wall
        self._last: float | None = None
        self._allowed = 0.0

    def allows(self, t: float, step: float, at_most: float | None = None) -> bool:
        """Return whether the clock may step from ``t`` to ``t + step`` (sim s) now; consume it if so.

        ``at_most``: a lower cap for now (sim s per wall s), e.g. :data:`LOST_FOLLOWER_RATE` while a
        follower is lost; None: ``real_time_factor`` alone.
        """
        factor = self.real_time_factor
        if at_most is not None:
            factor = at_most if factor <= 0 else min(factor, at_most)
        if factor <= 0:
            return True
        now = self._wall()
        if self._last is not None:
            self._allowed = min(self._allowed + (now - self._last) * factor, step + self.burst_s)
        self._last = now
        if self._allowed + 1e-9 >= step:
            self._allowed -= step
            return True
        return False
