"""Nav2's action clients, as every Nav2 robot has them: navigate_to_pose and compute_path_to_pose.

- :class:`NavigateToPoseClient` (or nav2_simple_commander's ``BasicNavigator`` behind
  :class:`BasicNavigatorClient`, chosen by :func:`make_navigator`): a blocking facade over Nav2's
  ``<robot>/navigate_to_pose`` (nav2_msgs/action/NavigateToPose), with feedback and cancel; the
  result is a :class:`NavResult`;
- :class:`ComputePathClient`: a blocking facade over ``<robot>/compute_path_to_pose``
  (nav2_msgs/action/ComputePathToPose, Nav2's planner server on the map server's map).

The navigation role's tools (:mod:`robot_team.roles.navigation.tools`) drive and plan through them;
the manager estimates routes with :class:`ComputePathClient`. Only interfaces every Nav2 robot has:
nothing here knows the embedded simulator.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum

import rclpy.utilities
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped
from nav2_msgs.action import ComputePathToPose, NavigateToPose

from robot_team.ros.action_client import TeamActionClient
from robot_team.contracts import names
from robot_team.contracts.errors import ToolError
from robot_team.contracts.geometry import quaternion_to_yaw, yaw_to_quaternion
from robot_team.contracts.nav2_codes import ComputePathToPoseError, nav2_error_name
from robot_team.ros.clock import ResultWait
from robot_team.ros.stamps import now_s
from robot_team.ros.util import SERVER_WAIT_S, discovery_hold_of, wait_for_server, wait_future

#: Wall seconds a cancelled navigate_to_pose goal waits for its result; then it ends as ``CANCELED``
#: without one (a server on a host cut off the network never answers).
CANCEL_RESULT_WAIT_S = 5.0


class NavOutcome(str, Enum):
    """How a navigate_to_pose goal ended (action_msgs/GoalStatus, in words)."""

    SUCCEEDED = 'succeeded'
    ABORTED = 'aborted'
    CANCELED = 'canceled'
    REJECTED = 'rejected'


@dataclass
class NavResult:
    """Ground truth of one navigate_to_pose goal.

    Distances in metres, durations in seconds of ROS time, poses as (x, y, yaw) in 'map'.
    """

    outcome: NavOutcome
    error_code: int = 0
    error_msg: str = ''
    goal: tuple[float, float, float] = (0.0, 0.0, 0.0)
    initial_distance_m: float | None = None
    final_distance_remaining_m: float | None = None
    final_pose: tuple[float, float, float] | None = None
    feedback_count: int = 0
    duration_s: float = 0.0
    feedback: list[dict] = field(default_factory=list)

    def add_feedback(self, feedback) -> None:
        """Take in one ``NavigateToPose.Feedback``: distance remaining (m) and current pose in 'map'."""
        p = feedback.current_pose.pose
        self.feedback_count += 1
        if self.initial_distance_m is None:
            self.initial_distance_m = round(float(feedback.distance_remaining), 3)
        self.final_distance_remaining_m = round(float(feedback.distance_remaining), 3)
        self.final_pose = (round(p.position.x, 3), round(p.position.y, 3), round(quaternion_to_yaw(p.orientation), 3))

    def as_dict(self) -> dict:
        """Return a JSON-ready dict (the Nav2 goal result as evidence)."""
        return {
            'action': names.NAVIGATE_TO_POSE, 'outcome': self.outcome.value, 'error_code': self.error_code,
            'error_name': nav2_error_name(self.error_code),
            'error_msg': self.error_msg, 'goal': list(self.goal),
            'initial_distance_m': self.initial_distance_m,
            'final_distance_remaining_m': self.final_distance_remaining_m,
            'final_pose': list(self.final_pose) if self.final_pose else None,
            'feedback_count': self.feedback_count, 'duration_s': round(self.duration_s, 3)}


class NavigateToPoseClient:
    """Blocking facade over one robot's ``navigate_to_pose`` action (like nav2_simple_commander).

    Call :meth:`go_to` from a worker thread of a ``MultiThreadedExecutor``; the executor's
    other threads deliver goal responses, feedback and results.
    """

    def __init__(self, node, action_name: str, callback_group=None):
        self._node = node
        self._action_name = action_name
        self._client = TeamActionClient(node, NavigateToPose, action_name, callback_group=callback_group)
        self._goal_handle = None
        self._cancel_requested = False
        self._lock = threading.Lock()

    def go_to(self, x: float, y: float, yaw: float, *, timeout_s: float = 900.0,
              server_timeout_s: float = SERVER_WAIT_S) -> NavResult:
        """Send a navigate_to_pose goal to (x, y, yaw) in 'map' and wait for its end.

        ``timeout_s`` bounds the wait in ROS (sim) seconds; past it the goal is cancelled and
        the result is ``CANCELED`` with error_code 9003 (TIMEOUT).

        Raises
        ------
        ToolError
            If the action server is not available.
        """
        wait_for_server(self._client, server_timeout_s, f'action server {self._action_name}',
                        discovery_hold_of(self._node))
        goal = NavigateToPose.Goal()
        goal.pose = PoseStamped()
        goal.pose.header.frame_id = names.MAP_FRAME
        goal.pose.header.stamp = self._node.get_clock().now().to_msg()
        goal.pose.pose.position.x, goal.pose.pose.position.y = float(x), float(y)
        goal.pose.pose.orientation = yaw_to_quaternion(yaw)
        result = NavResult(outcome=NavOutcome.REJECTED, goal=(float(x), float(y), float(yaw)))
        start = now_s(self._node)
        with self._lock:
            self._cancel_requested = False

        def on_feedback(msg):
            result.add_feedback(msg.feedback)

        handle = wait_future(self._client.send_goal_async(goal, feedback_callback=on_feedback),
                             server_timeout_s, f'goal response of {self._action_name}')
        if not handle.accepted:
            result.error_msg = 'goal rejected by the navigate_to_pose server'
            return result
        with self._lock:
            self._goal_handle = handle
            cancel_now = self._cancel_requested
        if cancel_now:   # cancelled while the goal was being sent
            handle.cancel_goal_async()
        result_future = handle.get_result_async()
        # Driving: nothing to do before the result, which the simulator schedules (ros.clock.ScheduledWaits)
        wait = ResultWait(self._node, result_future, start + timeout_s)
        done = wait.done
        while not done.wait(0.01):
            timed_out = now_s(self._node) - start > timeout_s
            if timed_out:
                self.cancel()
            with self._lock:
                cancelled = self._cancel_requested
            if cancelled:   # past its time, or cancelled from another thread: the answer to the result
                wait.end()
                again = handle.get_result_async()   # request may have been lost with the link; ask again
                again.add_done_callback(lambda _f: done.set())
                if not done.wait(CANCEL_RESULT_WAIT_S):
                    with self._lock:
                        self._goal_handle = None
                    result.outcome, result.error_code = NavOutcome.CANCELED, 9003
                    result.error_msg = (f'no result within {timeout_s:.0f} s; goal cancelled' if timed_out else
                                        f'cancelled; no result from the server within {CANCEL_RESULT_WAIT_S:g} s')
                    result.duration_s = now_s(self._node) - start
                    return result
                if not result_future.done():
                    result_future = again
        wait.end()
        with self._lock:
            self._goal_handle = None
        wrapped = result_future.result()
        status = wrapped.status
        result.error_code = int(wrapped.result.error_code)
        result.error_msg = wrapped.result.error_msg
        result.duration_s = now_s(self._node) - start
        result.outcome = {GoalStatus.STATUS_SUCCEEDED: NavOutcome.SUCCEEDED,
                          GoalStatus.STATUS_CANCELED: NavOutcome.CANCELED}.get(status, NavOutcome.ABORTED)
        return result

    def cancel(self) -> None:
        """Cancel the goal in progress, or the one being sent (non-blocking)."""
        with self._lock:
            self._cancel_requested = True
            handle = self._goal_handle
        if handle is not None:
            handle.cancel_goal_async()


NAVIGATORS = ('auto', 'basic_navigator', 'builtin')
"""``navigator`` parameter values: ``basic_navigator`` drives Nav2 through nav2_simple_commander's
``BasicNavigator``; ``builtin`` through :class:`NavigateToPoseClient`; ``auto``: BasicNavigator
where it is importable and the node runs in rclpy's default context (as under ``ros2 run``)."""


