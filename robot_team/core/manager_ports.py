"""The manager's ROS side as the core sees it: the ports it is given, its event sink, a task's end (no rclpy).

:class:`ManagerPorts` is what the manager node (or an offline harness) injects into
:class:`~robot_team.core.manager.ManagerCore`: the supervisor's gate, escalations and report
record, the robots' ``execute_task`` and the planner's path lengths, and ROS time.
"""

from __future__ import annotations

from typing import Callable, Protocol

from robot_team.brains.base import TaskSpec
from robot_team.contracts.names import RobotId
from robot_team.contracts.reports import EscalationAnswer, ReportAnswer, TaskReportModel
from robot_team.rules.workflow.state import Authorization

Emit = Callable[..., object]
"""``emit(kind, summary, *, target='', reason='', **data)``, as :meth:`EventEmitter.emit`."""

TaskDone = Callable[[TaskReportModel | None, str], None]
"""``done(report, error)``: a task's end; ``report`` None (and ``error`` set) when there is no usable report."""


class ManagerPorts(Protocol):
    """The ROS side of the manager (the node's clients, or an offline harness).

    Each call may raise :class:`~robot_team.contracts.errors.ToolError` when the other side cannot be
    reached in time; the core records it and tells the brain.
    """

    def authorize(self, task_type: str, robot: RobotId, reason: str, hcw_id: str = '',
                  case_id: str = '') -> Authorization:
        """Ask the supervisor's gate for a delegation naming HCW ``hcw_id`` (``team/supervisor/authorize_task``).

        ``case_id``: the patient whose case the task serves. An approved answer names the HCW the
        task is about (``Authorization.hcw_id``); every answer names the case the gate serves.
        """

    def request_escalation(self, task_id: str, reason: str, options: list[str]) -> EscalationAnswer:
        """Ask the supervisor to escalate (``team/supervisor/request_escalation``)."""

    def send_task(self, robot: RobotId, task: TaskSpec, done: TaskDone) -> None:
        """Send ``task`` to ``robot`` (``<robot>/execute_task``); call ``done`` once it ends (any thread)."""

    def submit_report(self, report: TaskReportModel) -> ReportAnswer:
        """Submit the manager's own report (the reflection) to the supervisor (``team/supervisor/submit_report``)."""

    def path_lengths(self, robots: list[RobotId], hcw_id: str) -> dict[RobotId, float]:
        """Return how far each of ``robots`` would drive to HCW ``hcw_id``: its planned path's length, m.

        Nav2's ``<robot>/compute_path_to_pose`` from the robot's pose to where the RTLS
        (``ed/rtls/locate_staff``) locates the HCW. A robot with no path is left out; empty when
        the HCW cannot be located. Asked only to choose among several idle robots of a role.
        """

    def now(self) -> float:
        """Return ROS time, s."""
