"""A case's authorized tasks, in authorization order and numbered per task type (:class:`TaskBook`).

Task IDs are ``<id prefix><type prefix>-<n>`` (:data:`~robot_team.rules.workflow.state.TASK_ID_PREFIX`):
``nav-1``, ``info-2``, a later case's ``P-0777/nav-1``. What a task may become is the policy's
business (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`); this module keeps the tasks and
their numbering, and takes back a stored list of them.
"""

from __future__ import annotations

from typing import Iterator

from robot_team.contracts.reports import WORKFLOW_ORDER, TaskType
from robot_team.rules.workflow.rules import TaskOutline
from robot_team.rules.workflow.state import TASK_ID_PREFIX, TaskState


class TaskBook:
    """The tasks of one case in authorization order, with the next number of each task type.

    Not locked: its owner (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`) calls it with its
    own lock held. :meth:`get`, :meth:`latest` and iteration give the tasks themselves, for their
    owner to close; :meth:`copies` gives copies.
    """

    def __init__(self):
        self._tasks: dict[str, TaskState] = {}
        self._counters: dict[TaskType, int] = {t: 0 for t in WORKFLOW_ORDER}

    @classmethod
    def restored(cls, tasks: list[TaskState], id_prefix: str) -> TaskBook:
        """Return a book of copies of stored ``tasks`` (authorization order), numbering on after their IDs.

        The per-type numbers are derived from the task IDs (``nav-3`` follows ``nav-2``).

        Raises
        ------
        ValueError
            If a task ID is not ``<id_prefix><type prefix>-<n>`` of its task type, or repeats.
        """
        book = cls()
        for task in tasks:
            prefix, _, number = task.task_id.rpartition('-')
            if (prefix != id_prefix + TASK_ID_PREFIX[task.task_type] or not number.isdigit()
                    or int(number) < 1):
                raise ValueError(f"stored task ID '{task.task_id}' is not '{id_prefix}"
                                 f"{TASK_ID_PREFIX[task.task_type]}-<n>' of its type {task.task_type.value}")
            if task.task_id in book._tasks:
                raise ValueError(f"stored task ID '{task.task_id}' appears twice")
            book._tasks[task.task_id] = task.model_copy(deep=True)
            book._counters[task.task_type] = max(book._counters[task.task_type], int(number))
        return book

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[TaskState]:
        return iter(self._tasks.values())

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._tasks

    def ids(self) -> list[str]:
        """Return every task ID, in authorization order."""
        return list(self._tasks)

    def get(self, task_id: str) -> TaskState | None:
        """Return the task ``task_id``, if any."""
        return self._tasks.get(task_id)

    def add(self, kind: TaskType, id_prefix: str, *, robot: str, hcw_id: str, requested_by: str, reason: str,
            started_s: float) -> TaskState:
        """Record a new running task of ``kind``, numbered next of its type after ``id_prefix``; return it."""
        self._counters[kind] += 1
        task_id = f'{id_prefix}{TASK_ID_PREFIX[kind]}-{self._counters[kind]}'
        self._tasks[task_id] = TaskState(task_id=task_id, task_type=kind, robot=robot, hcw_id=hcw_id,
                                         requested_by=requested_by, reason=reason, started_s=started_s)
        return self._tasks[task_id]

    def latest(self, kind: TaskType) -> TaskState | None:
        """Return the latest task of ``kind``, if any."""
        for task in reversed(list(self._tasks.values())):
            if task.task_type is kind:
                return task
        return None

    def running(self) -> bool:
        """Return whether any task runs."""
        return any(t.status == 'running' for t in self._tasks.values())

    def outlines(self) -> list[TaskOutline]:
        """Return every task as the shared rules see them (:class:`~robot_team.rules.workflow.rules.TaskOutline`)."""
        return [TaskOutline(t.task_id, t.task_type, t.status, t.issue, t.robot, t.hcw_id) for t in self._tasks.values()]

    def copies(self) -> list[TaskState]:
        """Return a copy of every task, in authorization order."""
        return [t.model_copy(deep=True) for t in self._tasks.values()]
