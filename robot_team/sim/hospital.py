"""The hospital's systems on the ED floor, without ROS: HCWs, RTLS, paging, badge readers, displays.

:class:`HospitalEngine` is pure and deterministic: the same floor, staff seed, scenario and
sequence of calls and robot observations give the same events. ``sim/hospital_node.py`` wraps it
in the ``hospital_systems`` node; this module imports no rclpy.

The hospital knows the robots only as a real hospital would: from where they are seen
(:meth:`HospitalEngine.observe_robot`, fed by the node from each robot's ``amcl_pose``, ``odom``
or TF). It never sees a navigation goal, so whatever moves the robots (the embedded motion
simulator, Gazebo with Nav2, a real floor) the HCWs behave the same.

What is simulated
-----------------
* HCWs from the staff seed stand in their area's room (distinct spots); the scenario's
  ``staff_overrides`` change availability, detail or area; its ``staff_changes`` change an HCW's
  availability and detail (a break, a code blue, back) or badge (a mix-up) at a sim time
  (``staff_changed``).
* The patient of the scenario arrives at ``patient.arrival_time_s`` (``patient_arrival``).
* Paging: an available HCW acknowledges after ``page_response_delay_s``; busy ones never do (nor
  one who became busy before answering); off-shift HCWs do not carry a pager (the page is not
  delivered).
* Following, inferred from the robot's observed poses: an HCW who acknowledged a page naming a
  robot waits where they are until that robot comes within 2.0 m (in line of sight): seen there,
  or seen passing there, its way between two positions seen one after the other (a straight
  segment) coming that close, however far apart the two were. They walk to the point where it
  came closest, then about 1.0 m behind it along the trail of its observed positions (where two
  positions seen one after the other are not in line of sight, the trail goes through the doors
  of the rooms they are in: a robot seen rarely is still followed through doors, past their
  badge readers).
  A robot counts as *stopped* once its odometry (the twist of ``odom``, which every base
  controller publishes, moving or not) has reported it standing (under 0.01 m/s and 0.01 rad/s)
  for 1.0 s by its stamps. Without odometry, it counts as stopped once its observed poses show it
  within 5 cm of one spot for 1.0 s, or once nothing was heard of it for 3.0 s plus the longest
  delay with which its last 20 poses arrived, and for two updates (a localizer such as AMCL
  publishes nothing while the robot stands still; poses that arrive late, or a jump of the clock,
  are not taken for silence; a loaded host can still delay poses past that, which odometry rules
  out: it stops only on a report of standing, never on silence).
  When the robot stops at the door approach pose of a room (not the HCW's own
  area), the HCW walks through the door into that room (``hcw_entering``, then
  ``hcw_arrived``). When it stops inside such a room, the HCW follows it in and stays
  (``hcw_arrived``). These are tests of where the robot stands once stopped, on its last pose.
  A page that names the room the HCW is needed in (``room``, as a hospital's paging system
  carries the location) makes that room the only one they go into, as a person who read the
  page would: every other stop of the robot (the pickup, a pause) is not an arrival, and the
  room they rest in may be it (led out to its door, they walk back in).
* Badge readers: an HCW whose way enters a reader's zone (its radius) scans their badge once per
  entry (the badge ID is the scenario's ``badge_overrides`` entry, if any, else the directory's).
  The test is on the segments walked between two updates, not on the positions reached: a step
  that passes through a zone scans there (at the step's closest point to the reader) even when
  it starts and ends outside it, however long the step; zones passed in one step scan in the
  order passed; a step that comes no closer than the radius does not scan. An HCW who arrives in
  a room without a scan at its door (their way in kept farther than the radius from the reader,
  e.g. through the far side of a wide gap) badges at that room's reader on arrival: one does not
  get in otherwise. Either way, one scan per entry.
* Closed doors (``scenario.blocked_doors``) block HCWs too (``hcw_entry_blocked``). Doors closing
  and opening at given times (``scenario.door_changes``) do so from then on (``door_changed``;
  the doors are the access control's, so the hospital records them); an HCW kept out of a room
  tries again once a door opened.
* Room displays: :meth:`HospitalEngine.render_display` renders and keeps each room's screen.

Events (:class:`~robot_team.sim.common.SimEvent`, ground truth): ``patient_arrival``,
``staff_changed``, ``door_changed``, ``page_delivered``, ``page_acknowledged``, ``hcw_following``,
``hcw_entering``, ``hcw_arrived``, ``hcw_entry_blocked``, ``badge_scan``, ``display_shown``.

Units: SI (m, s, rad), poses in the map frame (REP-103/105).
"""

from __future__ import annotations

