"""Task reports, task types and the manager's reflection: validated schemas (pydantic).

Every robot report carries an explicit status and an issue field; a failure always names its
issue. Reports travel as ``robot_team/msg/TaskReport`` (data and evidence as JSON strings) and
are validated on receipt with :func:`robot_team.ros.messages.report_from_msg`, which raises
:class:`ReportError` naming the offending field. This module imports no rclpy: the core uses it.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from robot_team.contracts.names import RobotId


class TaskType(str, Enum):
    """The ED onboarding workflow's tasks, in their prescribed order (then the reflection)."""

    NAVIGATION = 'navigation'
    INFO_COLLECTION = 'info_collection'
    DISPLAY = 'display'
    REFLECTION = 'reflection'


WORKFLOW_ORDER: tuple[TaskType, ...] = (
    TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY, TaskType.REFLECTION)
"""The prescribed ED onboarding workflow (navigation -> info collection -> display -> reflection)."""

OPERATIONAL_TASKS: tuple[TaskType, ...] = WORKFLOW_ORDER[:3]


class TaskStatus(str, Enum):
    """Explicit outcome of a task, as every report must state it."""

    SUCCESS = 'success'
    FAILURE = 'failure'


class IssueCode(str, Enum):
    """The typed cause of a failure, where a rule acts on it (rules never read the issue's text).

    ``NONE`` for every report a robot writes itself; ``ROBOT_LOST``: the supervisor closed the task
    because the robot's node was lost while it ran (:mod:`robot_team.contracts.liveness`), so the failure
    says nothing about the HCW, the room or the floor: the same task may be retried as it was once
    the robot is back. ``TASK_DEADLINE``: the supervisor closed the task because its robot neither
    reported nor was lost within the task deadline (a robot stuck in its work); the robot is stopped
    and the escalation the deadline opened says what comes next. Neither says anything about the HCW.
    """

    NONE = ''
    ROBOT_LOST = 'robot_lost'
    TASK_DEADLINE = 'task_deadline'


class ReportError(ValueError):
    """A task report that does not follow the schema; the message names the field."""


class TaskReportModel(BaseModel):
    """One robot's report on one task.

    ``issue`` is ``''`` when there is no issue; a ``failure`` must name its issue. ``data``
    holds the task's output (what the robot reasoned: location, path, HCW info, layout plan);
    ``evidence`` holds the ground truth from the robot's tools (Nav2 goal results, the badge
    scan, the display service reply), attached by the robot node, never by the brain.
    """

    task_id: str = Field(min_length=1, description='Task ID issued by the supervisor.')
    task_type: TaskType
    robot: RobotId = Field(min_length=1, description='Namespace of the robot that executed the task.')
    status: TaskStatus
    issue: str = Field('', description="'' when there is no issue, else the problem in one sentence.")
    issue_code: IssueCode = Field(IssueCode.NONE, description="The issue's typed cause where a rule acts on it "
                                  "('' for a robot's own report; 'robot_lost' set by the supervisor).")
    summary: str = Field('', description='One or two sentences for the manager.')
    data: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)
    stamp_s: float = Field(0.0, description='ROS time of the report, s.')

    @model_validator(mode='after')
    def _failure_names_issue(self) -> 'TaskReportModel':
        if self.status is TaskStatus.FAILURE and not self.issue.strip():
            raise ValueError("a 'failure' report must name its issue (field 'issue' is empty)")
        return self

    @property
    def has_issue(self) -> bool:
        """Whether the report states an issue."""
        return bool(self.issue.strip())


class TaskOutcome(BaseModel):
    """The reflection's account of one task."""

    task_type: TaskType
    status: TaskStatus
    robot: RobotId
    summary: str = Field(min_length=1)


class Reflection(BaseModel):
    """The manager's reflection at the end of an episode.

    The three sections (task outcomes, recovery attempts, lessons learned) follow the published
    ED evaluation's rubric (Bai, Ding, Taylor, Table II): outcomes of all three operational
    tasks, the recovery attempts made, and lessons learned.
    """

    task_outcomes: list[TaskOutcome] = Field(min_length=1)
    recovery_attempts: list[str] = Field(default_factory=list)
    lessons_learned: list[str] = Field(min_length=1)

    def missing_parts(self) -> list[str]:
        """Return what keeps this reflection from being complete (empty if complete)."""
        missing = []
        covered = {o.task_type for o in self.task_outcomes}
        for task in OPERATIONAL_TASKS:
            if task not in covered:
                missing.append(f'task outcome for {task.value}')
        placeholders = ('tbd', 'todo', 'placeholder', 'n/a', '...', 'lorem')
        texts = [o.summary for o in self.task_outcomes] + self.recovery_attempts + self.lessons_learned
        if any(t.strip().lower() in placeholders or not t.strip() for t in texts):
            missing.append('placeholder text instead of content')
        return missing


class EscalationAnswer(BaseModel):
    """The supervisor's answer to an escalation request."""

    accepted: bool
    escalation_id: str = ''
    message: str = ''


class ReportAnswer(BaseModel):
    """The supervisor's answer to a submitted report."""

    accepted: bool
    explanation: str = ''


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = '.'.join(str(p) for p in err['loc']) or f'({exc.title})'   # a rule over the whole model
        got = err.get('input')
        shown = repr(got) if isinstance(got, (str, int, float, bool)) or got is None else ''
        if len(shown) > 60:
            shown = shown[:57] + '...'
        parts.append(f"{loc}: {err['msg']} (got {shown})" if shown and 'input' in err else f"{loc}: {err['msg']}")
    return '; '.join(parts)


def explain_validation_error(exc: ValidationError) -> str:
    """Return a one-line, field-by-field explanation of a pydantic ``ValidationError``."""
    return _explain(exc)
