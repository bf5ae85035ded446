"""Sim time held while the runner restarts a node that died (rclpy-free).

A node the runner restarts (:mod:`robot_team.run.processes`) is away for wall time: its exit
noticed, the restart delay, its process start, DDS discovery, and the supervisor seeing it back
through DDS liveliness. All of it depends on the machine and how busy it is, none of it on the ED.
On the follow clock every wall second is tens of sim seconds, in which the workflow's deadlines
passed before the team had the node back (CI: the info-collection robot killed as its task
started; sim time ran 61 s in 2.6 wall s while it restarted, and the supervisor escalated the
task it had closed when the robot was lost, before the manager could give it to the robot again).

So the runner holds sim time from a node's exit, once its restart is decided, until the team has
it back, on ``team/clock_holds`` with reason :data:`robot_team.llm.lockstep.NODE_RESTART` (charged
no sim time). "Back" is two facts, in either order: the new process's own ``node_started`` is in
the record (the record hears it: what it does from then on is recorded), and, for a node the
supervisor watches (:func:`robot_team.contracts.liveness.watched`), the supervisor's ``robot_back``
(the team hears it), or its ``robot_seen`` where it never heard the dead incarnation (CI: a display
robot killed 0.75 s after its start was never "lost" for the supervisor, so never "back", and its
hold waited 20 wall s). The supervisor itself needs its ``node_started`` only. Discovery is per pair
of processes: in CI the supervisor saw a restarted display robot back while the runner's recorder
had not yet matched the new process's events writer, sim time jumped to the episode's end 2 wall s
later, and the robot's second ``node_started`` never reached the record.

A node that stays down ends its hold at once. The safety nets, each recorded: a node with one of
the two facts but not the other within :data:`BACK_WAIT_S` wall seconds ends its hold
(``not_seen_back``: the supervisor may be down too; ``not_recorded``: the record never heard it),
and the clock source expires any hold after ``max_hold_s``.

A deployment's launch file restarts nodes with launch's ``respawn``: no runner holds sim time
there, as none should on the wall clock, where a restart costs what it costs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from robot_team.contracts.events import EventKind, TeamEventModel

BACK_WAIT_S = 20.0
"""Wall s after the first of a restarted node's two "back" facts (its ``node_started`` recorded, the
supervisor's ``robot_back`` or ``robot_seen``) within which the other should come; its hold ends then anyway
(``released_by`` ``not_seen_back`` or ``not_recorded``). The supervisor's liveliness takes up to
the participant lease (3 s) and its back notice up to 5 s more
(:data:`robot_team.agents.supervisor_node.BACK_NOTICE_WAIT_S`)."""

SUPERVISOR_HAS_IT = frozenset({EventKind.ROBOT_BACK.value, EventKind.ROBOT_SEEN.value})
"""The supervisor's events that say it has a restarted node again: back after a loss, or heard first."""


@dataclass(frozen=True)
class HoldEnded:
    """A restart's hold that ended: ``node``, the hold's ID, why (``released_by``) and its wall s."""

    node: str
    hold_id: str
    released_by: str
    """``robot_back`` or ``robot_seen`` (the supervisor saw it back, or heard it first, and its ``node_started``
    is recorded), ``node_started``
    (a node nobody watches started), ``not_seen_back``, ``not_recorded``, ``stays_down`` or ``episode_end``."""
    held_wall_s: float


@dataclass
class _Held:
    hold_id: str
    since: float          # epoch s (events' wall_time) of the crash
    started: float | None = None   # epoch s of the new incarnation's node_started
    back: float | None = None      # epoch s of the supervisor's robot_back (or robot_seen) for it
    back_kind: str = ''            # which of the two it was

    def first_fact(self) -> float | None:
        facts = [t for t in (self.started, self.back) if t is not None]
        return min(facts) if facts else None


