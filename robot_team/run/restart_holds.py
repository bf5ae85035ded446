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
no sim time): the supervisor's ``robot_back`` for a node it watches
(:func:`robot_team.contracts.liveness.watched`), the node's own ``node_started`` for the others
(the supervisor itself). A node that stays down ends its hold at once. The safety nets, each
recorded: a node started but not seen back within :data:`BACK_WAIT_S` wall seconds ends its hold
(the supervisor may be down too), and the clock source expires any hold after ``max_hold_s``.

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
"""Wall s after a restarted node's ``node_started`` within which the supervisor should see it back;
its hold ends then anyway (``released_by`` ``not_seen_back``). The supervisor's liveliness takes up to
the participant lease (3 s) and its back notice up to 5 s more
(:data:`robot_team.agents.supervisor_node.BACK_NOTICE_WAIT_S`)."""


@dataclass(frozen=True)
class HoldEnded:
    """A restart's hold that ended: ``node``, the hold's ID, why (``released_by``) and its wall s."""

    node: str
    hold_id: str
    released_by: str
    """``robot_back`` (the supervisor saw it back), ``node_started`` (a node nobody watches started),
    ``not_seen_back``, ``stays_down`` or ``episode_end``."""
    held_wall_s: float


@dataclass
class _Held:
    hold_id: str
    since: float          # epoch s (events' wall_time) of the crash
    started: float | None = None   # epoch s of the new incarnation's node_started


class RestartHolds:
    """The holds of the nodes being restarted, begun and ended through ``begin``/``end``.

    Parameters
    ----------
    begin
        ``begin() -> hold_id`` starts a hold (e.g. :meth:`robot_team.llm.lockstep.ClockHoldPublisher.begin`).
    end
        ``end(hold_id)`` ends it.
    watched
        The nodes whose return the supervisor records as ``robot_back``.
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
                held.started = None     # it died again before it was back: the same hold goes on
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
        """Take one recorded event; return the holds it ended (``robot_back``, ``node_started``)."""
        ended: list[HoldEnded] = []
        with self._lock:
            if event.kind == EventKind.ROBOT_BACK.value:
                node = str(event.data.get('node', ''))
                held = self._held.get(node) if node in self.watched else None
                if held is not None and event.wall_time >= held.since:
                    ended.append(HoldEnded(node, held.hold_id, 'robot_back', round(event.wall_time - held.since, 3)))
            elif event.kind == EventKind.NODE_STARTED.value:
                held = self._held.get(event.actor)
                if held is not None and event.wall_time >= held.since:
                    held.started = event.wall_time
                    if event.actor not in self.watched:
                        ended.append(HoldEnded(event.actor, held.hold_id, 'node_started',
                                               round(event.wall_time - held.since, 3)))
            for item in ended:
                del self._held[item.node]
        for item in ended:
            self._end(item.hold_id)
        return ended

    def overdue(self) -> list[HoldEnded]:
        """End and return the holds of nodes started over ``back_wait_s`` ago and not seen back."""
        now = self._wall()
        return self._end_where(lambda held: held.started is not None and now - held.started > self.back_wait_s,
                               'not_seen_back', now)

    def end_all(self) -> list[HoldEnded]:
        """End and return every hold (the episode ends)."""
        return self._end_where(lambda held: True, 'episode_end', self._wall())

    def _end_where(self, due: Callable[[_Held], bool], released_by: str, now: float) -> list[HoldEnded]:
        with self._lock:
            ended = [HoldEnded(node, held.hold_id, released_by, round(now - held.since, 3))
                     for node, held in self._held.items() if due(held)]
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
