"""What the staff directory's tool sets share: the info-collection and display robots' (:class:`DirectoryTools`).

ROS side (a node, ROS-time waits); the rclpy-free parts of a tool set are in :mod:`robot_team.tools.base`.
"""

from __future__ import annotations

import threading

from robot_team.catalog import OBSERVE_WAIT_S, RoleDecl, TaskFacts, WorldFact, register_tools
from robot_team.ros.util import watch_ros_time
from robot_team.tools.base import Toolbox, check_declared_fact


class DirectoryTools:
    """What the staff directory's tool sets share (the info-collection and display robots').

    Subclasses add their subscriptions and their tools (``@implements``); each call is one short
    look-up or service call, so :meth:`cancel` has nothing to stop.

    Parameters
    ----------
    node
        The robot's node (rclpy).
    staff_db
        Path of the staff directory (SQLite), opened on each use (a directory that cannot be
        opened is a task failure with an issue, not a crash at start-up).
    """

    started_data: dict = {}
    """What the robot's ``node_started`` event records about these tools (nothing)."""

    decl: RoleDecl
    """The role's declaration: :meth:`observe` answers for the facts it names (``RoleDecl.world``)."""

    def __init__(self, node, staff_db: str):
        self._node = node
        self._staff_db = staff_db
        self._lock = threading.Lock()

    @classmethod
    def from_node(cls, node, callback_group=None):
        """Build the tools for ``node`` from its ``staff_db`` parameter (SQLite file)."""
        return cls(node, node.get_parameter('staff_db').value, callback_group)

    def cancel(self) -> None:
        """Stop the work in flight: none (each call is short and waits in ROS time)."""

    def observe(self, fact: WorldFact, task: TaskFacts, until) -> dict:
        """Return what the world shows of ``fact`` for ``task`` (the subclass's :meth:`_look`, JSON-ready).

        ``fact`` is one of the role's declaration's (``decl.world``): what a success of its task needs.

        Looked at again as ROS time passes until ``until(seen)`` holds, at most
        :data:`~robot_team.catalog.OBSERVE_WAIT_S` (a success's trace in the world can follow the
        service's reply by a moment).

        Raises
        ------
        ValueError
            If ``fact`` is not one the role's declaration names.
        ToolError
            If the directory cannot be opened.
        """
        check_declared_fact(self.decl, fact)
        return watch_ros_time(self._node, lambda: self._look(task), until, OBSERVE_WAIT_S)

    def _look(self, task: TaskFacts) -> dict:
        """Return what the world shows now of the role's fact for ``task`` (subclasses)."""
        raise NotImplementedError

    def register(self, toolbox: Toolbox) -> None:
        """Register every tool of this set in ``toolbox`` (:func:`robot_team.catalog.register_tools`)."""
        register_tools(toolbox, self)
