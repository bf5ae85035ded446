"""Planar geometry helpers in ROS conventions (REP-103: x forward, y left, z up; angles in rad).

One place for yaw <-> quaternion conversions, through transforms3d (its quaternions are
``(w, x, y, z)``; ``geometry_msgs/Quaternion`` fields are named). Used by the robots' tools, the
simulator nodes and the floor's consumers alike.
"""

from __future__ import annotations

import bisect
import math

import numpy as np
import transforms3d
from geometry_msgs.msg import Quaternion


def yaw_to_quaternion(yaw: float) -> Quaternion:
    """Return a ``geometry_msgs/Quaternion`` for a rotation of ``yaw`` rad about +z (REP-103)."""
    w, x, y, z = transforms3d.euler.euler2quat(0.0, 0.0, float(yaw))
    return Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))


def quaternion_to_yaw(q) -> float:
    """Return the yaw (rad, about +z, in [-pi, pi]) of a quaternion with fields ``x, y, z, w``.

    ``q`` is a ``geometry_msgs/Quaternion`` or anything with the same four float attributes
    (e.g. a TF ``Transform.rotation``).
    """
    return float(transforms3d.euler.quat2euler([q.w, q.x, q.y, q.z])[2])


def path_length(points) -> float:
    """Return the length of the path through ``points`` ((x, y) pairs, m), e.g. a Nav2 plan; 0 for fewer than 2."""
    xy = np.asarray(list(points), dtype=float).reshape(-1, 2)
    return float(np.hypot(*np.diff(xy, axis=0).T).sum()) if len(xy) > 1 else 0.0


TRACK_MATCH = 1e-6
"""How close (s, m) a pose must be to a track's report, in time and in place, to be that report."""


def track_holds(track, stamp_s: float, x: float, y: float) -> bool:
    """Return whether ``track`` has a report at ``stamp_s`` (s) at (``x``, ``y``) (m), within :data:`TRACK_MATCH`.

    ``track``: reports ``(t, x, y, ...)`` in time order, e.g. a robot's ``trajectory``: a pose heard on
    ``amcl_pose`` that its trajectory holds came from it; one it does not hold says the trajectory
    is stale.
    """
    at = bisect.bisect_left([r[0] for r in track], stamp_s - TRACK_MATCH)
    return (at < len(track) and abs(track[at][0] - stamp_s) <= TRACK_MATCH
            and math.hypot(track[at][1] - x, track[at][2] - y) <= TRACK_MATCH)
