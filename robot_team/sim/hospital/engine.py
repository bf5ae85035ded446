"""The hospital engine: one floor's time, doors and patient arrivals, composing the systems on it.

:class:`HospitalEngine` steps sim time (in substeps of at most :data:`MAX_SUBSTEP_S`): staff
changes and door changes fall due, patients arrive, pages are answered and HCWs move. Each of the
hospital's systems is its own collaborator (see :mod:`robot_team.sim.hospital`); the engine owns
their order within a step, the HCWs (:class:`~robot_team.sim.hospital.staff.Hcw`, by ID) and the
checkpoint of the whole floor (a restarted ``hospital_systems`` takes up the floor as it was).

Events: ``patient_arrival``, ``door_changed``, and those of the collaborators. No rclpy here.
"""

from __future__ import annotations

import math
import pickle
from typing import Any, Sequence

from robot_team.contracts.config import ConfigError, Scenario, StaffSeed
from robot_team.contracts.names import NO_ROBOT, RobotId
from robot_team.sim.common import (BASE_ROBOTS, DoorTimeline, EventLog, SimEvent, SimInputError, Timeline,
                                   run_ahead_copy, substeps)
from robot_team.sim.grid import WallGrid
from robot_team.sim.hospital.displays import RoomDisplays
from robot_team.sim.hospital.hcw_motion import HcwMotion
from robot_team.sim.hospital.paging import Page, Pager
from robot_team.sim.hospital.readers import BadgeReaders
from robot_team.sim.hospital.robot_watch import RobotWatch
from robot_team.sim.hospital.staff import Hcw, StaffRecord, apply_change, place_staff, select, staff_record
from robot_team.sim.world import EdWorld, Pose2D

MAX_SUBSTEP_S = 0.1        # step() integrates in substeps of at most this much sim time
FORECAST_HORIZON_S = 60.0  # forecast_event_s looks this far ahead at most (the follow clock's longest jump)


