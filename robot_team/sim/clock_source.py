"""The simulator's clock source: when and how far sim time advances, and ``/clock``.

:class:`SimClock` ticks on a steady (wall) timer and steps the simulation through a callback of
its node (``motion_sim``, :mod:`robot_team.sim.motion_node`), then publishes ``/clock``:

* ``wall``: sim time advances by ``real_time_factor`` x the wall time since the last tick (at
  most :data:`MAX_TICK_WALL_S` of it), as Gazebo's real-time factor;
* ``follow``: one step of ``max_step_size`` once every follower acknowledged the current time
  on ``team/clock_acks`` (:class:`~robot_team.contracts.clock_sync.FollowGate`), at most at the speed cap
  (:class:`~robot_team.contracts.clock_sync.RateCap`), jumping across quiet time where nothing is due
  (``jump_ahead``); the current time again after :data:`FOLLOW_RESEND_S` without a step.

In both, sim time holds while paused, until every expected node subscribed to ``/clock`` (and,
following, acknowledged once), and while a brain waits on its LLM (lockstep:
:mod:`robot_team.llm.lockstep`; the tick slows to :data:`HELD_TICK_S` then). Goals waiting for
sim time to pass wait on :meth:`SimClock.wait_tick`.

Events (``team/events``, ``EventKind.SIM``, ``data.what``): ``clock_started``, ``clock_paused``,
``clock_resumed``, ``clock_jump``, ``clock_follower_lost``, ``clock_follower_back``,
``clock_follower_gone`` (and
``clock_hold_expired``, from lockstep); ``EventKind.INPUT_ERROR`` if the clock starts short of
its subscribers.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock as ClockMsg

from robot_team.contracts.clock_sync import LOST_FOLLOWER_RATE, FollowGate, RateCap
from robot_team.contracts.events import EventKind
from robot_team.llm import lockstep
from robot_team.msg import ClockAck
from robot_team.contracts.names import CLOCK, CLOCK_ACKS
from robot_team.ros.clock import clock_acks_qos
from robot_team.ros.stamps import s_to_stamp, stamp_to_s
from robot_team.sim.common import SimEvent
from robot_team.sim.motion import MotionEngine
from robot_team.sim.node_common import SimRecord

MAX_TICK_WALL_S = 0.5       # a stalled tick advances sim time by at most this much wall time
FOLLOW_RESEND_S = 0.5
"""Follow clock: wall s without a step after which the current time is sent again.

