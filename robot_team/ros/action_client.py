"""An rclpy action client whose ``send_goal_async`` future always completes, safe to create while spinning.

rclpy 9.1.2 (Kilted, the PyPI wheels ``requirements/ros.txt`` pins) registers a goal's future
twice in :meth:`rclpy.action.ActionClient.send_goal_async`: once under the client's lock, right
after the goal request is sent, then again outside the lock with a second ``Future`` that replaces
the first and is the one returned. When the server answers before the second registration (an
executor thread takes and handles the response in that window: a loaded machine, a server in the
same process), the response completes the first future, which is then forgotten, and the returned
future never completes: the goal was accepted and runs, and its client waits for a response that
already came, with no warning. Observed once in the suite (``test_eval_cli`` with two teams in one
process: the navigation robot's ``compute_path_to_pose`` goal, see docs/faults.md).

Upstream: the race was ros2/rclpy#1123, fixed by ros2/rclpy#1308 (the registration moved under the
lock), whose leftover second registration ros2/rclpy#1532 removed (October 2025; backports for
Jazzy and Humble: ros2/rclpy#1536, #1537). :class:`TeamActionClient` registers once, under the
lock, the way those fixes do.

rclpy 9.1.2 also makes a new client a waitable of its node (which wakes the node's executor)
before it creates the lock that ``get_num_entities`` and ``add_to_wait_set`` take: an executor
spinning in another thread that builds its wait set in between raises ``AttributeError: 'ActionClient'
object has no attribute '_lock'`` and stops spinning (ros2/rclpy#1589, fixed by ros2/rclpy#1591 in
rclpy 10.0.5, Rolling, February 2026). Seen once in the suite: a client created on a node an
executor already spun. :class:`TeamActionClient` has its lock before it is a waitable. Everything
else is rclpy's ``ActionClient``.
"""

from __future__ import annotations

import threading

from rclpy.action import ActionClient
from rclpy.task import Future


class TeamActionClient(ActionClient):
    """``rclpy.action.ActionClient`` with a ``send_goal_async`` whose future completes (see the module).

    Same constructor and methods as rclpy's; :meth:`send_goal_async` differs, and the client's
    lock exists before the client is a waitable of ``node``, so ``node`` may already be spinning in
    another thread.
    """

    def __init__(self, node, action_type, action_name, **kwargs):
        self._team_lock = threading.Lock()
        self._logger = node.get_logger().get_child('action_client')   # rclpy sets it after add_waitable too
        super().__init__(node, action_type, action_name, **kwargs)

    @property
    def _lock(self) -> threading.Lock:
        """The client's lock (rclpy's ``_lock``), made before the client became a waitable."""
        return self._team_lock

    @_lock.setter
    def _lock(self, _late_lock: threading.Lock) -> None:
        """Keep the first lock: rclpy's ``__init__`` assigns a new one once the executor may hold this one."""

    def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None) -> Future:
        """Send ``goal`` and return a future that completes with its ``ClientGoalHandle``.

        The future is set when the server answers (accepted or rejected), however soon it does:
        it is registered under the client's lock before that lock lets the response be taken.
        ``feedback_callback(feedback_msg)`` is registered before the goal is sent, so feedback
        that comes before this returns is not missed. ``goal_uuid``: a
        ``unique_identifier_msgs/UUID``; None for a random one.

        Raises
        ------
        TypeError
            If ``goal`` is not this action's ``Goal``.
        RuntimeError
            If the goal request's sequence number is already pending (rcl reused it).
        """
        if not isinstance(goal, self._action_type.Goal):
            raise TypeError(f'goal must be a {self._action_type.Goal.__name__} of this action, '
                            f'got {type(goal).__name__}')
        request = self._action_type.Impl.SendGoalService.Request()
        request.goal_id = self._generate_random_uuid() if goal_uuid is None else goal_uuid
        request.goal = goal
        uuid_key = bytes(request.goal_id.uuid)
        if feedback_callback is not None:
            self._feedback_callbacks[uuid_key] = feedback_callback
        future = Future()
        with self._lock:
            try:
                sequence_number = self._client_handle.send_goal_request(request)
            except Exception:
                self._feedback_callbacks.pop(uuid_key, None)
                raise
            if sequence_number in self._pending_goal_requests:
                raise RuntimeError(f'goal request sequence number {sequence_number} of '
                                   f'{self._action_name} is already pending')
            self._pending_goal_requests[sequence_number] = future
            self._goal_sequence_number_to_goal_id[sequence_number] = request.goal_id
            future.add_done_callback(self._remove_pending_goal_request)
            self.add_future(future)   # the executor waits on it
        return future
