"""The deadlines the supervisor watches (:class:`Deadline`) and their bookkeeping (:class:`DeadlineBook`).

What starts and meets each kind is the policy's business (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`);
this module keeps the deadlines, closes them as met or missed and queues the starts and meets for
the event record. All times are ROS times in seconds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from robot_team.contracts.reports import TaskType

DeadlineKind = Literal['issue_handling', 'task', 'decision', 'onboarding']

MANAGER_DEADLINES = frozenset({'issue_handling', 'decision', 'onboarding'})
"""Deadlines only the manager can meet: missing one is a stall of the team (safe default applies)."""


class Deadline(BaseModel):
    """One deadline the supervisor watches.

    ``kind='issue_handling'``: after ``task_id`` failed, the manager must delegate that task type
    again or escalate ``task_id`` before ``due_s``. ``kind='task'``: ``task_id`` must report
    before ``due_s``. ``kind='decision'``: after ``cue`` (the patient's arrival, a successful
    report on ``task_id``, a human decision), the manager must get a delegation (or the
    reflection) authorized, or a human must be paged (any escalation), before ``due_s``.
    ``kind='onboarding'``: the reflection must be recorded before ``due_s`` (from the patient cue).
    """

    kind: DeadlineKind
    task_id: str = Field('', description="The task it is about ('' for the patient-level deadlines).")
    task_type: TaskType | None = None
    cue: str = Field('', description="What started it, e.g. 'patient P-0001 arrived', 'report nav-2'.")
    started_s: float
    duration_s: float
    state: Literal['pending', 'met', 'missed'] = 'pending'
    met_by: str = Field('', description="What met it, e.g. 'delegation nav-2', 'escalation esc-1', 'report'.")
    closed_s: float | None = None

    @property
    def due_s(self) -> float:
        """ROS time after which the deadline is missed, s."""
        return self.started_s + self.duration_s


class DeadlineChange(BaseModel):
    """A deadline that started or was met (for the event record)."""

    change: Literal['started', 'met']
    deadline: Deadline


class DeadlineBook:
    """A case's deadlines in the order they started, and the starts and meets not yet taken.

    Not locked: its owner (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`) calls it with its
    own lock held. What it hands out (:meth:`copies`, :meth:`miss`, :meth:`take_changes`) are
    copies; :meth:`pending` gives the deadlines themselves, for their owner to read or postpone.
    """

    def __init__(self):
        self._deadlines: list[Deadline] = []
        self._changes: list[DeadlineChange] = []

    @classmethod
    def restored(cls, deadlines: list[Deadline]) -> DeadlineBook:
        """Return a book of copies of stored ``deadlines`` (in the order they started), none of them announced again."""
        book = cls()
        book._deadlines = [d.model_copy(deep=True) for d in deadlines]
        return book

    def __len__(self) -> int:
        return len(self._deadlines)

    def copies(self) -> list[Deadline]:
        """Return a copy of every deadline, pending or closed, in the order they started."""
        return [d.model_copy(deep=True) for d in self._deadlines]

    def pending(self, kind: str | None = None) -> list[Deadline]:
        """Return the pending deadlines (of ``kind``; None: all), in the order they started."""
        return [d for d in self._deadlines if d.state == 'pending' and (kind is None or d.kind == kind)]

    def start(self, deadline: Deadline) -> None:
        """Watch ``deadline`` from now on and queue its start."""
        self._deadlines.append(deadline)
        self._changes.append(DeadlineChange(change='started', deadline=deadline.model_copy(deep=True)))

    def meet(self, kind: str, met_by: str, now_s: float, *, task_id: str | None = None,
             task_type: TaskType | None = None) -> None:
        """Close the pending ``kind`` deadlines as met by ``met_by``: those about ``task_id``, of ``task_type``.

        ``task_id``, ``task_type``: None, any.
        """
        for deadline in self.pending(kind):
            if task_id is not None and deadline.task_id != task_id:
                continue
            if task_type is not None and deadline.task_type is not task_type:
                continue
            self._close(deadline, 'met', met_by, now_s)

    def miss(self, now_s: float) -> list[Deadline]:
        """Close the pending deadlines missed by ROS time ``now_s`` (s) as missed; return copies of them."""
        missed = []
        for deadline in self.pending():
            if now_s > deadline.due_s:
                self._close(deadline, 'missed', '', now_s)
                missed.append(deadline.model_copy(deep=True))
        return missed

    def postpone(self, by_s: float, kind: str | None = None) -> None:
        """Move every pending deadline (of ``kind``; None: all) ``by_s`` s later."""
        for deadline in self.pending(kind):
            deadline.started_s += by_s

    def take_changes(self) -> list[DeadlineChange]:
        """Return and forget the deadlines started or met since the last call, oldest first."""
        changes, self._changes = self._changes, []
        return changes

    def _close(self, deadline: Deadline, state: str, met_by: str, now_s: float) -> None:
        deadline.state = state
        deadline.met_by = met_by
        deadline.closed_s = now_s
        if state == 'met':
            self._changes.append(DeadlineChange(change='met', deadline=deadline.model_copy(deep=True)))
