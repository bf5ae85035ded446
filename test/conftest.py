"""Shared test fixtures: DDS kept on localhost, one ROS domain per ROS graph, private contexts.

Every test that builds a ROS graph gets its own ``ROS_DOMAIN_ID`` (reserved across processes
with a socket lock, as ament_cmake_ros's domain_coordinator does) and its own rclpy Context, so
graphs of parallel or successive tests cannot hear each other.
"""

import os
import pytest

from ros_helpers import release_domain_ids, reserve_domain_id

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')


@pytest.fixture
def domain_id():
    """A ROS domain ID reserved for this test (given back after it, reused as late as possible)."""
    domain = reserve_domain_id()
    yield domain
    release_domain_ids(domain)


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