class RestartHolds:
    """The holds of the nodes being restarted, begun and ended through ``begin``/``end``.

    Parameters
    ----------
    begin
        ``begin() -> hold_id`` starts a hold (e.g. :meth:`robot_team.llm.lockstep.ClockHoldPublisher.begin`).
    end
        ``end(hold_id)`` ends it.
    watched
        The nodes whose return the supervisor records (``robot_back``, ``robot_seen``).
    back_wait_s
        See :data:`BACK_WAIT_S`.
    wall
        Epoch wall clock, s (events' ``wall_time`` is epoch s).

    Notes
    -----
    Thread-safe: the runner's wait loop calls :meth:`crashed` and :meth:`overdue`, the recorder's
    callback calls :meth:`observe`; ``begin`` and ``end`` are called without the lock.
    """

    def __init__(self, begin: Callable[[], str], end: Callable[[str], None], watched: Iterable[str],
                 back_wait_s: float = BACK_WAIT_S, wall: Callable[[], float] = time.time):
        self._begin, self._end = begin, end
        self.watched = frozenset(watched)
        self.back_wait_s = float(back_wait_s)
        self._wall = wall
        self._held: dict[str, _Held] = {}
        self._lock = threading.Lock()

    def crashed(self, node: str, restart: bool) -> str | HoldEnded | None:
        """Record that ``node``'s process ended; ``restart``: whether it starts again.

        Returns the new hold's ID (a restart), the hold that ended (it stays down, after a restart
        that held), or None (no hold: it stays down, or it was held already and still is).
        """
        with self._lock:
            held = self._held.get(node)
            if held is not None and restart:
                held.started = held.back = None   # it died again before it was back: the same hold goes on
                return None
            if held is None and not restart:
                return None
            if held is not None:
                del self._held[node]
        if not restart:
            self._end(held.hold_id)
            return HoldEnded(node, held.hold_id, 'stays_down', round(self._wall() - held.since, 3))
        hold_id = self._begin()
        with self._lock:
            self._held[node] = _Held(hold_id, self._wall())
        return hold_id

    def observe(self, event: TeamEventModel) -> list[HoldEnded]:
        """Take one recorded event; return the holds it ended (``robot_back``, ``robot_seen``, ``node_started``).

        A watched node's hold ends on the later of its ``node_started`` and the supervisor's
        ``robot_back`` or ``robot_seen`` (both after its crash); another node's on its ``node_started``.
        """
        ended: list[HoldEnded] = []
        with self._lock:
            node, held = '', None
            if event.kind in SUPERVISOR_HAS_IT:
                node = str(event.data.get('node', ''))
                held = self._held.get(node) if node in self.watched else None
                if held is not None and event.wall_time >= held.since:
                    held.back, held.back_kind = event.wall_time, event.kind
            elif event.kind == EventKind.NODE_STARTED.value:
                node, held = event.actor, self._held.get(event.actor)
                if held is not None and event.wall_time >= held.since:
                    held.started = event.wall_time
            if held is not None and held.started is not None and (held.back is not None or node not in self.watched):
                released_by = held.back_kind if node in self.watched else 'node_started'
                ended.append(HoldEnded(node, held.hold_id, released_by,
                                       round(max(held.started, held.back or 0.0) - held.since, 3)))
                del self._held[node]
        for item in ended:
            self._end(item.hold_id)
        return ended

    def overdue(self) -> list[HoldEnded]:
        """End and return the holds with one "back" fact over ``back_wait_s`` ago and not the other.

        ``released_by`` says which is missing: ``not_seen_back`` (no ``robot_back`` or ``robot_seen``) or
        ``not_recorded`` (no ``node_started`` in the record).
        """
        now = self._wall()

        def late(held: _Held) -> str | None:
            first = held.first_fact()
            if first is None or now - first <= self.back_wait_s:
                return None
            return 'not_seen_back' if held.back is None else 'not_recorded'
        return self._end_where(late, now)

    def end_all(self) -> list[HoldEnded]:
        """End and return every hold (the episode ends)."""
        return self._end_where(lambda held: 'episode_end', self._wall())

    def _end_where(self, why: Callable[[_Held], str | None], now: float) -> list[HoldEnded]:
        """End the holds for which ``why(held)`` gives a ``released_by``; return them."""
        with self._lock:
            ended = [HoldEnded(node, held.hold_id, reason, round(now - held.since, 3))
                     for node, held in self._held.items() if (reason := why(held)) is not None]
            for item in ended:
                del self._held[item.node]
        for item in ended:
            self._end(item.hold_id)
        return ended

    @property
    def holding(self) -> list[str]:
        """The nodes whose restart holds sim time now."""
        with self._lock:
            return sorted(self._held)
