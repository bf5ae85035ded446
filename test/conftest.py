"""Shared test fixtures: DDS kept on localhost, one ROS domain per ROS graph, private contexts.

Every test that builds a ROS graph gets its own ``ROS_DOMAIN_ID`` (reserved across processes
with a socket lock, as ament_cmake_ros's domain_coordinator does) and its own rclpy Context, so
graphs of parallel or successive tests cannot hear each other.
"""

import os
import socket

import pytest

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')

_held_sockets = []


def reserve_domain_id() -> int:
    """Reserve and return a ROS domain ID (1-101) unused by any other process on this machine."""
    for domain in range(1, 102):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind(('127.0.0.1', 22119 + domain))   # a lock port per domain
        except OSError:
            sock.close()
            continue
        _held_sockets.append(sock)
        return domain
    raise RuntimeError('no free ROS domain ID between 1 and 101')


@pytest.fixture
def domain_id() -> int:
    """A ROS domain ID reserved for this test."""
    return reserve_domain_id()


@pytest.fixture
def ros_context(domain_id):
    """An initialized private rclpy Context on a private domain; shut down after the test."""
    rclpy = pytest.importorskip('rclpy')
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def executor(ros_context):
    """A MultiThreadedExecutor bound to ``ros_context``, spinning in a background thread."""
    import threading

    from rclpy.executors import MultiThreadedExecutor
    exe = MultiThreadedExecutor(num_threads=4, context=ros_context)
    thread = threading.Thread(target=exe.spin, daemon=True)
    thread.start()
    try:
        yield exe
    finally:
        exe.shutdown(timeout_sec=2.0)
        thread.join(timeout=5.0)


def wait_for(predicate, timeout: float = 10.0, period: float = 0.02):
    """Poll ``predicate`` until it is truthy or ``timeout`` (wall s) passes; return its last value."""
    import time
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(period)
        value = predicate()
    return value