import math
import pickle
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from robot_team.config import ConfigError, Scenario, StaffMember, StaffSeed
from robot_team.sim.common import (BASE_ROBOTS, DoorTimeline, EventLog, Polyline, SimEvent, SimInputError, Timeline,
                                   segment_near)
from robot_team.sim.grid import WallGrid
from robot_team.sim.world import EdWorld, Pose2D, WorldError

FOLLOW_TRIGGER_M = 2.0     # an HCW who acknowledged starts following when the robot is this close
FOLLOW_DISTANCE_M = 1.0    # how far behind the robot, along its trail, a follower walks
DOOR_MATCH_M = 0.75        # a robot stopped this close to a room's door approach pose is "at that door"
STILL_TOLERANCE_M = 0.05   # a robot that moved less than this since it was last seen moving stands still
STOP_DWELL_S = 1.0         # ... and counts as stopped once observed standing still this long (s)
SILENT_STOP_S = 3.0        # ... or once nothing was heard of it for this long (s), plus the poses' recent delay
DELAYS_KEPT = 20           # how many of a robot's latest pose delays (reception time - stamp) are kept
MAX_DELAY_S = 10.0         # a longer delay counts as this (a latched pose from long ago says nothing of lag)
MAX_SUBSTEP_S = 0.1        # step() integrates in substeps of at most this much sim time
STANDING_SPEED = 0.01      # m/s: odometry below this speed (and STANDING_YAW_RATE) reports a robot standing
STANDING_YAW_RATE = 0.01   # rad/s


@dataclass
class StaffRecord:
    """Where an HCW is (RTLS view): ``area`` is the room or corridor containing ``pose``."""

    hcw_id: str
    name: str
    specialty: str
    area: str
    pose: Pose2D
    availability: str
    detail: str
    state: str = 'idle'
    robot: str = ''


@dataclass
class Page:
    """A page sent to an HCW and what came of it (times in sim s)."""

    page_id: int
    hcw_id: str
    robot: str
    message: str
    sent_at: float
    delivered: bool
    acknowledged: bool = False
    acknowledged_at: float | None = None
    reply: str = ''
    room: str = ''                # the room the HCW is needed in ('' unnamed)

    @property
    def response_time_s(self) -> float | None:
        """Sim seconds from the page to the acknowledgement (None if not acknowledged)."""
        return None if self.acknowledged_at is None else self.acknowledged_at - self.sent_at


@dataclass
class _SeenRobot:
    """A robot as the hospital sees it: its last observed pose (and when), and since when it stands still."""

    x: float
    y: float
    yaw: float
    seen_at: float
    still_x: float
    still_y: float
    still_since: float
    updates_since: int = 0        # calls of step() since the last observation
    delays: deque = field(default_factory=lambda: deque(maxlen=DELAYS_KEPT))   # s, reception - stamp


@dataclass
class _Odometry:
    """A robot's motion as its odometry reports it: since when it stands (None: moving), and the last stamp."""

    stamp: float
    standing_since: float | None = None


@dataclass
class _Hcw:
    member: StaffMember
    badge_id: str
    home: str
    x: float
    y: float
    yaw: float
    availability: str
    detail: str
    state: str = 'idle'           # idle | waiting | following | entering | arrived
    robot: str = ''
    trail: Polyline | None = None
    s: float = 0.0
    entering_room: str = ''
    blocked_room: str = ''        # a room the HCW could not enter (not tried again while the robot stands)
    destination: str = ''         # the room their acknowledged page named ('' unnamed)
    inside_readers: set[str] = field(default_factory=set)
    scanned_room: str = ''        # the room of the HCW's latest badge scan


