"""A run's event record indexed by task, as the rubric reads it, and the records each view is scored on.

:class:`Record` indexes the events of one run by task (:class:`Task`: its delegation, report,
judgment, refused reports and tools called); :func:`view_records` gives the records the manager's
and the robots' cells of a view are scored on (the ``attempted`` view leaves out what the protocol
brain decided as a fallback for the level it stood in for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robot_team.catalog import TASK_OWNER
from robot_team.contracts.decisions import without_fallback
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import NO_ROBOT, RobotId, Role
from robot_team.contracts.reports import TaskType

MANAGER = Role.MANAGER.value
TASK_PREFIX = {'nav': TaskType.NAVIGATION, 'info': TaskType.INFO_COLLECTION, 'display': TaskType.DISPLAY,
               'reflection': TaskType.REFLECTION}


@dataclass
class Task:
    """One task of the record: its delegation, report, judgment, refused reports and the tools its robot called."""

    task_id: str
    task_type: TaskType
    robot: RobotId = NO_ROBOT
    hcw_id: str = ''
    delegated_at: int | None = None
    report_at: int | None = None
    report: dict | None = None
    judged_at: int | None = None
    judged: str | None = None
    false_completion: TeamEventModel | None = None
    rejected: list[TeamEventModel] = field(default_factory=list)
    tools_called: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """The published report's status; 'failure' without a valid report."""
        return (self.report or {}).get('status') or 'failure'

    @property
    def reported(self) -> bool:
        """Whether the robot reported on the task (a valid report, a rejected one or a false completion)."""
        return self.report is not None or bool(self.rejected) or self.false_completion is not None

    def robot_or_owner(self) -> str:
        """The robot the task went to (its owner if no delegation was recorded)."""
        return self.robot or TASK_OWNER[self.task_type]

    @property
    def failure_at(self) -> int | None:
        """Index from which the manager knew of the outcome (judgment, else the report)."""
        return self.judged_at if self.judged_at is not None else self.report_at


class Record:
    """The events of one run, indexed by task."""

    def __init__(self, events: list[TeamEventModel]):
        self.events = events
        self.tasks: dict[str, Task] = {}
        self.refusals: list[TeamEventModel] = []
        for index, event in enumerate(events):
            self._add(index, event)

    def _task(self, task_id: str, task_type: str | None = None) -> Task | None:
        if not task_id:
            return None
        if task_id not in self.tasks:
            kind = as_task_type(task_type) or as_task_type(TASK_PREFIX.get(task_id.rsplit('-', 1)[0]))
            if kind is None or kind is TaskType.REFLECTION:
                return None
            self.tasks[task_id] = Task(task_id, kind)
        return self.tasks[task_id]

    def _add(self, index: int, event: TeamEventModel) -> None:
        d, kind = event.data, event.kind
        if kind == EventKind.DELEGATION.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.robot, task.hcw_id = d.get('robot', event.target), str(d.get('hcw_id', ''))
                task.delegated_at = index
        elif kind == EventKind.TASK_REPORT.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.report, task.report_at = d, index
        elif kind == EventKind.JUDGMENT.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.judged, task.judged_at = d.get('judged_status'), index
        elif kind == EventKind.FALSE_COMPLETION.value:
            task = self._task(d.get('task_id') or event.target)
            if task is not None:
                task.false_completion = event
        elif kind == EventKind.REPORT_REJECTED.value:
            task = self._task(d.get('task_id') or event.target)
            if task is not None:
                task.rejected.append(event)
        elif kind == EventKind.TOOL_CALL.value:
            task = self._task(d.get('task_id', ''))
            if task is not None and event.actor == task.robot_or_owner():
                task.tools_called.append(event.target)
        elif kind == EventKind.TOOL_REFUSED.value:
            self.refusals.append(event)

    def of_type(self, task_type: TaskType) -> list[Task]:
        """Return the tasks of ``task_type`` in the order they appear."""
        return [t for t in self.tasks.values() if t.task_type is task_type]

    def kind(self, *kinds: EventKind, actor: str | None = None) -> list[tuple[int, TeamEventModel]]:
        """Return ``(index, event)`` of the given kinds (and actor), in record order."""
        values = {k.value for k in kinds}
        return [(i, e) for i, e in enumerate(self.events)
                if e.kind in values and (actor is None or e.actor == actor)]


def as_task_type(value) -> TaskType | None:
    """Return ``value`` as a :class:`~robot_team.contracts.reports.TaskType` (None: not one)."""
    if isinstance(value, TaskType):
        return value
    try:
        return TaskType(value)
    except ValueError:
        return None


def view_records(events: list[TeamEventModel], view: str) -> tuple[Record, Record]:
    """Return the records the manager's cells and the robots' cells of ``view`` are scored on."""
    if view == 'floor':
        record = Record(list(events))
        return record, record
    return (Record(without_fallback(events, {MANAGER})),
            Record(without_fallback(events, set(TASK_OWNER.values()))))