class HospitalEngine:
    """A deterministic, time-stepped simulation of the ED's staff and systems.

    Parameters
    ----------
    world
        The ED floor (:func:`robot_team.sim.world.load_world`).
    staff
        The staff directory seed (``config/staff.yaml``).
    scenario
        The episode: patient, staff overrides, closed doors, badge overrides.
    robots
        The robots HCWs may be paged to follow (their poses come through :meth:`observe_robot`).
    hcw_speed
        HCW walking speed, m/s.
    page_response_delay_s
        Sim seconds an available HCW takes to acknowledge a page.
    resolution
        Cell size (m) of the grid of walls and closed doors HCWs stand and walk in.
    clearance
        How far from a wall (m) an HCW's standing spot is, at least.

    Raises
    ------
    ConfigError
        (or its subclass ``WorldError``) if a room named by the staff seed or the scenario does not
        exist, an override names an HCW not in the directory, or ``hcw_speed`` is not positive.

    Notes
    -----
    Not thread-safe: the ROS node serializes every call with one lock. Events produced by calls
    between steps (pages, displays) are returned by the next :meth:`step` (or
    :meth:`drain_events`), in the order they happened.
    """

    def __init__(self, world: EdWorld, staff: StaffSeed, scenario: Scenario, robots: Sequence[RobotId] = BASE_ROBOTS,
                 hcw_speed: float = 1.2, page_response_delay_s: float = 8.0, resolution: float = 0.1,
                 clearance: float = 0.35):
        if not hcw_speed > 0:
            raise ConfigError(f'hcw_speed must be positive, got {hcw_speed}')
        self.world = world
        self.scenario = scenario
        self.t = 0.0
        self._log = EventLog(lambda: self.t)
        self.clearance = float(clearance)
        self._resolution = resolution
        self._doors = DoorTimeline.of(scenario.blocked_doors, scenario.door_changes)
        for room in [*(case.room for case in scenario.cases), *self._doors.rooms]:
            world.room(room)
        self._watch = RobotWatch(robots)
        self._pager = Pager(self._log, page_response_delay_s)
        self._screens = RoomDisplays(world, self._log)
        self._readers = BadgeReaders(world, self._log)
        self._motion = HcwMotion(world, self._grid_now(), self._watch, self._readers, self._log, hcw_speed)
        self._arrived: list[str] = []     # patient IDs whose arrival happened, in order
        self._hcws = place_staff(world, self.grid, self.clearance, staff, scenario)
        self._staff_changes = Timeline.of(scenario.staff_changes)
        for hcw in self._hcws.values():
            hcw.inside_readers = self._readers.at(hcw.x, hcw.y)
        self._still: tuple | None = None   # what moves the HCWs, after a substep that moved none (settled())

    @property
    def hcw_speed(self) -> float:
        """HCW walking speed, m/s."""
        return self._motion.speed

    @property
    def page_response_delay_s(self) -> float:
        """Sim seconds an available HCW takes to acknowledge a page."""
        return self._pager.response_delay_s

    @property
    def grid(self) -> WallGrid:
        """The grid of the floor's walls and of the doors closed now: what HCWs stand and walk in."""
        return self._motion.grid

    @property
    def displays(self) -> dict[str, list[str]]:
        """What each room's screen shows, by room: its lines (see :meth:`render_display`)."""
        return self._screens.shown

    # --- checkpoint (a restarted hospital_systems takes up the floor as it was) ----------------------

    CHECKPOINT_FIELDS = ('t', '_seen', '_odometry', '_pages', '_pending_acks', '_arrived', 'displays', '_hcws',
                         '_staff_changes', '_doors')
    """What changes as the floor runs: HCWs (pose, state, trail), pages, what was seen of the robots, screens."""

    def _holders(self) -> dict[str, tuple[object, str]]:
        """Return where each of :attr:`CHECKPOINT_FIELDS` is kept: the object and its attribute."""
        return {'t': (self, 't'), '_seen': (self._watch, 'seen'), '_odometry': (self._watch, 'odometry'),
                '_pages': (self._pager, 'pages'), '_pending_acks': (self._pager, 'pending'),
                '_arrived': (self, '_arrived'), 'displays': (self._screens, 'shown'), '_hcws': (self, '_hcws'),
                '_staff_changes': (self, '_staff_changes'), '_doors': (self, '_doors')}

    @property
    def arrived(self) -> list[str]:
        """Return the IDs of the patients who arrived so far (each from its ``arrival_time_s`` on), in order."""
        return list(self._arrived)

    def checkpoint(self) -> bytes:
        """Return the floor's changing state (pickled; read back by :meth:`restore` of an engine of the same floor)."""
        holders = self._holders()
        return pickle.dumps({name: getattr(*holders[name]) for name in self.CHECKPOINT_FIELDS},
                            protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        """Take up a :meth:`checkpoint` of this floor (a restart): time, HCWs, pages, robots seen, screens.

        Raises
        ------
        ValueError
            If ``data`` is not a checkpoint of this floor (unreadable, fields missing, other HCWs);
            the engine is unchanged.
        """
        try:
            state = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - any unpickling error is bad input here
            raise ValueError(f'not a hospital checkpoint: {type(exc).__name__}: {exc}') from None
        if not isinstance(state, dict) or set(state) != set(self.CHECKPOINT_FIELDS):
            raise ValueError(f'not a hospital checkpoint: expected the fields {", ".join(self.CHECKPOINT_FIELDS)}')
        if set(state['_hcws']) != set(self._hcws):
            raise ValueError('hospital checkpoint of another staff: HCWs '
                             f"{', '.join(sorted(state['_hcws']))}, expected {', '.join(sorted(self._hcws))}")
        holders = self._holders()
        for name, value in state.items():
            setattr(*holders[name], value)
        self._still = None   # derived, not kept: the next substep says it again
        self._build_grid()

    # --- queries ----------------------------------------------------------------------------------

    @property
    def robots(self) -> tuple[RobotId, ...]:
        """Names of the robots HCWs may follow."""
        return self._watch.names

    @property
    def staff_ids(self) -> tuple[str, ...]:
        """The simulated HCWs' IDs, in directory order."""
        return tuple(self._hcws)

    def _hcw(self, hcw_id: str) -> Hcw:
        try:
            return self._hcws[str(hcw_id)]
        except KeyError:
            raise SimInputError(f"unknown HCW '{hcw_id}': not in the staff directory "
                                f"(known: {', '.join(self._hcws)})") from None

    def robot_pose(self, robot: RobotId) -> Pose2D | None:
        """Return where ``robot`` was last seen (map frame, m, rad), or None if never. Raises SimInputError."""
        self._watch.check(robot)
        return self._watch.pose(robot)

    def robot_stopped(self, robot: RobotId) -> bool:
        """Return whether ``robot`` stopped: odometry standing for 1 s, else seen still or silent (see the package).

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._watch.check(robot)
        return self._watch.stopped(robot, self.t)

    def hcw(self, hcw_id: str) -> StaffRecord:
        """Return where an HCW is and what they are doing. Raises SimInputError if unknown."""
        return staff_record(self.world, self._hcw(hcw_id))

    def locate(self, hcw_ids: Sequence[str] = (), specialty: str = '') -> tuple[list[StaffRecord], list[str]]:
        """Locate HCWs as an RTLS would.

        Parameters
        ----------
        hcw_ids
            HCW IDs to locate, first and in request order.
        specialty
            Then every other HCW of this specialty (case-insensitive); with neither, everyone.

        Returns
        -------
        (records, unknown_ids)
            One :class:`~robot_team.sim.hospital.staff.StaffRecord` per known HCW (no duplicates)
            and the requested IDs not in the directory.
        """
        ids, unknown = select(self._hcws, hcw_ids, specialty)
        return [self.hcw(i) for i in ids], unknown

    def page_status(self, page_id: int) -> Page:
        """Return the page ``page_id`` as it stands. Raises SimInputError if there is no such page."""
        return self._pager.status(page_id)

    def display(self, room: str) -> list[str]:
        """Return what ``room``'s screen shows (empty if nothing was shown)."""
        return self._screens.screen(room)

    # --- inputs -----------------------------------------------------------------------------------

    def observe_motion(self, robot: RobotId, speed: float, yaw_rate: float, stamp: float | None = None) -> None:
        """Record ``robot``'s odometry twist: ``speed`` (m/s, forward) and ``yaw_rate`` (rad/s) at ``stamp``.

        ``stamp`` is the twist's time (s, on this engine's clock; None: now). Once a robot's
        odometry is known, it alone decides whether the robot stopped (see the package). Values
        that are not finite, and a twist older than the last one, are ignored.

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._watch.check(robot)
        self._watch.observe_motion(robot, speed, yaw_rate, stamp, self.t)

    def observe_robot(self, robot: RobotId, x: float, y: float, yaw: float = 0.0, stamp: float | None = None) -> None:
        """Record that ``robot`` was seen at (``x``, ``y``, ``yaw``) (map frame, m, rad) at time ``stamp``.

        ``stamp`` is the observation's time (s, on this engine's clock; None: now). HCWs following
        the robot get the position on their trail; an HCW waiting for it starts following if its
        way from the previous observation passed close enough (see the package). A pose or stamp
        that is not finite is ignored (a localizer's glitch), and so is an observation older than
        the last one.

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._watch.check(robot)
        before = self._watch.observe_pose(robot, x, y, yaw, stamp, self.t)
        if before is None:
            return
        here = (float(x), float(y))
        for hcw in self._hcws.values():
            if hcw.robot == robot:
                self._motion.robot_seen(hcw, before, here)

    def page(self, hcw_id: str, robot: RobotId = NO_ROBOT, message: str = '', room: str = '') -> Page:
        """Page an HCW, asking them to meet and follow ``robot`` ('' for none) to ``room`` ('' unnamed).

        Available HCWs acknowledge ``page_response_delay_s`` later; busy ones never answer;
        off-shift HCWs do not carry a pager (the page is not delivered). An acknowledged page
        that names ``room`` makes it where the HCW goes into behind the robot (see the package).

        Raises
        ------
        SimInputError
            If the HCW, the robot or the room is unknown.
        """
        h = self._hcw(hcw_id)
        if robot:
            self._watch.check(robot)
        if room and room not in self.world.rooms:
            raise SimInputError(f"unknown room '{room}' in a page: expected one of {', '.join(self.world.rooms)}")
        return self._pager.send(h.member.hcw_id, h.availability, robot, message, room, self.t)

    def render_display(self, room: str, title: str, entries: Sequence[Any],
                       layout: str = '') -> tuple[bool, str, list[str]]:
        """Show a care-team layout on ``room``'s screen (:meth:`~robot_team.sim.hospital.displays.RoomDisplays.render`).

        Returns
        -------
        (success, message, rendered_lines)
            ``success`` is False (and nothing changes) for an unknown room.
        """
        return self._screens.render(room, title, entries, layout)

    def robot_lost(self, robot: RobotId) -> list[str]:
        """Tell the HCWs following (or about to follow) ``robot`` to wait where they are; return their IDs.

        The team's supervisor noticed the robot lost (``team/liveness``): its escort is off. The HCW
        stands where they are and follows nobody (state ``idle``) until paged again: a restarted
        robot locates them (RTLS), pages them and picks them up as on its first try. HCWs already
        walking into a room or arrived are not stopped.

        Raises
        ------
        SimInputError
            If the robot is unknown.
        """
        self._watch.check(robot)
        return [hcw.member.hcw_id for hcw in self._hcws.values() if self._motion.release(hcw, robot)]

    # --- time ---------------------------------------------------------------------------------

    def drain_events(self) -> list[SimEvent]:
        """Return and forget the events produced since the last call (or step)."""
        return self._log.drain()

    def step(self, dt: float) -> list[SimEvent]:
        """Advance sim time by ``dt`` seconds (in substeps of at most 0.1 s); return the events.

        The returned list also holds the events of calls made since the previous step, first.
        """
        self._watch.updated()
        for self.t, h in substeps(self.t, dt, MAX_SUBSTEP_S):
            self._substep(h)
        return self.drain_events()

    def next_event_s(self) -> float:
        """Return when the engine next changes by itself, in sim s (the follow clock's jump ahead).

        Its time now while an HCW walks, follows or waits for a robot, unless they are
        :meth:`settled`; else the earliest of the next staff change, door change, patient arrival and
        page answer (``inf``: none scheduled).
        """
        if any(hcw.state not in ('idle', 'arrived') for hcw in self._hcws.values()) and not self.settled():
            return self.t
        arrivals = [p.arrival_time_s for p in self.scenario.cases if p.patient_id not in self._arrived]
        return min([self._staff_changes.next_at, self._doors.next_at, *arrivals, *self._pager.answer_times()])

    def settled(self) -> bool:
        """Whether the HCWs who wait for or follow a robot stay as they are until something is heard.

        True when each waits for or follows a robot that has stopped (:meth:`robot_stopped`), and
        the last substep moved none of them and nothing was heard of their robots since: their
        motion is then at rest (what moves them is their robot's observed poses, which stay, and
        the door and staff changes, which are scheduled), so it stays so until a robot's pose or a
        scheduled change comes. Waiting HCWs have no time limit of their own.
        """
        moving = [hcw for hcw in self._hcws.values() if hcw.state not in ('idle', 'arrived')]
        if not all(hcw.state in ('waiting', 'following') and hcw.robot and self._watch.stopped(hcw.robot, self.t)
                   for hcw in moving):
            return False
        return self._still is not None and self._still == self._motion_signature()

    def _motion_signature(self) -> tuple:
        """What moves the HCWs now: each one's state, place and trail, and where their robot was seen."""
        return tuple((hcw.member.hcw_id, hcw.state, hcw.x, hcw.y, hcw.yaw, hcw.s, hcw.robot, hcw.blocked_room,
                      None if hcw.trail is None else (len(hcw.trail.points), hcw.trail.length),
                      self._watch.position(hcw.robot) if hcw.robot else None)
                     for hcw in self._hcws.values() if hcw.state not in ('idle', 'arrived'))

    def advance_to(self, t: float) -> list[SimEvent]:
        """Advance sim time to ``t`` (s; nothing happens if ``t`` is not later); return the events."""
        return self.step(float(t) - self.t) if t > self.t else self.drain_events()

    def advance_along(self, t: float, reports: Sequence[tuple[float, RobotId, Pose2D]]) -> list[SimEvent]:
        """Advance sim time to ``t`` (s), observing the robots' localization ``reports`` on the way; return the events.

        ``reports``: ``(sim time s, robot, map pose)``, as the simulator forecast them (a robot's
        ``trajectory``). Each report later than the robot's last observation is observed at its
        own time (time advanced to it first), in time order, up to ``t``: the HCWs see the robot
        where it is when it is there, however far the clock moved at once.

        Raises
        ------
        SimInputError
            If a report names an unknown robot.
        """
        events = []
        for at, robot, pose in sorted((r for r in reports if r[0] <= t + 1e-9), key=lambda r: r[0]):
            self._watch.check(robot)
            seen = self._watch.seen.get(robot)
            if seen is not None and at <= seen.seen_at + 1e-9:
                continue
            events += self.advance_to(at)
            self.observe_robot(robot, pose.x, pose.y, pose.yaw, at)
        return events + self.advance_to(t)

    def forecast_event_s(self, reports: Sequence[tuple[float, RobotId, Pose2D]],
                         horizon_s: float = FORECAST_HORIZON_S) -> float:
        """Return when the floor next changes by itself if the robots report as ``reports`` forecast (sim s).

        The time of the first event the engine would produce (an HCW who starts following, a badge
        scan, an arrival...) if it advanced along ``reports`` (:meth:`advance_along`), with no other
        call made; ``horizon_s`` sim seconds from now if none comes before. Only where the HCWs
        who move are moved by nothing else (:meth:`moved_by`): else its time now. The engine
        itself is unchanged (a copy runs ahead).
        """
        horizon = self.t + horizon_s
        robots = {r for _at, r, _pose in reports}
        if not self.moved_by(robots):
            return self.t
        ends = {}
        for at, robot, _pose in reports:
            ends[robot] = max(ends.get(robot, -math.inf), at)
        followed = {hcw.robot for hcw in self._hcws.values() if hcw.state in ('waiting', 'following')}
        horizon = min([horizon, *(ends[r] for r in followed)])   # the rest depends on how the robot stops
        shadow = run_ahead_copy(self, (self.world, self.grid, self.scenario))
        t = shadow.t
        while t < horizon - 1e-9:
            t = min(math.floor(t + 1.0 + 1e-9), horizon)   # in whole sim seconds, as the follow clock steps
            events = shadow.advance_along(t, reports)
            if events:
                return min(event.t for event in events)
        return horizon

    def moved_by(self, robots) -> bool:
        """Return whether every HCW who moves walks into a room, or waits for or follows one of ``robots``.

        Their motion is then what those robots' observed poses make it (:meth:`forecast_event_s`).
        """
        return all(hcw.state == 'entering' or (hcw.state in ('waiting', 'following') and hcw.robot in robots)
                   for hcw in self._hcws.values() if hcw.state not in ('idle', 'arrived'))

    def _substep(self, h: float) -> None:
        for change in self._staff_changes.due(self.t):
            apply_change(self._hcws[change.hcw_id], change, self._log)
        changed = self._doors.due(self.t)
        if changed:
            self._build_grid()
            for change in changed:
                self._log.emit('door_changed', room=change.room, state=change.state,
                               closed_doors=sorted(self._doors.closed))
            for hcw in self._hcws.values():
                hcw.blocked_room = ''      # a door opened: they try again
        for patient in self.scenario.cases:
            if patient.patient_id not in self._arrived and self.t >= patient.arrival_time_s - 1e-9:
                self._arrived.append(patient.patient_id)
                self._log.emit('patient_arrival', patient_id=patient.patient_id, room=patient.room,
                               presentation=patient.presentation, esi_level=patient.esi_level,
                               assigned_hcw_id=patient.assigned_hcw_id, required_specialty=patient.required_specialty)
        for page in self._pager.due(self.t):
            self._answer(page)
        before = self._motion_signature()
        for hcw in self._hcws.values():
            if hcw.state in ('idle', 'arrived'):
                continue            # standing: no move, no new reader range (and no work, at every tick)
            self._motion.move(hcw, h, self.t)
        after = self._motion_signature()
        self._still = after if after == before else None   # a substep that moved nobody (settled())

    def _answer(self, page: Page) -> None:
        """A page's answer is due: an HCW still available acknowledges it and waits for its robot."""
        h = self._hcws[page.hcw_id]
        if h.availability != 'available':   # became busy (or left) before answering: the page stays unanswered
            return
        self._pager.acknowledge(page, self.t)
        self._motion.escort(h, page.robot, page.room)

    def _grid_now(self) -> WallGrid:
        """Return the floor's walls and the doors closed now, rasterized (what HCWs walk in)."""
        return WallGrid.from_world(self.world, self._resolution, closed_doors=self._doors.closed)

    def _build_grid(self) -> None:
        """Rasterize the floor's walls and the doors closed now into :attr:`grid`."""
        self._motion.grid = self._grid_now()
