"""A finished task as the manager takes it: its report checked against delegation and evidence (no rclpy).

The robot's report on a task the manager delegated is used only when it is about that task and
robot, and when a success is supported by the ground truth its evidence carries
(:func:`report_problem`); the task's record then takes the report's end, or the error
(:func:`record_result`), before the case's brain judges it.
"""

from __future__ import annotations

from robot_team.brains.base import TaskRecord
from robot_team.catalog import TaskFacts, final_failure
from robot_team.rules.guards import report_contradictions
from robot_team.contracts.reports import TaskReportModel, TaskStatus


def report_problem(record: TaskRecord, report: TaskReportModel) -> str:
    """Return why ``report`` cannot be used as the end of the task ``record`` ('' when it can).

    A report on another task or from another robot than the delegation's, or a success its
    attached ground truth does not support
    (:func:`~robot_team.rules.guards.report_contradictions`), cannot.
    """
    if report.task_id != record.task_id or report.robot != record.robot:
        return (f'report for {report.task_id} from {report.robot} does not match {record.task_id} '
                f'delegated to {record.robot}')
    ungrounded = report_contradictions(report, TaskFacts(record.room, record.hcw_id, record.delegated_s))
    if ungrounded:   # a success the attached ground truth does not support
        return f'success on {report.task_id} not supported by its evidence: ' + '; '.join(ungrounded)
    return ''


def record_result(rec: TaskRecord, report: TaskReportModel | None, error: str) -> None:
    """Write a task's end into its record ``rec``: ``report``'s, or a failure with ``error`` when it is None.

    A failure's final failure comes from the tool journal the robot node attached as evidence,
    never from the brain (:func:`~robot_team.catalog.final_failure`).
    """
    if report is None:
        rec.state, rec.issue = 'failure', error
        return
    rec.state, rec.issue, rec.issue_code = report.status.value, report.issue, report.issue_code
    if report.status is TaskStatus.FAILURE:   # evidence the robot node attached, never the brain
        rec.final_failure = final_failure(report.evidence.get('tool_journal') or ())
    rec.summary, rec.data = report.summary, report.data
