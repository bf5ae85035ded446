"""How HCWs move: waiting for the robot a page named, following it along its observed trail, walking into rooms.

Inferred from the robot's observed poses (:mod:`~robot_team.sim.hospital.robot_watch`) only: an
HCW who acknowledged a page naming a robot waits where they are until that robot comes within
:data:`FOLLOW_TRIGGER_M` (in line of sight): seen there, or seen passing there, its way between
two positions seen one after the other (a straight segment) coming that close, however far apart
the two were. They walk to the point where it came closest, then :data:`FOLLOW_DISTANCE_M`
behind it along the trail of its observed positions (where two positions seen one after the other
are not in line of sight, the trail goes through the doors of the rooms they are in).

When the robot stops at the door approach pose of a room (within :data:`DOOR_MATCH_M`; not the
HCW's own area), the HCW walks through the door into that room (``hcw_entering``, then
``hcw_arrived``). When it stops inside such a room, the HCW follows it in and stays
(``hcw_arrived``). A page that names a room makes it the only one they go into. Closed doors
block HCWs too (``hcw_entry_blocked``); the badge readers on their way scan them
(:mod:`~robot_team.sim.hospital.readers`).

Events: ``hcw_following``, ``hcw_entering``, ``hcw_arrived``, ``hcw_entry_blocked``,
``hcw_waiting``. Units: SI (m, s, rad), map frame. No rclpy here.
"""

from __future__ import annotations

import math

from robot_team.contracts.names import RobotId
from robot_team.sim.common import EventLog, Polyline, segment_near
from robot_team.sim.grid import WallGrid
from robot_team.sim.hospital.readers import BadgeReaders
from robot_team.sim.hospital.robot_watch import RobotWatch
from robot_team.sim.hospital.staff import Hcw
from robot_team.sim.world import EdWorld

FOLLOW_TRIGGER_M = 2.0     # an HCW who acknowledged starts following when the robot is this close
FOLLOW_DISTANCE_M = 1.0    # how far behind the robot, along its trail, a follower walks
DOOR_MATCH_M = 0.75        # a robot stopped this close to a room's door approach pose is "at that door"