def make_navigator(node, choice: str = 'auto', callback_group=None):
    """Return the navigate_to_pose client ``choice`` names (see :data:`NAVIGATORS`) for ``node``.

    Raises
    ------
    ValueError
        If ``choice`` is unknown, or ``basic_navigator`` is asked for where nav2_simple_commander
        is not installed or the node is not in rclpy's default context.
    """
    if choice not in NAVIGATORS:
        raise ValueError(f"navigator {choice!r}: expected one of {', '.join(NAVIGATORS)}")
    if choice != 'builtin':
        try:
            import nav2_simple_commander.robot_navigator  # noqa: F401 - availability check
            available, why = node.context is rclpy.utilities.get_default_context(), 'the node is not in ' \
                'rclpy\'s default context (BasicNavigator creates its node there)'
        except ImportError:
            available, why = False, 'nav2_simple_commander is not installed'
        if available:
            return BasicNavigatorClient(node)
        if choice == 'basic_navigator':
            raise ValueError(f'navigator basic_navigator: {why}; use builtin (or auto)')
    return NavigateToPoseClient(node, names.NAVIGATE_TO_POSE, callback_group)


class BasicNavigatorClient:
    """:class:`NavigateToPoseClient`'s calls, carried out by nav2_simple_commander's ``BasicNavigator``.

    A ``BasicNavigator`` node (``<robot>_navigator``) is created in the robot's namespace; it
    spins itself. BasicNavigator waits forever for its servers and results: here every wait is
    bounded (``server_timeout_s`` for the server, ``timeout_s`` of ROS time for the goal, after
    which the goal is cancelled), and a cancel from another thread is carried out by the thread
    that drives the goal (BasicNavigator's node must not be spun from two threads).
    """

    def __init__(self, node):
        from nav2_simple_commander.robot_navigator import BasicNavigator
        self._node = node
        self._navigator = BasicNavigator(node_name=f'{node.get_name()}_navigator', namespace=node.get_namespace())
        self._cancel = threading.Event()

    def go_to(self, x: float, y: float, yaw: float, *, timeout_s: float = 900.0,
              server_timeout_s: float = SERVER_WAIT_S) -> NavResult:
        """Drive to (x, y, yaw) in 'map' with ``BasicNavigator.goToPose``; return the Nav2 result.

        Raises
        ------
        ToolError
            If the navigate_to_pose server is not available within ``server_timeout_s`` (wall s).
        """
        from nav2_simple_commander.robot_navigator import TaskResult
        nav = self._navigator
        # BasicNavigator's own client; its wait holds sim time as the other tools' (discovery_hold_of)
        wait_for_server(nav.nav_to_pose_client, server_timeout_s, f'action server {names.NAVIGATE_TO_POSE}',
                        discovery_hold_of(self._node))
        pose = PoseStamped()
        pose.header.frame_id = names.MAP_FRAME
        pose.header.stamp = nav.get_clock().now().to_msg()
        pose.pose.position.x, pose.pose.position.y = float(x), float(y)
        pose.pose.orientation = yaw_to_quaternion(yaw)
        result = NavResult(outcome=NavOutcome.REJECTED, goal=(float(x), float(y), float(yaw)))
        self._cancel.clear()
        start = now_s(self._node)
        if nav.goToPose(pose) is None:
            result.error_code, result.error_msg = nav.getTaskError()
            return result
        cancelled = False
        while not nav.isTaskComplete():
            feedback = nav.getFeedback()
            if feedback is not None:
                result.add_feedback(feedback)
            timed_out = now_s(self._node) - start > timeout_s
            if (self._cancel.is_set() or timed_out) and not cancelled:
                nav.cancelTask()
                cancelled = True
                if timed_out:
                    result.error_code, result.error_msg = 9003, f'no result within {timeout_s:.0f} s; goal cancelled'
        outcome = nav.getResult()
        result.outcome = {TaskResult.SUCCEEDED: NavOutcome.SUCCEEDED,
                          TaskResult.CANCELED: NavOutcome.CANCELED}.get(outcome, NavOutcome.ABORTED)
        if result.error_code == 0:
            result.error_code, result.error_msg = nav.getTaskError()
        result.duration_s = now_s(self._node) - start
        return result

    def cancel(self) -> None:
        """Ask the goal in progress to be cancelled (non-blocking; the driving thread cancels it)."""
        self._cancel.set()


