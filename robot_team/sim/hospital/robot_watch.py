"""The robots as the hospital sees them: their last observed poses and whether each one stopped.

The hospital knows the robots only from where they are seen (``amcl_pose``, ``odom`` or TF, as
:meth:`~robot_team.sim.hospital.engine.HospitalEngine.observe_robot` hands them on) and from their
odometry's twist (:meth:`~robot_team.sim.hospital.engine.HospitalEngine.observe_motion`).
:class:`RobotWatch` keeps that and answers whether a robot *stopped*:

* with odometry: once it has reported the robot standing (under :data:`STANDING_SPEED` and
  :data:`STANDING_YAW_RATE`) for :data:`STOP_DWELL_S` by its stamps; never inferred from silence;
* without: once its observed poses show it within :data:`STILL_TOLERANCE_M` of one spot for
  :data:`STOP_DWELL_S`, or once nothing was heard of it for :data:`SILENT_STOP_S` plus the longest
  delay with which its last :data:`DELAYS_KEPT` poses arrived, and for two updates.

Units: SI (m, s, rad), poses in the map frame. No rclpy here.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from robot_team.contracts.names import RobotId
from robot_team.sim.common import SimInputError
from robot_team.sim.world import Pose2D

STILL_TOLERANCE_M = 0.05   # a robot that moved less than this since it was last seen moving stands still
STOP_DWELL_S = 1.0         # ... and counts as stopped once observed standing still this long (s)
SILENT_STOP_S = 3.0        # ... or once nothing was heard of it for this long (s), plus the poses' recent delay
DELAYS_KEPT = 20           # how many of a robot's latest pose delays (reception time - stamp) are kept
MAX_DELAY_S = 10.0         # a longer delay counts as this (a latched pose from long ago says nothing of lag)
STANDING_SPEED = 0.01      # m/s: odometry below this speed (and STANDING_YAW_RATE) reports a robot standing
STANDING_YAW_RATE = 0.01   # rad/s


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


class RobotWatch:
    """What the hospital saw of each robot: poses (:attr:`seen`) and odometry (:attr:`odometry`).

    Parameters
    ----------
    robots
        The robots watched (the ones HCWs may be paged to follow).

    Notes
    -----
    :attr:`seen` and :attr:`odometry` are the changing state (a hospital checkpoint holds them).
    Times are on the engine's clock (s); the caller passes its time now to each call that needs it.
    """

    def __init__(self, robots: Sequence[RobotId]):
        self.names = tuple(robots)
        self.seen: dict[str, _SeenRobot] = {}
        self.odometry: dict[str, _Odometry] = {}

    def check(self, robot: RobotId) -> None:
        """Raise :class:`~robot_team.sim.common.SimInputError` if ``robot`` is not one of :attr:`names`."""
        if robot not in self.names:
            raise SimInputError(f"unknown robot '{robot}': expected one of {', '.join(self.names)}")

    def pose(self, robot: RobotId) -> Pose2D | None:
        """Return where ``robot`` was last seen (map frame, m, rad), or None if never."""
        seen = self.seen.get(robot)
        return None if seen is None else Pose2D(seen.x, seen.y, seen.yaw)

    def position(self, robot: RobotId) -> tuple[float, float] | None:
        """Return where ``robot`` was last seen, ``(x, y)`` (m), or None if never."""
        seen = self.seen.get(robot)
        return None if seen is None else (seen.x, seen.y)

    def stopped(self, robot: RobotId, now: float) -> bool:
        """Return whether ``robot`` stopped at time ``now`` (s): see the module."""
        seen = self.seen.get(robot)
        if seen is None:
            return False
        odometry = self.odometry.get(robot)
        if odometry is not None:     # it says whether the robot stands: never inferred from silence
            return (odometry.standing_since is not None
                    and odometry.stamp - odometry.standing_since >= STOP_DWELL_S - 1e-9)
        silence = SILENT_STOP_S + max(seen.delays, default=0.0)
        return (seen.seen_at - seen.still_since >= STOP_DWELL_S - 1e-9
                or (now - seen.seen_at >= silence - 1e-9 and seen.updates_since >= 2))

    def updated(self) -> None:
        """Count one update of the floor (a step) for every robot seen (silence is counted in updates too)."""
        for seen in self.seen.values():
            seen.updates_since += 1

    def observe_motion(self, robot: RobotId, speed: float, yaw_rate: float, stamp: float | None, now: float) -> None:
        """Record ``robot``'s odometry twist: ``speed`` (m/s) and ``yaw_rate`` (rad/s) at ``stamp`` (s; None: ``now``).

        Values that are not finite, and a twist older than the last one, are ignored.
        """
        speed, yaw_rate = float(speed), float(yaw_rate)
        stamp = now if stamp is None else float(stamp)
        if not all(math.isfinite(v) for v in (speed, yaw_rate, stamp)):
            return
        odometry = self.odometry.get(robot)
        if odometry is None:
            odometry = self.odometry[robot] = _Odometry(stamp)
        elif stamp < odometry.stamp:
            return
        odometry.stamp = stamp
        if abs(speed) < STANDING_SPEED and abs(yaw_rate) < STANDING_YAW_RATE:
            if odometry.standing_since is None:
                odometry.standing_since = stamp
        else:
            odometry.standing_since = None

    def observe_pose(self, robot: RobotId, x: float, y: float, yaw: float, stamp: float | None,
                     now: float) -> tuple[float, float] | None:
        """Record that ``robot`` was seen at (``x``, ``y``, ``yaw``) (m, rad) at ``stamp`` (s; None: ``now``).

        Returns
        -------
        tuple[float, float] or None
            Where it was seen before, ``(x, y)`` (m; the new position if it was never seen), or
            None if the observation was ignored: a pose or stamp that is not finite (a
            localizer's glitch), or an observation older than the last one (whose delay,
            ``now - stamp`` up to :data:`MAX_DELAY_S`, is kept all the same, as every finite one's).
        """
        x, y, yaw = float(x), float(y), float(yaw)
        stamp = now if stamp is None else float(stamp)
        if not all(math.isfinite(v) for v in (x, y, yaw, stamp)):
            return None
        seen = self.seen.get(robot)
        if seen is None:
            seen = self.seen[robot] = _SeenRobot(x, y, yaw, stamp, x, y, stamp)
        seen.delays.append(min(max(now - stamp, 0.0), MAX_DELAY_S))
        if stamp < seen.seen_at:
            return None
        before = (seen.x, seen.y)
        seen.x, seen.y, seen.yaw, seen.seen_at, seen.updates_since = x, y, yaw, stamp, 0
        if math.hypot(x - seen.still_x, y - seen.still_y) > STILL_TOLERANCE_M:
            seen.still_x, seen.still_y, seen.still_since = x, y, stamp
        return before