For a follower that lost a ``/clock`` (reliable QoS: a message lost on a network cut, or a node
that missed the last value): the clock waits for its acknowledgement. A resend costs a whole step of
callbacks (every node takes ``/clock`` again and acknowledges), and a loaded machine's steps take
more than 0.1 s (the hospital's update and forecast on the critical path): at 0.1 s, 9 of one slow
onboarding run's 47 steps were resends (2026-12-03), each adding load to the step it waited for."""
HELD_TICK_S = 0.5
"""Wall s between two ticks while a brain holds sim time (lockstep, :mod:`robot_team.llm.lockstep`).

Nothing steps during a hold, so the tick only looks for expired holds and resends ``/clock``;
at ``tick_hz`` each tick wakes the team's executor, which in one process rebuilt its wait set
about 100 times a second and took half a core from the LLM it waited on (measured with the
local endpoint on 2 cores). The last hold's release restores ``tick_hz`` and steps at once."""
UNCAPPED_FOLLOW_TICK_S = 0.05
"""Wall s between two ticks of a follow clock with no speed cap (``real_time_factor`` 0).

Such a clock steps on the last acknowledgement it awaited, never on a tick: the tick only
resends ``/clock`` (:data:`FOLLOW_RESEND_S`), notices lost followers, starts the clock once its
subscribers matched and steps a clock resumed or slowed down for a lost follower. At ``tick_hz``
(100) its ticks were a tenth of a team's callbacks in one process (`robot-team bench`: 752 of
6,970), each a wake and a wait set rebuilt; a capped clock, which must step as soon as the cap
allows, keeps ``tick_hz``."""


@dataclass(frozen=True)
class ClockSettings:
    """How the clock runs (the ``motion_sim`` parameters of the same names; times in s).

    ``mode`` is ``wall`` or ``follow``; ``real_time_factor`` is sim s per wall s (``follow``: an
    upper bound, 0 none); ``jump_ahead`` is already off where it does not apply (``wall``, a cap).
    ``end_s``: the run's time limit in sim s (the runner stops the episode once sim time passes
    it; ``inf``: none): a jump ahead never passes it, and none is taken from it on, so a run
    ends at the sim time it would step to. ``min_clock_followers``: how many nodes the launcher
    starts that follow the clock (``follow``): sim time starts once that many acknowledged (or
    after ``clock_start_timeout_s``, recorded), and never jumps ahead while fewer were heard.
    """

    mode: str
    real_time_factor: float
    tick_hz: float
    max_step_size: float
    follower_timeout_s: float
    clock_start_timeout_s: float
    min_clock_subscribers: int
    jump_ahead: bool
    llm_clock: str
    end_s: float = math.inf
    min_clock_followers: int = 0

    def describe(self) -> str:
        """Return the clock's mode in words, e.g. ``'follow clock, steps of 0.25 s, no speed cap'``."""
        if self.mode == 'wall':
            return f'wall clock, real-time factor {self.real_time_factor:g}'
        cap = f'at most {self.real_time_factor:g}x' if self.real_time_factor > 0 else 'no speed cap'
        return f'follow clock, steps of {self.max_step_size:g} s, {cap}'


class SimClock:
    """The clock source of a simulator node: ticks, steps the simulation, publishes ``/clock``.

    Parameters
    ----------
    node
        The node (``motion_sim``): the clock's timer, ``/clock`` publisher and subscriptions are
        its; lockstep declares its ``max_hold_s`` and ``hold_step_s`` parameters.
    settings
        How the clock runs.
    engine
        The simulation: its sim time (``t``, s) and next change (``next_event_s()``), read with
        ``lock`` held.
    lock
        Serializes every call into the engine (the node's).
    record
        Where the clock's events go.
    step
        ``step(dt)`` advances the simulation by ``dt`` sim s and publishes what it did (lock
        held); returns the sim time reached (s) and the events to record, which the clock
        records after publishing ``/clock``.
    busy
        Returns whether a goal is accepted but not driving, or ended but not answered (the follow
        clock does not jump ahead then).
    paused
        Start paused (:meth:`set_paused` resumes).
    callback_group
        For the subscriptions (acknowledgements, holds): reentrant. The tick has its own
        mutually exclusive group.

    Raises
    ------
    ValueError
        If the LLM clock or a lockstep parameter is invalid.

    Notes
    -----
    Thread-safe: the tick, the acknowledgements and the holds may come on any executor thread.
    """

    def __init__(self, node: Node, settings: ClockSettings, engine: MotionEngine, lock: threading.Lock,
                 record: SimRecord, step: Callable[[float], tuple[float, list[SimEvent]]],
                 busy: Callable[[], bool], paused: bool, callback_group):
        self.settings = settings
        self._engine = engine
        self._lock = lock
        self._record = record
        self._step = step
        self._busy = busy
        self._paused = bool(paused)
        self._stopping = False
        self._started = False
        self._wait_began = time.monotonic()
        self._tick_cv = threading.Condition()
        self._last_wall: float | None = None
        self._last_publish_wall = 0.0
        self._clock_pub = node.create_publisher(ClockMsg, CLOCK, 10)
        # The LLM clock: in lockstep, sim time holds while a brain waits on its LLM (robot_team.llm.lockstep).
        self._holds = lockstep.attach_clock_source(node, settings.llm_clock, record.emitter.emit, callback_group,
                                                   on_update=self._holds_changed)
        self._slow_tick = False              # ticking every HELD_TICK_S (a hold is active)
        self._pace_lock = threading.Lock()
        self._gate = self._cap = None
        if settings.mode == 'follow':
            self._gate = FollowGate(settings.follower_timeout_s, expected=settings.min_clock_followers)
            self._cap = RateCap(settings.real_time_factor, settings.max_step_size)
            self._ack_sub = node.create_subscription(ClockAck, CLOCK_ACKS, self._ack_callback,
                                                     clock_acks_qos(subscriber=True), callback_group=callback_group)
        # The clock source's timer must run on wall time, never on sim time.
        self.timer = node.create_timer(self._running_tick_s(), self.tick,
                                       callback_group=MutuallyExclusiveCallbackGroup(),
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))

    @property
    def paused(self) -> bool:
        """Whether sim time is held (``paused``)."""
        return self._paused

    @property
    def followers(self) -> list[str]:
        """The nodes the follow clock waits for (fully qualified names; [] on the wall clock)."""
        return self._gate.followers if self._gate is not None else []

    def followers_gone(self, names: list[str]) -> None:
        """Stop waiting for the followers named ``names`` (node names): they died and stay down.

        See :meth:`~robot_team.contracts.clock_sync.FollowGate.gone`; each one is recorded (``sim``
        event ``clock_follower_gone``). Nothing on the wall clock.
        """
        if self._gate is None:
            return
        with self._lock:
            for name in self._gate.gone(frozenset(names)):
                self._record.emitter.emit(EventKind.SIM, f'{name} stays down: sim time goes on without it',
                                          target=name, what='clock_follower_gone', follower=name)
        self._follow_step()

    def set_paused(self, paused: bool) -> None:
        """Hold (``paused``) or resume sim time; once the clock started, record ``clock_paused``/``clock_resumed``."""
        with self._lock:
            self._paused = bool(paused)
            if self._started:
                what = 'clock_paused' if self._paused else 'clock_resumed'
                self._record.emitter.emit(EventKind.SIM, f'sim time {what.split("_")[1]} at '
                                          f'{self._engine.t:.1f} s', what=what, sim_time_s=self._engine.t)

    def wait_tick(self) -> None:
        """Wait for the next step of sim time (at most 0.1 wall s)."""
        with self._tick_cv:
            self._tick_cv.wait(timeout=0.1)

    def wake(self) -> None:
        """Wake every waiter of :meth:`wait_tick`."""
        with self._tick_cv:
            self._tick_cv.notify_all()

    def stop(self) -> None:
        """Stop ticking and stepping (a tick in flight finishes first if the caller then takes the lock)."""
        self._stopping = True
        self.timer.cancel()

    def tick(self) -> None:
        """Advance the simulation one tick and publish ``/clock`` (see :mod:`robot_team.contracts.clock_sync`).

        ``wall``: by real_time_factor x the wall time since the last tick. ``follow``: one step
        if every follower caught up (steps also follow each acknowledgement); the current time
        again if none came for a while (a lost message must not stall the team).
        """
        now = time.monotonic()
        held = self._holds is not None and self._holds.held()   # lockstep: a brain waits on its LLM
        if self._holds is not None:
            self._pace(held)
        if self._gate is not None:
            if not self._follow_step() and now - self._last_publish_wall > FOLLOW_RESEND_S:
                self._advance(0.0)
            return
        if held:
            self._last_wall = now
            return
        tick_hz = self.settings.tick_hz
        last = self._last_wall if self._last_wall is not None else now - 1.0 / tick_hz
        wall_dt, self._last_wall = min(now - last, MAX_TICK_WALL_S), now
        held_for = self._holds.take_step() if self._holds is not None else 0.0
        self._advance(wall_dt * self.settings.real_time_factor + held_for)

    def _running_tick_s(self) -> float:
        """Return the tick's period (wall s) while no hold is active.

        ``1/tick_hz``; a follow clock with no speed cap ticks at most every :data:`UNCAPPED_FOLLOW_TICK_S`.
        """
        period = 1.0 / self.settings.tick_hz
        if self.settings.mode == 'follow' and self.settings.real_time_factor <= 0:
            return max(period, UNCAPPED_FOLLOW_TICK_S)
        return period

    def _pace(self, held: bool) -> bool:
        """Tick every :data:`HELD_TICK_S` while ``held``, else every :meth:`_running_tick_s`.

        Returns whether the pace changed.
        """
        with self._pace_lock:
            if held == self._slow_tick:
                return False
            self._slow_tick = held
            self.timer.timer_period_ns = int(1e9 * (HELD_TICK_S if held else self._running_tick_s()))
            self.timer.reset()
            return True

    def _holds_changed(self) -> None:
        """On each hold or release: slow the tick while held; once none is left, tick at ``tick_hz`` and step now."""
        held = self._holds.held()
        if not self._pace(held) or held:
            return
        if self._gate is not None:
            self._follow_step()
        else:
            self._last_wall = time.monotonic()   # the held wall time is not sim time (the tick owes none)

    def _ack_callback(self, msg: ClockAck) -> None:
        """Record a follower's acknowledgement; step the follow clock if it was the last one awaited."""
        self._gate.ack(msg.node, stamp_to_s(msg.clock), msg.next_event_s)
        self._follow_step()

    def _follow_step(self) -> bool:
        """Step the follow clock once if every follower caught up, no hold is active and the cap allows.

        Returns whether sim time advanced.
        """
        if self._holds is not None and self._holds.held():   # a brain waits on its LLM
            return False
        with self._lock:
            if self._stopping:
                return False
            ready, lost = self._gate.ready(self._engine.t)
            for name, behind in lost:
                self._record.emitter.emit(
                    EventKind.SIM, f'{name} stopped following the clock ({behind:.1f} wall s behind): sim time goes '
                    'on without it', target=name, what='clock_follower_lost', follower=name,
                    behind_s=round(behind, 3))
            for name in self._gate.returned():
                self._record.emitter.emit(EventKind.SIM, f'{name} follows the clock again', target=name,
                                          what='clock_follower_back', follower=name)
            if not ready or not self._runs():    # (paused, or waiting for the subscribers)
                return False
            held_for = self._holds.take_step() if self._holds is not None else 0.0
            step = self.settings.max_step_size + held_for
            lost = self._gate.real_time_due()   # sim time not ahead of a cut-off host, nor of its return
            if not self._cap.allows(self._engine.t, step, LOST_FOLLOWER_RATE if lost else None):
                return False
            if self.settings.jump_ahead and not lost and not held_for:
                step = self._jump_step(step)
            self._advance_locked(step)
        self.wake()
        return True

    def _jump_step(self, step: float) -> float:
        """Return the step to take now: a jump across quiet time where the gate allows one, else ``step`` (lock held).

        The engine's own next change counts (a driving robot reaching its next pose, a door
        change due), and the run's end (``end_s``); a goal accepted but not yet driving, or ended
        but not yet answered, holds the jump (``busy``), and so does a follower not heard from yet
        (:meth:`_unheard`).
        """
        if self._busy():
            return step
        t = self._engine.t
        if t >= self.settings.end_s:   # the run ends at the next step: it reads the sim time it would step to
            return step
        own = min(self._engine.next_event_s(), self.settings.end_s)
        target = self._gate.jump_target(t, self.settings.max_step_size, own)
        if target is None or self._unheard() > 0:   # (a graph query: only where a jump is otherwise due)
            return step
        self._record.emitter.emit(EventKind.SIM, f'sim time jumps from {t:g} s to {target:g} s: nothing to do '
                                  'before then', what='clock_jump', from_s=t, to_s=target)
        return target - t

    def _advance(self, step: float) -> None:
        """Advance sim time by ``step`` s (none while the clock may not run); publish; wake the goals."""
        with self._lock:
            if self._stopping:
                return
            self._advance_locked(step if self._runs() else 0.0)
        self.wake()

    def _advance_locked(self, step: float) -> None:
        """Step the simulation by ``step`` sim s, publish ``/clock``, record the step's events (lock held)."""
        t, events = self._step(step)
        self._clock_pub.publish(ClockMsg(clock=s_to_stamp(t)))
        self._last_publish_wall = time.monotonic()
        self._record.sim_events(events)

    def _runs(self) -> bool:
        """Return whether sim time may advance now (lock held): not paused, every subscriber there."""
        if self._paused:
            return False
        if not self._started:
            settings = self.settings
            subscribers = self._clock_pub.get_subscription_count()
            waited = time.monotonic() - self._wait_began
            unheard = self._unheard() if self._gate is not None else 0
            if subscribers < settings.min_clock_subscribers or unheard > 0:
                if waited < settings.clock_start_timeout_s:
                    return False
                unheard_text = f', {unheard} clock follower(s) not heard from' if unheard > 0 else ''
                self._record.input_error(
                    f'/clock has {subscribers} of the {settings.min_clock_subscribers} subscribers expected'
                    f'{unheard_text} after {waited:.0f} s: starting sim time anyway', target=CLOCK,
                    subscribers=subscribers, expected=settings.min_clock_subscribers,
                    followers_unheard=max(unheard, 0))
            self._started = True
            self._record.emitter.emit(EventKind.SIM, f'sim time started ({subscribers} /clock subscribers)',
                                      what='clock_started', subscribers=subscribers,
                                      real_time_factor=settings.real_time_factor, clock_mode=settings.mode,
                                      followers=self.followers)
        return True

    def _unheard(self) -> int:
        """Return how many nodes that follow the clock have not acknowledged yet (follow clock).

        The larger of the matched publishers on ``team/clock_acks`` and ``min_clock_followers``,
        less the followers heard (those lost included: the gate knows of them).
        """
        heard = self._gate.heard
        return max(self._ack_sub.get_publisher_count() - heard, self.settings.min_clock_followers - heard, 0)
