"""Reports at the supervisor that no robot sent as such: one that did not parse, one a lost robot never sent (no rclpy).

:func:`parse_report` turns a report message into a :class:`~robot_team.contracts.reports.TaskReportModel`,
or records why it could not (``report_rejected``). When a robot is lost while it runs a task, the
supervisor closes that task itself: :func:`lost_task_report` is the report it records for it, and
:func:`record_liveness` records the robot lost or back (and the task it closed).
"""

from __future__ import annotations

from typing import Callable, Protocol

from robot_team.contracts.events import EventKind
from robot_team.contracts.liveness import LivenessChange
from robot_team.contracts.reports import ReportError, TaskReportModel, TaskStatus
from robot_team.rules.workflow.state import TaskState


class ReportRejecter(Protocol):
    """What records a report that could not be used (:class:`~robot_team.core.supervisor.SupervisorCore`)."""

    def reject_report(self, error: str, raw: dict, *, case_id: str = '') -> None:
        """Record a report that could not be used (``report_rejected``) with ``raw``, the report as received."""


def parse_report(parse: Callable[[], TaskReportModel], raw: Callable[[], dict],
                 core: ReportRejecter) -> TaskReportModel | None:
    """Return ``parse()``, or record the :class:`ReportError` it raises (with ``raw()``) and return None."""
    try:
        return parse()
    except ReportError as exc:
        core.reject_report(str(exc), raw())
        return None


def lost_task_report(task: TaskState, change: LivenessChange, now_s: float) -> TaskReportModel:
    """Return the report that closes ``task``, whose robot was lost (``change``), at ROS time ``now_s`` (s).

    A failure with the issue the workflow's recovery rule gave the task (issue code
    ``robot_lost``), naming the lost instance and who noticed.
    """
    return closed_task_report(task, now_s, lost_instance=change.instance_id, noticed_by=change.noticed_by)


def closed_task_report(task: TaskState, now_s: float, **data) -> TaskReportModel:
    """Return the report that closes ``task``, which the supervisor closed itself, at ROS time ``now_s`` (s).

    A failure with the issue, issue code and summary the workflow's rule gave the task (``robot_lost``,
    ``task_deadline``); ``data``: what the rule knew (e.g. the lost instance).
    """
    return TaskReportModel(task_id=task.task_id, task_type=task.task_type, robot=task.robot,
                           status=TaskStatus.FAILURE, issue=task.issue, issue_code=task.issue_code,
                           summary=task.summary, stamp_s=now_s, data=data)


def record_liveness(change: LivenessChange, report: TaskReportModel | None, emit: Callable[..., object]) -> None:
    """Record a team node lost, back or heard first (``robot_lost``, ``robot_back``, ``robot_seen``), and ``report``.

    ``report``: the report on the task the loss of a robot closed (None: no task was closed).
    """
    task_id = report.task_id if report is not None else ''
    if change.state == 'lost':
        emit(EventKind.ROBOT_LOST, f'{change.node} lost ({change.noticed_by})'
             + (f': {task_id} recovered as a failure' if task_id else ''), target=change.node,
             reason=f'{change.node} stopped answering: noticed by its {change.noticed_by}',
             node=change.node, task_id=task_id, noticed_by=change.noticed_by,
             instance_id=change.instance_id)
    elif change.state == 'seen':
        emit(EventKind.ROBOT_SEEN, f'{change.node} heard for the first time', target=change.node, node=change.node,
             instance_id=change.instance_id)
    else:
        how = 'restarted' if change.restarted else 'reconnected'
        emit(EventKind.ROBOT_BACK, f'{change.node} back ({how}) after {change.lost_for_s:g} s',
             target=change.node, node=change.node, restarted=change.restarted,
             instance_id=change.instance_id, lost_for_s=change.lost_for_s)
    if report is not None:
        record_closed_task(report, f'{change.node} was lost', emit)


def record_closed_task(report: TaskReportModel, why: str, emit: Callable[..., object]) -> None:
    """Record ``report``, on a task the supervisor closed itself, as its ``task_report`` (``why``: what closed it)."""
    emit(EventKind.TASK_REPORT, f'supervisor closes {report.task_id}: {why}', target=report.task_id,
         reason=report.issue, **report.model_dump(mode='json'))
