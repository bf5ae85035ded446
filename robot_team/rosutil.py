"""Small rclpy helpers for waiting from worker threads without spinning.

Brains and tools run in worker threads of a ``MultiThreadedExecutor``; they wait for futures
and for ROS (sim) time with these helpers while other executor threads deliver the responses.
"""

from __future__ import annotations

import threading
import time

from robot_team.tools.base import ToolError


def wait_future(future, timeout_s: float, what: str):
    """Block until an rclpy ``future`` is done; return its result.

    Parameters
    ----------
    future
        An ``rclpy.task.Future`` completed by another executor thread.
    timeout_s
        Longest wait, wall seconds.
    what
        The resource waited on, named in the error.

    Raises
    ------
    ToolError
        If the future is not done in time, was cancelled, or raised.
    """
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise ToolError(f'timed out after {timeout_s:.0f} s (wall) waiting for {what}')
    if future.cancelled():
        raise ToolError(f'{what} was cancelled')
    exc = future.exception()
    if exc is not None:
        raise ToolError(f'{what} failed: {exc}')
    return future.result()


def wait_for_server(client, timeout_s: float, what: str) -> None:
    """Wait until a service or action server is available.

    Raises
    ------
    ToolError
        If no server appears within ``timeout_s`` wall seconds.
    """
    waiter = getattr(client, 'wait_for_server', None) or client.wait_for_service
    if not waiter(timeout_sec=timeout_s):
        raise ToolError(f'{what} is not available (waited {timeout_s:.0f} s)')


def ros_now_s(node) -> float:
    """Return ``node``'s ROS time (sim time under ``use_sim_time``) in seconds."""
    return node.get_clock().now().nanoseconds * 1e-9


def wait_ros_time(node, condition, timeout_s: float, *, wall_cap_s: float = 120.0,
                  poll_s: float = 0.005) -> bool:
    """Wait until ``condition()`` is true or ``timeout_s`` of ROS time passes.

    ROS time is sim time under ``use_sim_time``; ``wall_cap_s`` bounds the wall-clock wait
    in case the clock stops. Returns the final value of ``condition()``.
    """
    start = ros_now_s(node)
    wall_deadline = time.monotonic() + wall_cap_s
    while not condition():
        if ros_now_s(node) - start >= timeout_s or time.monotonic() >= wall_deadline:
            return bool(condition())
        time.sleep(poll_s)
    return True
