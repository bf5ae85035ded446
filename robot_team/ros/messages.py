"""The team's contracts as ROS messages: conversions of events and reports, and their QoS.

:mod:`robot_team.contracts.events` and :mod:`robot_team.contracts.reports` hold the pydantic models the rclpy-free
core works with; this module is their ROS side. :func:`event_to_msg`/:func:`event_from_msg`
convert a :class:`~robot_team.contracts.events.TeamEventModel` to and from ``robot_team/msg/TeamEvent``;
:func:`report_to_msg`/:func:`report_from_msg` a :class:`~robot_team.contracts.reports.TaskReportModel` to
and from ``robot_team/msg/TaskReport`` (validating on receipt). Stamps go through
:mod:`robot_team.ros.stamps`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_team.contracts.events import TeamEventModel
from robot_team.msg import TaskReport, TeamEvent
from robot_team.contracts.reports import ReportError, TaskReportModel, explain_validation_error
from robot_team.ros.stamps import s_to_stamp, stamp_to_s


def event_to_msg(event: TeamEventModel) -> TeamEvent:
    """Return ``event`` as a ``robot_team/msg/TeamEvent`` (``data`` as JSON, stamp to the nearest ns).

    Raises
    ------
    ValueError
        If the event's ``stamp_s`` is negative or NaN (see :func:`~robot_team.ros.stamps.s_to_stamp`).
    """
    return TeamEvent(
        stamp=s_to_stamp(event.stamp_s), wall_time=event.wall_time, seq=event.seq, actor=event.actor,
        kind=event.kind, target=event.target, summary=event.summary, reason=event.reason,
        data_json=json.dumps(event.data, default=str))


def event_from_msg(msg: TeamEvent) -> TeamEventModel:
    """Convert a ``robot_team/msg/TeamEvent``; a malformed ``data_json`` is kept under ``data['raw']``.

    Raises
    ------
    ValueError
        If the message's stamp is negative (see :func:`~robot_team.ros.stamps.stamp_to_s`).
    """
    try:
        data = json.loads(msg.data_json) if msg.data_json else {}
        if not isinstance(data, dict):
            data = {'value': data}
    except json.JSONDecodeError as exc:
        data = {'raw': msg.data_json, 'parse_error': str(exc)}
    return TeamEventModel(stamp_s=stamp_to_s(msg.stamp), wall_time=msg.wall_time, seq=max(1, msg.seq),
                          actor=msg.actor, kind=msg.kind, target=msg.target, summary=msg.summary,
                          reason=msg.reason, data=data)


def report_to_msg(report: TaskReportModel) -> TaskReport:
    """Return ``report`` as a ``robot_team/msg/TaskReport`` (data and evidence as JSON, stamp to the nearest ns).

    Raises
    ------
    ValueError
        If the report's ``stamp_s`` is negative or NaN (see :func:`~robot_team.ros.stamps.s_to_stamp`).
    """
    return TaskReport(
        stamp=s_to_stamp(report.stamp_s), task_id=report.task_id, task_type=report.task_type.value,
        robot=report.robot, status=report.status.value, issue=report.issue, issue_code=report.issue_code.value,
        summary=report.summary,
        data_json=json.dumps(report.data, default=str), evidence_json=json.dumps(report.evidence, default=str))


def report_from_msg(msg: TaskReport) -> TaskReportModel:
    """Validate a ``robot_team/msg/TaskReport``.

    Raises
    ------
    ReportError
        If a field is missing or malformed, the JSON fields do not parse, or the stamp is
        negative; the message names the field and what was expected.
    """
    fields: dict[str, Any] = {}
    for name in ('data_json', 'evidence_json'):
        raw = getattr(msg, name)
        try:
            value = json.loads(raw) if raw else {}
        except json.JSONDecodeError as exc:
            raise ReportError(f'TaskReport.{name}: expected a JSON object, got {raw[:80]!r} ({exc})') from exc
        if not isinstance(value, dict):
            raise ReportError(f'TaskReport.{name}: expected a JSON object, got {type(value).__name__}')
        fields[name[:-5]] = value
    try:
        stamp_s = stamp_to_s(msg.stamp)
    except ValueError as exc:
        raise ReportError(f'TaskReport.stamp: expected a ROS time, not before 0 ({exc})') from exc
    try:
        return TaskReportModel(task_id=msg.task_id, task_type=msg.task_type, robot=msg.robot, status=msg.status,
                               issue=msg.issue, issue_code=msg.issue_code, summary=msg.summary,
                               stamp_s=stamp_s, **fields)
    except ValidationError as exc:
        raise ReportError(f'TaskReport rejected: {explain_validation_error(exc)}') from exc


def events_qos() -> QoSProfile:
    """Return the QoS of ``/team/events``: reliable, transient local, deep history.

    Transient local with a deep history lets a recorder that joins late still receive every
    event a node has published (no loss at start-up).
    """
    return QoSProfile(depth=5000, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def reliable_qos(depth: int = 100) -> QoSProfile:
    """Return a reliable, transient-local QoS for team topics that must not lose messages."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def amcl_pose_qos() -> QoSProfile:
    """Return AMCL's ``amcl_pose`` QoS: reliable, transient local, depth 1 (what BasicNavigator subscribes with)."""
    return reliable_qos(depth=1)