class HcwMotion:
    """Moves the HCWs escorted by the robots: waiting, following, entering rooms, arriving.

    Parameters
    ----------
    world
        The ED floor.
    grid
        The walls and the doors closed now (:attr:`grid`; the engine replaces it when a door
        closes or opens).
    watch
        What the hospital saw of the robots (where they are, whether they stopped).
    readers
        The badge readers, which scan the HCWs walking past.
    log
        Where the HCWs' events go.
    speed
        HCW walking speed, m/s.
    """

    def __init__(self, world: EdWorld, grid: WallGrid, watch: RobotWatch, readers: BadgeReaders, log: EventLog,
                 speed: float):
        self.world = world
        self.grid = grid
        self.speed = float(speed)
        self._watch = watch
        self._readers = readers
        self._log = log

    def escort(self, hcw: Hcw, robot: RobotId, room: str) -> None:
        """``hcw`` acknowledged a page naming ``robot`` ('' none) and ``room`` ('' unnamed): wait for it."""
        if robot and not (hcw.state == 'following' and hcw.robot == robot):
            hcw.state, hcw.robot, hcw.trail = 'waiting', robot, None
        if robot:   # a new escort: the room it ends in, they badge in (an encounter starts with a tap)
            hcw.destination, hcw.scanned_room = room, ''

    def release(self, hcw: Hcw, robot: RobotId) -> bool:
        """``robot`` was lost: if ``hcw`` follows or waits for it, they wait where they are; return whether so."""
        if hcw.robot != robot or hcw.state not in ('following', 'waiting'):
            return False
        hcw.state, hcw.robot, hcw.trail, hcw.s = 'idle', '', None, 0.0
        self._log.emit('hcw_waiting', hcw_id=hcw.member.hcw_id, robot=robot, x=hcw.x, y=hcw.y,
                       area=self.world.room_at(hcw.x, hcw.y),
                       message=f'{robot} was lost: HCW #{hcw.member.hcw_id} waits where they are')
        return True

    def robot_seen(self, hcw: Hcw, before: tuple[float, float], here: tuple[float, float]) -> None:
        """``hcw``'s robot was seen at ``here`` after ``before`` (m): start following, or extend the trail."""
        if hcw.state == 'waiting':
            self._follow_if_passing(hcw, before, here)
        elif hcw.state == 'following':
            last = hcw.trail.points[-1]
            if not self.grid.line_of_sight(last, here):
                for point in self.through_doors(last, here):
                    hcw.trail.append(*point)
            hcw.trail.append(*here)

    def move(self, hcw: Hcw, h: float, t: float) -> None:
        """Move ``hcw`` (waiting, following or entering) over ``h`` sim s, ending at sim time ``t`` (s)."""
        if hcw.state == 'waiting':
            seen = self._watch.position(hcw.robot)
            if seen is not None:    # where the robot stands (its way there was tested as it was seen)
                self._follow_if_passing(hcw, seen, seen)
            return
        if hcw.state == 'following':
            self._walk(hcw, h, hcw.trail.length - FOLLOW_DISTANCE_M)
            if self._watch.stopped(hcw.robot, t):
                self._escort_stopped(hcw)
            else:
                hcw.blocked_room = ''
            return
        if hcw.state == 'entering':
            self._walk(hcw, h, hcw.trail.length)
            if hcw.s >= hcw.trail.length - 1e-9:
                self._arrive(hcw, hcw.entering_room)

    def through_doors(self, a: tuple[float, float], b: tuple[float, float]) -> list[tuple[float, float]]:
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

    def _follow_if_passing(self, hcw: Hcw, a: tuple[float, float], b: tuple[float, float]) -> None:
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
            for point in self.through_doors(passing, b):
                trail.append(*point)
        trail.append(*b)
        hcw.state, hcw.trail, hcw.s = 'following', trail, 0.0
        self._log.emit('hcw_following', hcw_id=hcw.member.hcw_id, robot=hcw.robot, x=hcw.x, y=hcw.y,
                       area=self.world.room_at(hcw.x, hcw.y))

    def _walk(self, hcw: Hcw, h: float, target_s: float) -> None:
        """Walk an HCW along their trail towards arc length ``target_s`` at :attr:`speed`; badge on the way."""
        if target_s <= hcw.s:
            return
        start, hcw.s = hcw.s, min(target_s, hcw.s + self.speed * h)
        way = [(hcw.x, hcw.y), *hcw.trail.between(start, hcw.s)[1:]]
        x, y = way[-1]
        if math.hypot(x - hcw.x, y - hcw.y) > 1e-6:
            hcw.yaw = math.atan2(y - hcw.y, x - hcw.x)
        hcw.x, hcw.y = x, y
        self._readers.check(hcw, way)

    def _arrive(self, hcw: Hcw, room: str) -> None:
        # Entering a room means passing its door: badge at its reader if the way in stayed outside the
        # reader's zone (through the far side of the door gap). The walk there was already checked.
        self._readers.badge_in(hcw, room)
        # The HCW stays in that room: it is where they rest until paged again (a later case's escort
        # picks them up there; the robot stopping in it then is a pickup, not an arrival).
        hcw.state, hcw.entering_room, hcw.home = 'arrived', room, room
        self._log.emit('hcw_arrived', hcw_id=hcw.member.hcw_id, room=room, robot=hcw.robot, x=hcw.x, y=hcw.y)

    def _escort_stopped(self, hcw: Hcw) -> None:
        """The followed robot stopped: at a room's door, walk in; inside a room, arrive once in it too."""
        x, y = self._watch.position(hcw.robot)
        inside = self.world.room_at(x, y)
        if hcw.destination:
            self._escort_stopped_for(hcw, self.world.rooms[hcw.destination], inside)
            return
        if inside in self.world.rooms and inside != hcw.home:
            self._follow_in(hcw, self.world.rooms[inside])
            return
        room = next((room for room in self.world.rooms.values()
                     if room.door.distance_to(x, y) <= DOOR_MATCH_M), None)
        if room is None or room.name in (hcw.home, hcw.blocked_room) or room.contains(hcw.x, hcw.y):
            return
        self._walk_in(hcw, room)

    def _escort_stopped_for(self, hcw: Hcw, room, inside: str) -> None:
        """The followed robot stopped; the HCW's page named ``room``: go into it if the robot is in or at it."""
        x, y = self._watch.position(hcw.robot)
        if room.name == hcw.blocked_room:
            return
        if inside == room.name:
            self._follow_in(hcw, room)
            return
        if room.door.distance_to(x, y) > DOOR_MATCH_M:
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

    def _follow_in(self, hcw: Hcw, room) -> None:
        """The robot stopped inside ``room``: the HCW in it arrives; one 1 m behind it steps in to where it is."""
        if room.contains(hcw.x, hcw.y):
            self._arrive(hcw, room.name)
        elif hcw.s >= hcw.trail.length - FOLLOW_DISTANCE_M - 1e-9:
            # 1 m behind a robot that stopped just past the door: step in to where the robot is.
            hcw.state, hcw.entering_room = 'entering', room.name

    def _walk_in(self, hcw: Hcw, room) -> None:
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
