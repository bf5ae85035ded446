"""The supervisor's deadlines as events: started, met, missed, and the escalation a missed one opens (no rclpy).

The workflow policy runs the deadlines (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`); this module
says them: each deadline's fields for an event (:func:`deadline_data`), why it runs
(``deadline_started``) or why it was missed (``deadline_missed``), and the escalation a missed
deadline opens: about its task (``task``, ``issue_handling``: retry, reassign or abort) or about
the case's onboarding (``decision``, ``onboarding``: :data:`STALL_OPTIONS`). Times are ROS times, s.
"""

from __future__ import annotations

from typing import Callable

from robot_team.contracts.events import EventKind
from robot_team.rules.workflow.deadlines import Deadline
from robot_team.rules.workflow.policy import WorkflowPolicy

STALL_OPTIONS = ['retry', 'abort']
"""Decisions offered on an escalation of a stall ('retry': carry on with the safe default; 'abort': close)."""

TASK_OPTIONS = ['retry', 'reassign', 'abort']
"""Decisions offered on an escalation of a task's missed deadline (its report, or its failure's handling)."""


def deadline_data(deadline: Deadline) -> dict:
    """Return a deadline's fields for an event's data (s of ROS time)."""
    return {'task_id': deadline.task_id, 'task_type': deadline.task_type.value if deadline.task_type else '',
            'deadline': deadline.kind, 'deadline_s': deadline.duration_s, 'started_s': deadline.started_s,
            'due_s': deadline.due_s, 'met_by': deadline.met_by, 'cue': deadline.cue}


def record_deadline_changes(policy: WorkflowPolicy, emit: Callable[..., object]) -> None:
    """Record the deadlines of ``policy``'s case that started or were met since the last call (``emit``)."""
    for change in policy.take_deadline_changes():
        deadline = change.deadline
        if change.change == 'started':
            emit(EventKind.DEADLINE_STARTED, f'{deadline.kind} deadline ({_about(deadline)}): '
                 f'{deadline.duration_s:g} s', target=deadline.task_id, reason=_deadline_reason(deadline),
                 **deadline_data(deadline))
        else:
            emit(EventKind.DEADLINE_MET, f'{deadline.kind} deadline ({_about(deadline)}) met by '
                 f'{deadline.met_by}', target=deadline.task_id, **deadline_data(deadline))


def record_missed(policy: WorkflowPolicy, deadline: Deadline, emit: Callable[..., object]) -> str:
    """Record that ``deadline`` of ``policy``'s case was missed (``deadline_missed``); return why, in words."""
    if deadline.kind == 'issue_handling':
        reason = (f'manager did not handle the failure of {deadline.task_id} within '
                  f'{deadline.duration_s:g} s')
    elif deadline.kind == 'decision':
        reason = (f'manager took no step within {deadline.duration_s:g} s after {deadline.cue}: no '
                  f'delegation, escalation or reflection')
    elif deadline.kind == 'onboarding':
        reason = (f'the onboarding did not end within {deadline.duration_s:g} s after {deadline.cue}: no '
                  f'reflection recorded')
    else:
        task = policy.snapshot().task(deadline.task_id)
        reason = (f'{task.robot} did not report on {deadline.task_id} ({deadline.task_type.value}) '
                  f'within {deadline.duration_s:g} s')
    emit(EventKind.DEADLINE_MISSED, f'{deadline.kind} deadline ({_about(deadline)}) missed',
         target=deadline.task_id, reason=reason, **deadline_data(deadline))
    return reason


def missed_escalation(deadline: Deadline) -> tuple[str, list[str]]:
    """Return what the escalation of missed ``deadline`` is about and offers: ``(task_id, options)``.

    A task's deadline (``task``, ``issue_handling``) escalates that task (:data:`TASK_OPTIONS`);
    the others escalate the case's onboarding (task ID '', :data:`STALL_OPTIONS`).
    """
    if deadline.kind in ('task', 'issue_handling'):
        return deadline.task_id, list(TASK_OPTIONS)
    return '', STALL_OPTIONS


def _about(deadline: Deadline) -> str:
    return deadline.task_id or deadline.cue


def _deadline_reason(deadline: Deadline) -> str:
    if deadline.kind == 'issue_handling':
        return (f'{deadline.task_id} failed: the manager must delegate {deadline.task_type.value} again or '
                f'escalate {deadline.task_id}')
    if deadline.kind == 'decision':
        return f'after {deadline.cue}: the manager must delegate, escalate or reflect'
    if deadline.kind == 'onboarding':
        return f'after {deadline.cue}: the onboarding must end with the reflection'
    return f'{deadline.task_id} must report'
