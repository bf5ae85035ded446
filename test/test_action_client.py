"""A goal the server answers before ``send_goal_async`` returns still completes the client's future.

rclpy 9.1.2's ``ActionClient.send_goal_async`` returns a second future, registered after the
client's lock let the response be handled (robot_team.ros.action_client). To open that window
every time, the test pauses the sending thread at each Python call it makes after the goal
request went out (``sys.setprofile``), the way a loaded machine descheduled it once in the suite.
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


@pytest.fixture(params=['MultiThreadedExecutor', 'TeamExecutor'])
def spinning(request, ros_context):
    """An executor of the kind the team's programs use, spinning in a thread."""
    from rclpy.executors import MultiThreadedExecutor
    kind = MultiThreadedExecutor if request.param == 'MultiThreadedExecutor' else TeamExecutor
    executor = kind(num_threads=4, context=ros_context)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield executor
    executor.shutdown(timeout_sec=2.0)
    thread.join(timeout=5.0)


def _graph(ros_context, spinning):
    import rclpy

    served = []

    def execute(goal_handle):
        served.append(bytes(goal_handle.goal_id.uuid))
        goal_handle.succeed()
        return ComputePathToPose.Result()

    server_node = rclpy.create_node('planner_server', context=ros_context)
    ActionServer(server_node, ComputePathToPose, 'compute_path_to_pose', execute)
    client_node = rclpy.create_node('robot', context=ros_context)
    spinning.add_node(server_node)
    spinning.add_node(client_node)
    return client_node, served


def test_a_goal_answered_before_send_goal_async_returns_completes_its_future(ros_context, spinning):
    client_node, served = _graph(ros_context, spinning)
    client = TeamActionClient(client_node, ComputePathToPose, 'compute_path_to_pose')
    assert client.wait_for_server(timeout_sec=10.0)
    for attempt in range(3):
        future, sent = _send_paused(client, ComputePathToPose.Goal())
        assert sent, 'the profile hook never saw the goal request go out: the test opened no window'
        assert wait_for(future.done, timeout=5.0), f'goal {attempt}: the goal response never completed the future'
        handle = future.result()
        assert handle.accepted
        assert wait_for(lambda: bytes(handle.goal_id.uuid) in served, 5.0), f'goal {attempt}: the server never ran it'
        result = handle.get_result_async()
        assert wait_for(result.done, timeout=5.0), f'goal {attempt}: no result'
    # nothing left registered: each future was registered once and removed once
    assert wait_for(lambda: not client._pending_goal_requests and not client._futures, 5.0)


def test_rclpys_own_client_loses_that_response(ros_context, spinning):
    """The same window with rclpy's ``ActionClient``: while this holds, TeamActionClient is needed."""
    client_node, served = _graph(ros_context, spinning)
    client = ActionClient(client_node, ComputePathToPose, 'compute_path_to_pose')
    assert client.wait_for_server(timeout_sec=10.0)
    future, sent = _send_paused(client, ComputePathToPose.Goal())
    assert sent
    assert wait_for(lambda: len(served) == 1, 5.0), 'the server never got the goal'
    assert not wait_for(future.done, timeout=2.0), (
        "rclpy's ActionClient completed the future: the installed rclpy has ros2/rclpy#1532's fix, "
        'robot_team.ros.action_client.TeamActionClient may go')
