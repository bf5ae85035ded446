"""Planar geometry helpers in ROS conventions (REP-103: x forward, y left, z up; angles in rad).

One place for yaw <-> quaternion conversions, through transforms3d (its quaternions are
``(w, x, y, z)``; ``geometry_msgs/Quaternion`` fields are named). Used by the robots' tools, the
simulator nodes and the floor's consumers alike.
"""

from __future__ import annotations

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
