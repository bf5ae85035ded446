"""Errors shared across layers: a tool that could not work, a tool its caller does not own, a bad choice.

They sit at the bottom layer (contracts) so that ROS helpers, tools, brains and the rclpy-free
core raise and catch the same types without importing each other.
"""

from __future__ import annotations


class ToolAccessError(PermissionError):
    """A tool was called by a robot that does not own it (or does not exist)."""


class ToolError(RuntimeError):
    """A tool could not do its work (bad arguments, ROS timeout, unreachable server...).

    ``output`` keeps whatever ground truth the failed call produced (e.g. the Nav2 result of
    an aborted goal); it is recorded in the journal like a successful call's output.
    """

    def __init__(self, message: str, output: dict | None = None):
        super().__init__(message)
        self.output = dict(output or {})


def check_choice(value: str, choices: tuple[str, ...], what: str, kind: str) -> str:
    """Return ``value`` if it is one of ``choices``.

    Raises
    ------
    ValueError
        ``"<what> '<value>' is not <kind>: expected <a> or <b>"``, otherwise (``what`` names the
        input, e.g. ``'--clock'``; ``kind`` the set, e.g. ``'a clock mode'``).
    """
    if value not in choices:
        raise ValueError(f"{what} {value!r} is not {kind}: expected {' or '.join(choices)}")
    return value
