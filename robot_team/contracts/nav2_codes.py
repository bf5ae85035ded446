"""Nav2 error codes, by name: one table for the robots and the simulator (no rclpy, no nav2_msgs).

- :class:`ComputePathToPoseError`: the result codes of ``nav2_msgs/action/ComputePathToPose``
  in ROS 2 Jazzy (navigation2 ``jazzy`` branch, result section: ``UNKNOWN=200 ...
  NO_VALID_PATH=208``; the 300 range belongs to ``ComputePathThroughPoses``). Nav2's
  bt_navigator passes the planner's code on as the ``NavigateToPose`` result's ``error_code``.
- :class:`NavigateToPoseError`: the codes of ``nav2_msgs/action/NavigateToPose`` itself (common
  to Jazzy, Kilted and main: NONE=0, UNKNOWN=9000 ... TIMEOUT=9003).
"""

from __future__ import annotations

from enum import IntEnum


class ComputePathToPoseError(IntEnum):
    """``nav2_msgs/action/ComputePathToPose`` result ``error_code`` values (Jazzy)."""

    NONE = 0
    UNKNOWN = 200
    INVALID_PLANNER = 201
    TF_ERROR = 202
    START_OUTSIDE_MAP = 203
    GOAL_OUTSIDE_MAP = 204
    START_OCCUPIED = 205
    GOAL_OCCUPIED = 206
    TIMEOUT = 207
    NO_VALID_PATH = 208


class NavigateToPoseError(IntEnum):
    """``nav2_msgs/action/NavigateToPose`` result ``error_code`` values (Jazzy, Kilted, main)."""

    NONE = 0
    UNKNOWN = 9000
    FAILED_TO_LOAD_BEHAVIOR_TREE = 9001
    TF_ERROR = 9002
    TIMEOUT = 9003


def nav2_error_name(code: int) -> str:
    """Return the Nav2 name of a ``NavigateToPose`` result ``error_code`` (``'UNKNOWN'`` if none).

    Looks the code up among the navigator's own codes, then the planner codes bt_navigator
    passes through (:class:`ComputePathToPoseError`).
    """
    for table in (NavigateToPoseError, ComputePathToPoseError):
        try:
            return table(int(code)).name
        except ValueError:
            continue
    return 'UNKNOWN'