def _field(entry: Any, key: str) -> str:
    value = entry.get(key, '') if isinstance(entry, Mapping) else getattr(entry, key, '')
    return str(value or '')


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

    def __init__(self, world: EdWorld, staff: StaffSeed, scenario: Scenario, robots: Sequence[str] = BASE_ROBOTS,
                 hcw_speed: float = 1.2, page_response_delay_s: float = 8.0, resolution: float = 0.1,
                 clearance: float = 0.35):
        if not hcw_speed > 0:
            raise ConfigError(f'hcw_speed must be positive, got {hcw_speed}')
        self.world = world
        self.scenario = scenario
        self.hcw_speed = float(hcw_speed)
        self.page_response_delay_s = float(page_response_delay_s)
        self.t = 0.0
        self._log = EventLog(lambda: self.t)
        self.clearance = float(clearance)
        self._resolution = resolution
        self._doors = DoorTimeline.of(scenario.blocked_doors, scenario.door_changes)
        for room in [*(case.room for case in scenario.cases), *self._doors.rooms]:
            world.room(room)
        self._build_grid()
        self._robot_names = tuple(robots)
        self._seen: dict[str, _SeenRobot] = {}
        self._odometry: dict[str, _Odometry] = {}
        self._pages: dict[int, Page] = {}
        self._pending_acks: list[int] = []
        self._arrived: list[str] = []     # patient IDs whose arrival happened, in order
        self.displays: dict[str, list[str]] = {}
        self._hcws = self._place_staff(staff, scenario)
        self._staff_changes = Timeline.of(scenario.staff_changes)
        self._readers = world.readers
        self._reader_xy = np.array([[r.x, r.y] for r in self._readers]).reshape(-1, 2)
        self._reader_radius = np.array([r.radius for r in self._readers])
        for hcw in self._hcws.values():
            hcw.inside_readers = self._readers_at(hcw.x, hcw.y)

    # --- checkpoint (a restarted hospital_systems takes up the floor as it was) ----------------------

    CHECKPOINT_FIELDS = ('t', '_seen', '_odometry', '_pages', '_pending_acks', '_arrived', 'displays', '_hcws',
                         '_staff_changes', '_doors')
    """What changes as the floor runs: HCWs (pose, state, trail), pages, what was seen of the robots, screens."""

    @property
    def arrived(self) -> list[str]:
        """Return the IDs of the patients who arrived so far (each from its ``arrival_time_s`` on), in order."""
        return list(self._arrived)

    def checkpoint(self) -> bytes:
        """Return the floor's changing state (pickled; read back by :meth:`restore` of an engine of the same floor)."""
        return pickle.dumps({name: getattr(self, name) for name in self.CHECKPOINT_FIELDS},
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
        for name, value in state.items():
            setattr(self, name, value)
        self._build_grid()

    # --- set-up ---------------------------------------------------------------------------------

    def _place_staff(self, staff: StaffSeed, scenario: Scenario) -> dict[str, _Hcw]:
        known = {m.hcw_id for m in staff.staff}
        overrides = (('staff_overrides', scenario.staff_overrides),
                     ('badge_overrides', scenario.badge_overrides),
                     ('staff_changes', [change.hcw_id for change in scenario.staff_changes]))
        for what, ids in overrides:
            unknown = sorted(set(ids) - known)
            if unknown:
                raise ConfigError(f"scenario '{scenario.name}': {what} name HCWs not in the staff directory: "
                                  f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
        hcws: dict[str, _Hcw] = {}
        taken: dict[str, int] = {}
        for member in staff.staff:
            override = scenario.staff_overrides.get(member.hcw_id)
            area = override.area if override and override.area else member.area
            try:
                room = self.world.room(area)
            except WorldError as exc:
                raise ConfigError(f'staff member #{member.hcw_id} ({member.name}): area {exc}') from None
            x, y = self._spot(room, taken.get(area, 0))
            taken[area] = taken.get(area, 0) + 1
            gx, gy = room.door_gap
            hcws[member.hcw_id] = _Hcw(
                member=member, home=area,
                badge_id=scenario.badge_overrides.get(member.hcw_id, member.badge_id),
                x=x, y=y, yaw=math.atan2(gy - y, gx - x),
                availability=override.availability if override else member.availability,
                detail=override.detail if override else member.detail)
        return hcws

    def _spot(self, room, index: int) -> tuple[float, float]:
        """Return the ``index``-th free standing spot of a room: its centre, then rings 0.8 m apart."""
        cx, cy = room.center
        offsets = [(i * 0.8, j * 0.8) for i in range(-4, 5) for j in range(-4, 5)]
        offsets.sort(key=lambda o: (round(math.hypot(*o), 6), math.atan2(o[1], o[0]) % (2 * math.pi)))
        spots = [(cx + dx, cy + dy) for dx, dy in offsets
                 if room.contains(cx + dx, cy + dy, margin=-0.5)
                 and self.grid.is_clear(cx + dx, cy + dy, self.clearance)]
        if not spots:
            raise ConfigError(f"room '{room.name}' has no free spot to place staff")
        return spots[index % len(spots)]

    # --- queries ----------------------------------------------------------------------------------

    @property
    def robots(self) -> tuple[str, ...]:
        """Names of the robots HCWs may follow."""
        return self._robot_names

    @property
    def staff_ids(self) -> tuple[str, ...]:
        """The simulated HCWs' IDs, in directory order."""
        return tuple(self._hcws)

    def _hcw(self, hcw_id: str) -> _Hcw:
        try:
            return self._hcws[str(hcw_id)]
        except KeyError:
            raise SimInputError(f"unknown HCW '{hcw_id}': not in the staff directory "
                                f"(known: {', '.join(self._hcws)})") from None

    def _check_robot(self, robot: str) -> None:
        if robot not in self._robot_names:
            raise SimInputError(f"unknown robot '{robot}': expected one of {', '.join(self._robot_names)}")

    def robot_pose(self, robot: str) -> Pose2D | None:
        """Return where ``robot`` was last seen (map frame, m, rad), or None if never. Raises SimInputError."""
        self._check_robot(robot)
        seen = self._seen.get(robot)
        return None if seen is None else Pose2D(seen.x, seen.y, seen.yaw)

    def robot_stopped(self, robot: str) -> bool:
        """Return whether ``robot`` stopped: odometry standing for 1 s, else seen still or silent (see the module).

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._check_robot(robot)
        seen = self._seen.get(robot)
        if seen is None:
            return False
        odometry = self._odometry.get(robot)
        if odometry is not None:     # it says whether the robot stands: never inferred from silence
            return (odometry.standing_since is not None
                    and odometry.stamp - odometry.standing_since >= STOP_DWELL_S - 1e-9)
        silence = SILENT_STOP_S + max(seen.delays, default=0.0)
        return (seen.seen_at - seen.still_since >= STOP_DWELL_S - 1e-9
                or (self.t - seen.seen_at >= silence - 1e-9 and seen.updates_since >= 2))

    def hcw(self, hcw_id: str) -> StaffRecord:
        """Return where an HCW is and what they are doing. Raises SimInputError if unknown."""
        h = self._hcw(hcw_id)
        return StaffRecord(hcw_id=h.member.hcw_id, name=h.member.name, specialty=h.member.specialty,
                           area=self.world.room_at(h.x, h.y), pose=Pose2D(h.x, h.y, h.yaw),
                           availability=h.availability, detail=h.detail, state=h.state, robot=h.robot)

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
            One :class:`StaffRecord` per known HCW (no duplicates) and the requested IDs not
            in the directory.
        """
        ids, unknown = [], []
        for hcw_id in (str(i).strip() for i in hcw_ids):
            bucket = ids if hcw_id in self._hcws else unknown
            if hcw_id not in bucket:
                bucket.append(hcw_id)
        wanted = specialty.strip().lower()
        if wanted or not hcw_ids:
            ids += [k for k, h in self._hcws.items()
                    if k not in ids and (not wanted or h.member.specialty.lower() == wanted)]
        return [self.hcw(i) for i in ids], unknown

    def page_status(self, page_id: int) -> Page:
        """Return the page ``page_id`` as it stands. Raises SimInputError if there is no such page."""
        try:
            return self._pages[page_id]
        except KeyError:
            raise SimInputError(f'unknown page {page_id}') from None

    def display(self, room: str) -> list[str]:
        """Return what ``room``'s screen shows (empty if nothing was shown)."""
        return list(self.displays.get(room, []))

    # --- inputs -----------------------------------------------------------------------------------

    def observe_motion(self, robot: str, speed: float, yaw_rate: float, stamp: float | None = None) -> None:
        """Record ``robot``'s odometry twist: ``speed`` (m/s, forward) and ``yaw_rate`` (rad/s) at ``stamp``.

        ``stamp`` is the twist's time (s, on this engine's clock; None: now). Once a robot's
        odometry is known, it alone decides whether the robot stopped (see the module). Values
        that are not finite, and a twist older than the last one, are ignored.

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._check_robot(robot)
        speed, yaw_rate = float(speed), float(yaw_rate)
        stamp = self.t if stamp is None else float(stamp)
        if not all(math.isfinite(v) for v in (speed, yaw_rate, stamp)):
            return
        odometry = self._odometry.get(robot)
        if odometry is None:
            odometry = self._odometry[robot] = _Odometry(stamp)
        elif stamp < odometry.stamp:
            return
        odometry.stamp = stamp
        if abs(speed) < STANDING_SPEED and abs(yaw_rate) < STANDING_YAW_RATE:
            if odometry.standing_since is None:
                odometry.standing_since = stamp
        else:
            odometry.standing_since = None

    def observe_robot(self, robot: str, x: float, y: float, yaw: float = 0.0, stamp: float | None = None) -> None:
        """Record that ``robot`` was seen at (``x``, ``y``, ``yaw``) (map frame, m, rad) at time ``stamp``.

        ``stamp`` is the observation's time (s, on this engine's clock; None: now). HCWs following
        the robot get the position on their trail; an HCW waiting for it starts following if its
        way from the previous observation passed close enough (see the module). A pose or stamp
        that is not finite is ignored (a localizer's glitch), and so is an observation older than
        the last one.

        Raises
        ------
        SimInputError
            If ``robot`` is not one of :attr:`robots`.
        """
        self._check_robot(robot)
        x, y, yaw = float(x), float(y), float(yaw)
        stamp = self.t if stamp is None else float(stamp)
        if not all(math.isfinite(v) for v in (x, y, yaw, stamp)):
            return
        seen = self._seen.get(robot)
        if seen is None:
            seen = self._seen[robot] = _SeenRobot(x, y, yaw, stamp, x, y, stamp)
        seen.delays.append(min(max(self.t - stamp, 0.0), MAX_DELAY_S))
        if stamp < seen.seen_at:
            return
        before = (seen.x, seen.y)
        seen.x, seen.y, seen.yaw, seen.seen_at, seen.updates_since = x, y, yaw, stamp, 0
        if math.hypot(x - seen.still_x, y - seen.still_y) > STILL_TOLERANCE_M:
            seen.still_x, seen.still_y, seen.still_since = x, y, stamp
        for hcw in self._hcws.values():
            if hcw.robot != robot:
                continue
            if hcw.state == 'waiting':
                self._follow_if_passing(hcw, before, (x, y))
            elif hcw.state == 'following':
                last = hcw.trail.points[-1]
                if not self.grid.line_of_sight(last, (x, y)):
                    for point in self._through_doors(last, (x, y)):
                        hcw.trail.append(*point)
                hcw.trail.append(x, y)

    def _through_doors(self, a: tuple[float, float], b: tuple[float, float]) -> list[tuple[float, float]]:
        """Return the way from ``a`` to ``b`` (m) out of ``a``'s room and into ``b``'s by their doors, or [].

        For two positions of a robot seen one after the other with a wall between them: it went
        through the door of the room it was in, or of the room it is in now, or both. Each door is
        passed through its gap and its approach pose in the corridor.
        """
        way = []
        for point, leaving in ((a, True), (b, False)):
            room = self.world.rooms.get(self.world.room_at(*point))
            if room is not None and not room.contains(*(b if leaving else a)):
                door = [room.door_gap, (room.door.x, room.door.y)]
                way += door if leaving else door[::-1]
        points = [a, *way, b]
        if way and all(self.grid.line_of_sight(p, q) for p, q in zip(points, points[1:])):
            return way
        return []

    def page(self, hcw_id: str, robot: str = '', message: str = '', room: str = '') -> Page:
        """Page an HCW, asking them to meet and follow ``robot`` ('' for none) to ``room`` ('' unnamed).

        Available HCWs acknowledge ``page_response_delay_s`` later; busy ones never answer;
        off-shift HCWs do not carry a pager (the page is not delivered). An acknowledged page
        that names ``room`` makes it where the HCW goes into behind the robot (see the module).

        Raises
        ------
        SimInputError
            If the HCW, the robot or the room is unknown.
        """
        h = self._hcw(hcw_id)
        if robot:
            self._check_robot(robot)
        if room and room not in self.world.rooms:
            raise SimInputError(f"unknown room '{room}' in a page: expected one of {', '.join(self.world.rooms)}")
        page_id = len(self._pages) + 1
        delivered = h.availability != 'off_shift'
        page = Page(page_id, h.member.hcw_id, robot, message, self.t, delivered, room=room)
        self._pages[page_id] = page
        if delivered:
            self._log.emit('page_delivered', page_id=page_id, hcw_id=page.hcw_id, robot=robot, room=room,
                           message=message, availability=h.availability)
            if h.availability == 'available':
                self._pending_acks.append(page_id)
        return page

    def render_display(self, room: str, title: str, entries: Sequence[Any],
                       layout: str = '') -> tuple[bool, str, list[str]]:
        """Show a care-team layout on ``room``'s screen.

        Parameters
        ----------
        room
            A room of the world.
        title
            The screen's title.
        entries
            Care-team members: mappings or objects with ``role``, ``hcw_id``, ``name``,
            ``specialty``.
        layout
            A layout plan, e.g. ``'rows: physician, nurse, technician'``: entries are ordered by
            the first listed word found in their role or specialty.

        Returns
        -------
        (success, message, rendered_lines)
            ``success`` is False (and nothing changes) for an unknown room.
        """
        if room not in self.world.rooms:
            return False, f"unknown room '{room}': expected one of {', '.join(self.world.rooms)}", []
        keywords = [k.strip().lower() for k in layout.split(':', 1)[-1].split(',') if k.strip()]

        def rank(entry) -> int:
            text = f"{_field(entry, 'role')} {_field(entry, 'specialty')}".lower()
            return next((i for i, k in enumerate(keywords) if k in text), len(keywords))

        ordered = sorted(entries, key=rank)
        lines = [f'[{room}] {title.strip() or "Care team"}']
        for entry in ordered:
            hcw_id = _field(entry, 'hcw_id')
            details = ', '.join(p for p in (f'#{hcw_id}' if hcw_id else '', _field(entry, 'specialty')) if p)
            lines.append(f"{_field(entry, 'role') or 'Member'}: {_field(entry, 'name') or '(unnamed)'}"
                         + (f' ({details})' if details else ''))
        if layout.strip():
            lines.append(f'Layout: {layout.strip()}')
        self.displays[room] = lines
        members = [{key: _field(entry, key) for key in ('role', 'hcw_id', 'name', 'specialty')} for entry in ordered]
        self._log.emit('display_shown', room=room, title=title, layout=layout, lines=list(lines),
                       entries=len(ordered), members=members)
        message = f'{room} screen shows {len(ordered)} care-team member(s)'
        return True, message, list(lines)

    # --- time ---------------------------------------------------------------------------------

    def drain_events(self) -> list[SimEvent]:
        """Return and forget the events produced since the last call (or step)."""
        return self._log.drain()

    def step(self, dt: float) -> list[SimEvent]:
        """Advance sim time by ``dt`` seconds (in substeps of at most 0.1 s); return the events.

        The returned list also holds the events of calls made since the previous step, first.
        """
        for seen in self._seen.values():
            seen.updates_since += 1
        remaining = max(float(dt), 0.0)
        while remaining > 1e-12:
            h = min(MAX_SUBSTEP_S, remaining)
            remaining -= h
            self.t = round(self.t + h, 9)
            self._substep(h)
        return self.drain_events()

    def next_event_s(self) -> float:
        """Return when the engine next changes by itself, in sim s (the follow clock's jump ahead).

        Its time now while an HCW walks, follows or waits for a robot; else the earliest of the next
        staff change, door change, patient arrival and page answer (``inf``: none scheduled).
        """
        if any(hcw.state not in ('idle', 'arrived') for hcw in self._hcws.values()):
            return self.t
        arrivals = [p.arrival_time_s for p in self.scenario.cases if p.patient_id not in self._arrived]
        answers = [self._pages[page_id].sent_at + self.page_response_delay_s for page_id in self._pending_acks]
        return min([self._staff_changes.next_at, self._doors.next_at, *arrivals, *answers])

    def advance_to(self, t: float) -> list[SimEvent]:
        """Advance sim time to ``t`` (s; nothing happens if ``t`` is not later); return the events."""
        return self.step(float(t) - self.t) if t > self.t else self.drain_events()

    def _substep(self, h: float) -> None:
        for change in self._staff_changes.due(self.t):
            self._change_staff(change)
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
        for page_id in list(self._pending_acks):
            page = self._pages[page_id]
            if self.t >= page.sent_at + self.page_response_delay_s - 1e-9:
                self._pending_acks.remove(page_id)
                self._acknowledge(page)
        for hcw in self._hcws.values():
            if hcw.state in ('idle', 'arrived'):
                continue            # standing: no move, no new reader range (and no work, at every tick)
            self._move_hcw(hcw, h)

    def robot_lost(self, robot: str) -> list[str]:
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
        self._check_robot(robot)
        told = []
        for hcw in self._hcws.values():
            if hcw.robot == robot and hcw.state in ('following', 'waiting'):
                hcw.state, hcw.robot, hcw.trail, hcw.s = 'idle', '', None, 0.0
                told.append(hcw.member.hcw_id)
                self._log.emit('hcw_waiting', hcw_id=hcw.member.hcw_id, robot=robot, x=hcw.x, y=hcw.y,
                               area=self.world.room_at(hcw.x, hcw.y),
                               message=f'{robot} was lost: HCW #{hcw.member.hcw_id} waits where they are')
        return told

    def _build_grid(self) -> None:
        """Rasterize the floor's walls and the doors closed now (:attr:`grid`, what HCWs walk in)."""
        self.grid = WallGrid.from_world(self.world, self._resolution, closed_doors=self._doors.closed)

    def _change_staff(self, change) -> None:
        """Apply a :class:`~robot_team.config.StaffChange` that is due (its availability, detail, badge)."""
        h = self._hcws[change.hcw_id]
        h.availability, h.detail = change.availability, change.detail
        if change.badge_id:
            h.badge_id = change.badge_id
        self._log.emit('staff_changed', hcw_id=change.hcw_id, availability=h.availability, detail=h.detail,
                       badge_id=h.badge_id)

    def _acknowledge(self, page: Page) -> None:
        h = self._hcws[page.hcw_id]
        if h.availability != 'available':   # became busy (or left) before answering: the page stays unanswered
            return
        page.acknowledged, page.acknowledged_at = True, self.t
        page.reply = (f'On my way — I will follow {page.robot}' if page.robot
                      else 'Acknowledged — on my way')
        if page.robot and not (h.state == 'following' and h.robot == page.robot):
            h.state, h.robot, h.trail = 'waiting', page.robot, None
        if page.robot:   # a new escort: the room it ends in, they badge in (an encounter starts with a tap)
            h.destination, h.scanned_room = page.room, ''
        self._log.emit('page_acknowledged', page_id=page.page_id, hcw_id=page.hcw_id, robot=page.robot,
                       reply=page.reply, response_time_s=page.response_time_s)

    def _move_hcw(self, hcw: _Hcw, h: float) -> None:
        if hcw.state == 'waiting':
            seen = self._seen.get(hcw.robot)
            if seen is not None:    # where the robot stands (its way there was tested as it was seen)
                self._follow_if_passing(hcw, (seen.x, seen.y), (seen.x, seen.y))
            return
        if hcw.state == 'following':
            self._walk(hcw, h, hcw.trail.length - FOLLOW_DISTANCE_M)
            if self.robot_stopped(hcw.robot):
                self._escort_stopped(hcw)
            else:
                hcw.blocked_room = ''
            return
        if hcw.state == 'entering':
            self._walk(hcw, h, hcw.trail.length)
            if hcw.s >= hcw.trail.length - 1e-9:
                self._arrive(hcw, hcw.entering_room)

    def _follow_if_passing(self, hcw: _Hcw, a: tuple[float, float], b: tuple[float, float]) -> None:
        """Start a waiting HCW following if their robot's way from ``a`` to ``b`` (m) came close enough.

        ``a`` and ``b`` are two positions of the robot seen one after the other (``a == b``: where
        it stands). If the segment between them comes within ``FOLLOW_TRIGGER_M`` of the HCW at a
        point in their line of sight, they walk to that point and on along the robot's way to ``b``.
        """
        here = (hcw.x, hcw.y)
        near, closest, _ = segment_near(a, b, here, FOLLOW_TRIGGER_M)
        passing = (float(closest[0, 0]), float(closest[0, 1]))
        if not near[0] or not self.grid.line_of_sight(here, passing):
            return
        trail = Polyline([here, passing])
        if not self.grid.line_of_sight(passing, b):
            for point in self._through_doors(passing, b):
                trail.append(*point)
        trail.append(*b)
        hcw.state, hcw.trail, hcw.s = 'following', trail, 0.0
        self._log.emit('hcw_following', hcw_id=hcw.member.hcw_id, robot=hcw.robot, x=hcw.x, y=hcw.y,
                       area=self.world.room_at(hcw.x, hcw.y))

    def _walk(self, hcw: _Hcw, h: float, target_s: float) -> None:
        """Walk an HCW along their trail towards arc length ``target_s`` at ``hcw_speed``; badge on the way."""
        if target_s <= hcw.s:
            return
        start, hcw.s = hcw.s, min(target_s, hcw.s + self.hcw_speed * h)
        way = [(hcw.x, hcw.y), *hcw.trail.between(start, hcw.s)[1:]]
        x, y = way[-1]
        if math.hypot(x - hcw.x, y - hcw.y) > 1e-6:
            hcw.yaw = math.atan2(y - hcw.y, x - hcw.x)
        hcw.x, hcw.y = x, y
        self._check_readers(hcw, way)

    def _arrive(self, hcw: _Hcw, room: str) -> None:
        # Entering a room means passing its door: badge at its reader if the way in stayed outside the
        # reader's zone (through the far side of the door gap). The walk there was already checked.
        if hcw.scanned_room != room:
            for reader in self._readers:
                if reader.room == room:
                    self._scan(hcw, reader)
        # The HCW stays in that room: it is where they rest until paged again (a later case's escort
        # picks them up there; the robot stopping in it then is a pickup, not an arrival).
        hcw.state, hcw.entering_room, hcw.home = 'arrived', room, room
        self._log.emit('hcw_arrived', hcw_id=hcw.member.hcw_id, room=room, robot=hcw.robot, x=hcw.x, y=hcw.y)

    def _escort_stopped(self, hcw: _Hcw) -> None:
        """The followed robot stopped: at a room's door, walk in; inside a room, arrive once in it too."""
        seen = self._seen[hcw.robot]
        inside = self.world.room_at(seen.x, seen.y)
        if hcw.destination:
            self._escort_stopped_for(hcw, self.world.rooms[hcw.destination], inside)
            return
        if inside in self.world.rooms and inside != hcw.home:
            self._follow_in(hcw, self.world.rooms[inside])
            return
        room = next((room for room in self.world.rooms.values()
                     if room.door.distance_to(seen.x, seen.y) <= DOOR_MATCH_M), None)
        if room is None or room.name in (hcw.home, hcw.blocked_room) or room.contains(hcw.x, hcw.y):
            return
        self._walk_in(hcw, room)

    def _escort_stopped_for(self, hcw: _Hcw, room, inside: str) -> None:
        """The followed robot stopped; the HCW's page named ``room``: go into it if the robot is in or at it."""
        seen = self._seen[hcw.robot]
        if room.name == hcw.blocked_room:
            return
        if inside == room.name:
            self._follow_in(hcw, room)
            return
        if room.door.distance_to(seen.x, seen.y) > DOOR_MATCH_M:
            return   # the pickup, or a pause on the way: not where the page said
        if room.contains(hcw.x, hcw.y):   # led out to the door of the room they were in: back in
            way = [(hcw.x, hcw.y), (room.entry.x, room.entry.y)]
            if self.grid.line_of_sight(*way):
                hcw.state, hcw.trail, hcw.s, hcw.entering_room = 'entering', Polyline(way), 0.0, room.name
                self._log.emit('hcw_entering', hcw_id=hcw.member.hcw_id, room=room.name, robot=hcw.robot)
            else:
                self._arrive(hcw, room.name)
            return
        self._walk_in(hcw, room)

    def _follow_in(self, hcw: _Hcw, room) -> None:
        """The robot stopped inside ``room``: the HCW in it arrives; one 1 m behind it steps in to where it is."""
        if room.contains(hcw.x, hcw.y):
            self._arrive(hcw, room.name)
        elif hcw.s >= hcw.trail.length - FOLLOW_DISTANCE_M - 1e-9:
            # 1 m behind a robot that stopped just past the door: step in to where the robot is.
            hcw.state, hcw.entering_room = 'entering', room.name

    def _walk_in(self, hcw: _Hcw, room) -> None:
        """Walk ``hcw`` from where they are through ``room``'s door to just inside (or record why not)."""
        # Where the robot waits, through the middle of the door, to just inside the room.
        path = [(hcw.x, hcw.y), (room.door.x, room.door.y), room.door_gap, (room.entry.x, room.entry.y)]
        blocked = next((i for i in range(len(path) - 1) if not self.grid.line_of_sight(path[i], path[i + 1])), None)
        if blocked is not None:
            hcw.blocked_room = room.name
            what = 'the door is closed' if blocked >= 1 else 'a wall is in the way to the door'
            self._log.emit('hcw_entry_blocked', hcw_id=hcw.member.hcw_id, room=room.name, robot=hcw.robot,
                           message=f'cannot walk into {room.name} from ({hcw.x:.2f}, {hcw.y:.2f}): {what}')
            return
        hcw.state, hcw.trail, hcw.s, hcw.entering_room = 'entering', Polyline(path), 0.0, room.name
        self._log.emit('hcw_entering', hcw_id=hcw.member.hcw_id, room=room.name, robot=hcw.robot)

    def _readers_at(self, x: float, y: float) -> set[str]:
        """Return the IDs of the readers whose zone holds the point (``x``, ``y``) (m)."""
        inside, _, _ = segment_near((x, y), (x, y), self._reader_xy, self._reader_radius)
        return {self._readers[i].reader_id for i in np.flatnonzero(inside)}

    def _check_readers(self, hcw: _Hcw, way: Sequence[tuple[float, float]]) -> None:
        """Badge ``hcw`` at each reader whose zone the ``way`` they just walked enters (segment test).

        ``way`` is the HCW's positions (m) from where they were to where they are, consecutive
        points joined by straight pieces. A piece that enters a zone (its closest point to the
        reader is within the radius, from outside the zone) scans once, at that closest point, even
        if both its ends are outside; zones entered by one piece scan in the order passed.
        """
        inside = hcw.inside_readers
        for a, b in zip(way, way[1:]):
            near, closest, along = segment_near(a, b, self._reader_xy, self._reader_radius)
            for i in sorted(np.flatnonzero(near), key=lambda i: along[i]):
                if self._readers[i].reader_id not in inside:
                    self._scan(hcw, self._readers[i], (float(closest[i, 0]), float(closest[i, 1])))
            inside = self._readers_at(*b)
        hcw.inside_readers = inside

    def _scan(self, hcw: _Hcw, reader, where: tuple[float, float] | None = None) -> None:
        """Record a badge scan of ``hcw`` at ``reader``, at ``where`` (m; None: where the HCW is)."""
        x, y = (hcw.x, hcw.y) if where is None else where
        self._log.emit('badge_scan', reader_id=reader.reader_id, room=reader.room, badge_id=hcw.badge_id,
                       hcw_id=hcw.member.hcw_id, x=x, y=y)
        hcw.scanned_room = reader.room
