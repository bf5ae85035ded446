"""What the simulator's two engines share: ground-truth events, polylines, angles, segment tests. No rclpy here.

The embedded simulator is split along the line a real deployment draws: robot motion
(:mod:`robot_team.sim.motion`, what Gazebo and Nav2 provide) and the hospital's systems
(:mod:`robot_team.sim.hospital`: HCWs, RTLS, paging, badge readers, room displays). Both record
what happens as :class:`SimEvent` s; :func:`describe` words them for the event record.

Units: SI (m, s, rad), poses in the map frame (REP-103/105).
"""

from __future__ import annotations

import bisect
import copy
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from robot_team.contracts.names import RobotId, Role

BASE_ROBOTS: tuple[RobotId, ...] = tuple(RobotId(r.value) for r in Role if r is not Role.MANAGER)
"""The robots with a mobile base (every role but the manager): the ones that move on the floor."""


class SimInputError(ValueError):
    """A request the simulator cannot act on (unknown robot, HCW or room); the message says why."""


@dataclass
class SimEvent:
    """One ground-truth event: ``kind`` (see :func:`describe`), sim time ``t`` (s) and details."""

    kind: str
    t: float
    data: dict[str, Any] = field(default_factory=dict)


def run_ahead_copy(engine, shared: Iterable):
    """Return a copy of a simulation ``engine`` that may run ahead without changing it (a forecast).

    A deep copy, but for the objects in ``shared`` (the floor, its grid, the scenario: read-only
    while the engine runs), with its event log (``_log``, an :class:`EventLog`) stamping the copy's
    own time ``t``.
    """
    ahead = copy.deepcopy(engine, memo={id(obj): obj for obj in shared})
    ahead._log._clock = lambda: ahead.t
    return ahead


def substeps(t: float, dt: float, max_h: float):
    """Yield ``(time after, length)`` of each substep from sim time ``t`` over ``dt`` (s), at most ``max_h`` long.

    The substeps end on the grid of multiples of ``max_h`` (and at ``t + dt``), each time rounded to
    1 ns: the same times and lengths however ``dt`` is cut into steps (a jump of the follow clock
    or one step at a time), so an engine's state after them is the same.
    """
    end = round(t + max(float(dt), 0.0), 9)
    while t < end - 1e-12:
        t_next = min(round((math.floor(t / max_h + 1e-6) + 1) * max_h, 9), end)
        yield t_next, t_next - t
        t = t_next


class EventLog:
    """An outbox of :class:`SimEvent` s stamped with the owner's sim time (``clock()``, s)."""

    def __init__(self, clock):
        self._clock = clock
        self._outbox: list[SimEvent] = []

    def emit(self, kind: str, **data: Any) -> SimEvent:
        """Record one event at the current sim time and return it."""
        event = SimEvent(kind, self._clock(), data)
        self._outbox.append(event)
        return event

    def drain(self) -> list[SimEvent]:
        """Return and forget the events recorded since the last call."""
        events, self._outbox = self._outbox, []
        return events


@dataclass
class Timeline:
    """Changes at given sim times, handed out once each as time reaches them (a scenario's schedules).

    ``changes`` are objects with ``at_s`` (sim s), sorted by it with file order on ties
    (:meth:`of`); :attr:`applied` counts those handed out (kept in a simulator's checkpoint).
    """

    changes: list = field(default_factory=list)
    applied: int = 0

    @classmethod
    def of(cls, changes: Iterable = ()) -> 'Timeline':
        """Return the timeline of ``changes`` (any order; stable by ``at_s``)."""
        return cls(sorted(changes, key=lambda change: change.at_s))

    @property
    def next_at(self) -> float:
        """The sim time (s) of the next change not handed out yet (``inf``: none left)."""
        return self.changes[self.applied].at_s if self.applied < len(self.changes) else math.inf

    def due(self, t: float) -> list:
        """Return the changes due by sim time ``t`` (s) not handed out yet, in order, and count them handed out."""
        done = []
        while self.applied < len(self.changes) and t >= self.changes[self.applied].at_s - 1e-9:
            done.append(self.changes[self.applied])
            self.applied += 1
        return done


