"""Errors shared across layers: a tool that could not work, a tool its caller does not own.

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