class ComputePathClient:
    """Blocking facade over one robot's ``compute_path_to_pose`` action (Nav2's planner server).

    Call :meth:`plan` from a worker thread of a ``MultiThreadedExecutor``.
    """

    def __init__(self, node, action_name: str = names.COMPUTE_PATH_TO_POSE, callback_group=None):
        self._node = node
        self._action_name = action_name
        self._client = TeamActionClient(node, ComputePathToPose, action_name, callback_group=callback_group)

    def plan(self, goal: tuple[float, float], start: tuple[float, float] | None = None, *,
             timeout_s: float = SERVER_WAIT_S) -> list[tuple[float, float]]:
        """Return the planned path from ``start`` (default: the robot's pose) to ``goal``: (x, y) in 'map', m.

        Raises
        ------
        ToolError
            If the planner server is unavailable or silent for ``timeout_s`` (wall s), or the plan
            fails; the message names Nav2's error code (e.g. ``GOAL_OUTSIDE_MAP``).
        """
        def pose(xy):
            msg = PoseStamped()
            msg.header.frame_id = names.MAP_FRAME
            msg.header.stamp = self._node.get_clock().now().to_msg()
            msg.pose.position.x, msg.pose.position.y = float(xy[0]), float(xy[1])
            msg.pose.orientation.w = 1.0
            return msg
        request = ComputePathToPose.Goal(goal=pose(goal), use_start=start is not None)
        if start is not None:
            request.start = pose(start)
        wait_for_server(self._client, timeout_s, f'action server {self._action_name}', discovery_hold_of(self._node))
        handle = wait_future(self._client.send_goal_async(request), timeout_s, f'goal response of {self._action_name}')
        if not handle.accepted:
            raise ToolError(f'{self._action_name} rejected the goal')
        wrapped = wait_future(handle.get_result_async(), timeout_s, f'result of {self._action_name}')
        result = wrapped.result
        if result.error_code != 0 or not result.path.poses:
            try:
                name = ComputePathToPoseError(int(result.error_code)).name
            except ValueError:
                name = 'UNKNOWN'
            raise ToolError(f'no path on the map ({name}, error {result.error_code}): {result.error_msg}'.strip(),
                            output={'error_code': int(result.error_code), 'error_name': name,
                                    'error_msg': result.error_msg, 'goal': list(goal)})
        return [(p.pose.position.x, p.pose.position.y) for p in result.path.poses]