@dataclass
class DoorTimeline(Timeline):
    """The floor's closed doors over sim time: those closed at the start, then changes at given times.

    One implementation for both simulator engines (robots' motion, the hospital's HCWs), so they
    agree on which door is closed when. ``changes`` are :class:`robot_team.contracts.config.DoorChange`
    (``at_s``, ``room``, ``state``), sorted by ``at_s`` (:attr:`robot_team.contracts.config.Scenario.door_schedule`).
    """

    closed: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, closed: Iterable[str] = (), changes: Iterable = ()) -> 'DoorTimeline':
        """Return the timeline of doors ``closed`` at the start and ``changes`` (any order; stable by ``at_s``)."""
        return cls(Timeline.of(changes).changes, closed=set(closed))

    @property
    def rooms(self) -> list[str]:
        """Every room whose door is closed at some time (to check against the floor), in first-named order."""
        return list(dict.fromkeys([*sorted(self.closed), *(change.room for change in self.changes)]))

    def due(self, t: float) -> list:
        """Apply the changes due by sim time ``t`` (s) to :attr:`closed`; return them, in order."""
        done = super().due(t)
        for change in done:
            (self.closed.add if change.state == 'closed' else self.closed.discard)(change.room)
        return done


class Polyline:
    """A growing polyline with arc-length lookup (robot paths, HCW trails); points in m."""

    def __init__(self, points: Iterable[Sequence[float]] = ()):
        self.points: list[tuple[float, float]] = []
        self.cum: list[float] = []
        for p in points:
            self.append(p[0], p[1])

    def append(self, x: float, y: float) -> None:
        """Add a point at the end (a point closer than 1 µm to the last one is dropped)."""
        if self.points:
            last = self.points[-1]
            step = math.hypot(x - last[0], y - last[1])
            if step < 1e-6:
                return
            self.cum.append(self.cum[-1] + step)
        else:
            self.cum.append(0.0)
        self.points.append((float(x), float(y)))

    @property
    def length(self) -> float:
        """Total length, m."""
        return self.cum[-1] if self.cum else 0.0

    def at(self, s: float) -> tuple[float, float]:
        """Return the point at arc length ``s`` (m, clamped to the polyline)."""
        s = min(max(s, 0.0), self.length)
        i = bisect.bisect_right(self.cum, s) - 1
        if i >= len(self.points) - 1:
            return self.points[-1]
        seg = self.cum[i + 1] - self.cum[i]
        f = (s - self.cum[i]) / seg if seg > 0 else 0.0
        (x0, y0), (x1, y1) = self.points[i], self.points[i + 1]
        return x0 + f * (x1 - x0), y0 + f * (y1 - y0)

    def between(self, s0: float, s1: float) -> list[tuple[float, float]]:
        """Return the way from arc length ``s0`` to ``s1`` (m, each clamped to the polyline; ``s0 <= s1``).

        The points (m) at ``s0`` and at ``s1`` and every vertex strictly between them, in order:
        consecutive points are the straight pieces walked from ``s0`` to ``s1``.
        """
        s0, s1 = (min(max(s, 0.0), self.length) for s in (s0, s1))
        first, last = bisect.bisect_right(self.cum, s0), bisect.bisect_left(self.cum, s1)
        return [self.at(s0), *self.points[first:last], self.at(s1)]

    def heading(self, s: float, lookahead: float = 0.3) -> float | None:
        """Heading (rad) from the point at ``s`` to the point ``lookahead`` m on (None at the end)."""
        a, b = self.at(s), self.at(s + lookahead)
        if math.hypot(b[0] - a[0], b[1] - a[1]) < 1e-6:
            return None
        return math.atan2(b[1] - a[1], b[0] - a[0])


