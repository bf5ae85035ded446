"""ROS time in seconds, through rclpy: the one place stamps and durations are converted.

The team keeps times as float seconds of ROS time (sim time under ``use_sim_time``); messages
carry them as ``builtin_interfaces/Time`` and ``Duration``. These functions convert between the
two with rclpy's own types (:class:`rclpy.time.Time`, :class:`rclpy.duration.Duration`) and one
rounding rule: seconds become the nearest whole nanosecond (rclpy's ``seconds=`` argument
truncates, so a float such as ``123456.789012345`` could lose a nanosecond).
"""

from __future__ import annotations

from builtin_interfaces.msg import Duration as DurationMsg
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.duration import Duration
from rclpy.time import Time

S_TO_NS = 1_000_000_000
"""Nanoseconds per second."""


def _ns(seconds: float) -> int:
    """Return ``seconds`` as the nearest whole number of nanoseconds (ValueError for NaN, OverflowError for inf)."""
    return round(float(seconds) * S_TO_NS)


def s_to_time(seconds: float) -> Time:
    """Return ROS time ``seconds`` (s) as an :class:`rclpy.time.Time` (ROS clock type), to the nearest ns.

    Raises
    ------
    ValueError
        If ``seconds`` is negative or NaN (rclpy holds no time before the epoch).
    OverflowError
        If ``seconds`` is infinite or beyond rclpy's int64 nanoseconds.
    """
    return Time(nanoseconds=_ns(seconds))


def s_to_stamp(seconds: float) -> TimeMsg:
    """Return ROS time ``seconds`` (s) as a ``builtin_interfaces/Time``, to the nearest nanosecond.

    The message's ``sec`` is an int32: a time past 2**31 - 1 s is built but fails when published.

    Raises
    ------
    ValueError
        If ``seconds`` is negative or NaN.
    OverflowError
        If ``seconds`` is infinite or beyond rclpy's int64 nanoseconds.
    """
    return s_to_time(seconds).to_msg()


def stamp_to_s(stamp: TimeMsg) -> float:
    """Return a ``builtin_interfaces/Time`` as ROS time in seconds (float).

    Raises
    ------
    TypeError
        If ``stamp`` is not a ``builtin_interfaces/Time``.
    ValueError
        If the stamp is negative (``sec < 0``).
    """
    return Time.from_msg(stamp).nanoseconds / S_TO_NS


def s_to_duration(seconds: float) -> DurationMsg:
    """Return a span of ``seconds`` (s, may be negative) as a ``builtin_interfaces/Duration``, to the nearest ns.

    A negative span has a negative ``sec`` and a ``nanosec`` in [0, 1e9), as rclpy writes it
    (-1.5 s is ``sec=-2, nanosec=500000000``); ``sec`` is an int32, as for :func:`s_to_stamp`.

    Raises
    ------
    ValueError
        If ``seconds`` is NaN.
    OverflowError
        If ``seconds`` is infinite or beyond rclpy's int64 nanoseconds.
    """
    return Duration(nanoseconds=_ns(seconds)).to_msg()


def duration_to_s(duration: DurationMsg) -> float:
    """Return a ``builtin_interfaces/Duration`` as seconds (float, negative for a negative span).

    Raises
    ------
    TypeError
        If ``duration`` is not a ``builtin_interfaces/Duration``.
    """
    return Duration.from_msg(duration).nanoseconds / S_TO_NS


def now_s(node) -> float:
    """Return ``node``'s clock now in seconds: ROS time, i.e. sim time under ``use_sim_time``.

    Under sim time the clock reads 0 until the first ``/clock`` message arrives.

    Raises
    ------
    rclpy.exceptions.InvalidHandle
        If the node (hence its clock) has been destroyed.
    """
    return node.get_clock().now().nanoseconds / S_TO_NS
