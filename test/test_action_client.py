"""TeamActionClient: a goal answered before ``send_goal_async`` returns, a client made while spinning.

rclpy 9.1.2's ``ActionClient.send_goal_async`` returns a second future, registered after the
client's lock let the response be handled, and its constructor makes the client a waitable before
it has that lock (robot_team.ros.action_client). To open each window every time, the tests pause
the sending or constructing thread at the Python calls it makes past the point of the race
(``sys.setprofile``), the way a loaded machine descheduled it once in the suite.
"""

import sys
import threading
import time

import pytest

pytest.importorskip('rclpy')
from nav2_msgs.action import ComputePathToPose  # noqa: E402
from rclpy.action import ActionClient, ActionServer  # noqa: E402

from ros_helpers import wait_for  # noqa: E402
from robot_team.ros.action_client import TeamActionClient  # noqa: E402
from robot_team.ros.executor import TeamExecutor  # noqa: E402
from robot_team.ros.spin import SpinThread  # noqa: E402

PAUSE_S = 0.1   # per Python call the sender makes once its goal request is out: the response is handled meanwhile


def _send_paused(client, goal):
    """Call ``client.send_goal_async(goal)`` with the thread paused at each call after the request is sent."""
    sent = threading.Event()

    def profile(frame, event, arg):
        if event == 'c_return' and getattr(arg, '__name__', '') == 'send_goal_request':
            sent.set()
        elif event == 'call' and sent.is_set():
            time.sleep(PAUSE_S)

    sys.setprofile(profile)
    try:
        return client.send_goal_async(goal), sent.is_set()
    finally:
        sys.setprofile(None)


def _construct_paused(make, seen: threading.Event):
    """Return ``make()``, its thread held once the client is a waitable until ``seen`` (the executor used it)."""
    added = threading.Event()

    def profile(frame, event, arg):
        if event == 'return' and frame.f_code.co_name == 'add_waitable':
            added.set()
        elif event == 'call' and added.is_set() and not seen.is_set():
            seen.wait(5.0)

    sys.setprofile(profile)
    try:
        return make(), added.is_set()
    finally:
        sys.setprofile(None)


class _Spinning:
    """An executor spinning in a :class:`SpinThread` that stops at the first exception (kept there)."""

    def __init__(self, executor):
        self.executor = executor
        self.thread = SpinThread(executor, 'spin-under-test', max_respins=0)
        self.thread.start()

    def add_node(self, node):
        self.executor.add_node(node)


@pytest.fixture(params=['MultiThreadedExecutor', 'TeamExecutor'])
def spinning(request, ros_context):
    """An executor of the kind the team's programs use, spinning in a thread."""
    from rclpy.executors import MultiThreadedExecutor
    kind = MultiThreadedExecutor if request.param == 'MultiThreadedExecutor' else TeamExecutor
    spinning = _Spinning(kind(num_threads=4, context=ros_context))
    yield spinning
    spinning.executor.shutdown(timeout_sec=2.0)
    spinning.thread.join(timeout=5.0)


def _graph(ros_context, spinning, make_client=None):
    """Start a ``compute_path_to_pose`` server and a client node; return the node, the goals served, the client.

    ``make_client(node)`` makes the client before the node spins (the construction race is not at stake).
    """
    import rclpy

    served = []

    def execute(goal_handle):
        served.append(bytes(goal_handle.goal_id.uuid))
        goal_handle.succeed()
        return ComputePathToPose.Result()

    server_node = rclpy.create_node('planner_server', context=ros_context)
    ActionServer(server_node, ComputePathToPose, 'compute_path_to_pose', execute)
    client_node = rclpy.create_node('robot', context=ros_context)
    client = make_client(client_node) if make_client is not None else None
    spinning.add_node(server_node)
    spinning.add_node(client_node)
    return client_node, served, client


def _completes_goals(client, served, goals: int) -> None:
    """Assert that ``goals`` goals sent one by one with the window open are each answered, run and finished."""
    for attempt in range(goals):
        future, sent = _send_paused(client, ComputePathToPose.Goal())
        assert sent, 'the profile hook never saw the goal request go out: the test opened no window'
        assert wait_for(future.done, timeout=5.0), f'goal {attempt}: the goal response never completed the future'
        handle = future.result()
        assert handle.accepted
        assert wait_for(lambda: bytes(handle.goal_id.uuid) in served, 5.0), f'goal {attempt}: the server never ran it'
        result = handle.get_result_async()
        assert wait_for(result.done, timeout=5.0), f'goal {attempt}: no result'


def test_a_goal_answered_before_send_goal_async_returns_completes_its_future(ros_context, spinning):
    _node, served, client = _graph(
        ros_context, spinning, lambda node: TeamActionClient(node, ComputePathToPose, 'compute_path_to_pose'))
    assert client.wait_for_server(timeout_sec=10.0)
    _completes_goals(client, served, 3)
    # nothing left registered: each future was registered once and removed once
    assert wait_for(lambda: not client._pending_goal_requests and not client._futures, 5.0)


def test_rclpys_own_client_loses_that_response(ros_context, spinning):
    """The same window with rclpy's ``ActionClient``: while this holds, TeamActionClient is needed."""
    _node, served, client = _graph(
        ros_context, spinning, lambda node: ActionClient(node, ComputePathToPose, 'compute_path_to_pose'))
    assert client.wait_for_server(timeout_sec=10.0)
    future, sent = _send_paused(client, ComputePathToPose.Goal())
    assert sent
    assert wait_for(lambda: len(served) == 1, 5.0), 'the server never got the goal'
    assert not wait_for(future.done, timeout=2.0), (
        "rclpy's ActionClient completed the future: the installed rclpy has ros2/rclpy#1532's fix, "
        'robot_team.ros.action_client.TeamActionClient may go')


def _probing(base):
    """``base`` (an action client class) that sets ``seen`` once an executor asks it for its entities."""
    class Probe(base):
        seen = threading.Event()

        def get_num_entities(self):
            type(self).seen.set()
            return super().get_num_entities()
    return Probe


def test_a_client_made_on_a_spinning_node_leaves_the_executor_spinning(ros_context, spinning):
    client_node, served, _ = _graph(ros_context, spinning)
    probe = _probing(TeamActionClient)
    client, added = _construct_paused(
        lambda: probe(client_node, ComputePathToPose, 'compute_path_to_pose'), probe.seen)
    assert added, 'the profile hook never saw the client become a waitable: the test opened no window'
    assert probe.seen.is_set(), 'the executor never built a wait set with the half-made client in it'
    failures = spinning.thread.take_failures()
    assert spinning.thread.is_alive() and not failures, failures
    assert client.wait_for_server(timeout_sec=10.0)
    _completes_goals(client, served, 1)


def test_rclpys_own_client_made_on_a_spinning_node_can_stop_the_executor(ros_context, spinning):
    """The same window with rclpy's ``ActionClient``: while this holds, TeamActionClient is needed."""
    client_node, _served, _ = _graph(ros_context, spinning)
    probe = _probing(ActionClient)
    _client, added = _construct_paused(
        lambda: probe(client_node, ComputePathToPose, 'compute_path_to_pose'), probe.seen)
    assert added and probe.seen.is_set()
    assert wait_for(lambda: spinning.thread.gave_up, 5.0), (
        "rclpy's ActionClient has its lock before it is a waitable: the installed rclpy has ros2/rclpy#1591, "
        'the lock in robot_team.ros.action_client.TeamActionClient may go')
    error = spinning.thread.take_failures()[0].exception
    assert isinstance(error, AttributeError) and '_lock' in str(error)