def segment_near(a: Sequence[float], b: Sequence[float], centres: Any,
                 radii: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Test where the segment ``a`` -> ``b`` comes within ``radii`` of each of ``centres``.

    The segment test of a trigger zone (a disc): a position that moved from ``a`` to ``b``
    between two updates passed through the zone if the closest point of the segment to the
    zone's centre is inside it, whether or not ``a`` or ``b`` is.

    Parameters
    ----------
    a, b
        The segment's ends, shape (2,), m (map frame, REP-103). ``a == b`` tests the point.
    centres
        The zones' centres, shape (M, 2) (or (2,) for one), m.
    radii
        The zones' radii, shape (M,) or a scalar for all, m. The boundary counts as inside.

    Returns
    -------
    (near, closest, along)
        ``near``: shape (M,), bool: the segment comes within ``radii[i]`` of ``centres[i]``.
        ``closest``: shape (M, 2), m: the point of the segment closest to each centre.
        ``along``: shape (M,), in [0, 1]: where that point is, as a fraction of the way from
        ``a`` to ``b`` (0 for a point), e.g. to order the zones in the order they were entered.

    Raises
    ------
    ValueError
        If ``a`` or ``b`` is not two numbers, ``centres`` is not M points, or ``radii`` does not
        broadcast to shape (M,).
    """
    a = np.asarray(a, dtype=float).reshape(2)
    b = np.asarray(b, dtype=float).reshape(2)
    centres = np.asarray(centres, dtype=float).reshape(-1, 2)
    radii = np.broadcast_to(np.asarray(radii, dtype=float), (len(centres),))
    direction = b - a
    length2 = float(direction @ direction)
    if length2 > 0.0:
        along = np.clip((centres - a) @ direction / length2, 0.0, 1.0)
    else:
        along = np.zeros(len(centres))
    closest = a + along[:, None] * direction
    near = np.hypot(*(centres - closest).T) <= radii
    return near, closest, along


def wrap_angle(angle: float) -> float:
    """Return ``angle`` (rad) wrapped to [-pi, pi)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def describe(event: SimEvent) -> tuple[str, str]:
    """Return a one-sentence summary and the target (robot, HCW or room) of a simulator event.

    Motion events: ``goal_accepted``, ``waypoint_reached``, ``goal_succeeded``, ``goal_aborted``,
    ``goal_canceled``, ``path_computed``, ``path_failed``. Hospital events: ``patient_arrival``,
    ``page_delivered``, ``page_acknowledged``, ``hcw_following``, ``hcw_entering``,
    ``hcw_arrived``, ``hcw_entry_blocked``, ``hcw_waiting``, ``badge_scan``, ``display_shown``,
    ``staff_changed``, ``door_changed``.
    """
    d = event.data
    if event.kind == 'patient_arrival':
        return (f"Patient {d['patient_id']} arrived in {d['room']} ({d['presentation'] or 'no details'}); "
                f"assigned HCW #{d['assigned_hcw_id']}", d['room'])
    if event.kind == 'goal_accepted':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} accepted goal {d['goal_id']} to ({x:.2f}, {y:.2f}) in {d['target_area']}, "
                f"path {d['path_length']:.1f} m", d['robot'])
    if event.kind == 'waypoint_reached':
        return (f"{d['robot']} passed pose {d['index'] + 1} of goal {d['goal_id']} in {d['area']} "
                f"({d['poses_remaining']} to go)", d['robot'])
    if event.kind == 'path_computed':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} planned a path to ({x:.2f}, {y:.2f}) in {d['target_area']}, "
                f"{d['path_length']:.1f} m", d['robot'])
    if event.kind == 'path_failed':
        x, y, _ = d['goal_pose']
        return (f"{d['robot']} could not plan a path to ({x:.2f}, {y:.2f}): {d['message']} "
                f"(error {d['error_code']})", d['robot'])
    if event.kind == 'goal_succeeded':
        return f"{d['robot']} reached goal {d['goal_id']} in {d['area']}", d['robot']
    if event.kind == 'door_changed':
        return f"{d['room']}'s door is {d['state']} now", d['room']
    if event.kind == 'goal_aborted':
        code = f" (error {d['error_code']})" if d['error_code'] else ''
        return f"{d['robot']} goal {d['goal_id']} aborted: {d['message']}{code}", d['robot']
    if event.kind == 'goal_canceled':
        return f"{d['robot']} goal {d['goal_id']} canceled in {d['area']}", d['robot']
    if event.kind == 'page_delivered':
        return (f"Page delivered to HCW #{d['hcw_id']} ({d['availability']}) "
                f"for {d['robot'] or 'no robot'}", d['hcw_id'])
    if event.kind == 'page_acknowledged':
        return f"HCW #{d['hcw_id']} acknowledged the page: {d['reply']}", d['hcw_id']
    if event.kind == 'hcw_following':
        return f"HCW #{d['hcw_id']} is following {d['robot']} from {d['area']}", d['hcw_id']
    if event.kind == 'hcw_entering':
        return f"HCW #{d['hcw_id']} is entering {d['room']} behind {d['robot']}", d['hcw_id']
    if event.kind == 'hcw_arrived':
        return f"HCW #{d['hcw_id']} is in {d['room']}", d['hcw_id']
    if event.kind == 'hcw_waiting':
        return f"HCW #{d['hcw_id']} waits in {d['area']}: {d['robot']} was lost", d['hcw_id']
    if event.kind == 'hcw_entry_blocked':
        return f"HCW #{d['hcw_id']} cannot enter {d['room']}: {d['message']}", d['hcw_id']
    if event.kind == 'badge_scan':
        return (f"Badge {d['badge_id']} scanned at {d['reader_id']} ({d['room']}) by HCW #{d['hcw_id']}",
                d['room'])
    if event.kind == 'staff_changed':
        return (f"HCW #{d['hcw_id']} is now {d['availability']}" + (f" ({d['detail']})" if d['detail'] else '')
                + f", badge {d['badge_id']}", d['hcw_id'])
    if event.kind == 'display_shown':
        return f"{d['room']} screen now shows '{d['title']}' ({d['entries']} member(s))", d['room']
    return f'{event.kind}: {d}', ''
