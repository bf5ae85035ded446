"""The manager's reflection on a case and the lessons the run keeps from it (no rclpy).

:class:`ReflectionStep` carries out a brain's ``reflect`` action: the reflection must be complete
and consistent with the case's record (the manager-side guards), then pass the supervisor's gate
(rule 8: every workflow step is done) and be recorded by the supervisor as the reflection task's
report. Each refusal is recorded and told to the brain. The lessons of the accepted reflections
are kept for the run's next cases (:func:`keep_lessons`, at most :data:`MAX_LESSONS`).
"""

from __future__ import annotations

import threading
from typing import Callable

from robot_team.brains.base import FeedbackKind, Reflect
from robot_team.core.manager_cases import Lane
from robot_team.core.manager_feedback import BrainFeedback
from robot_team.core.manager_ports import ManagerPorts
from robot_team.contracts.events import EventKind
from robot_team.rules.guards import reflection_contradictions
from robot_team.contracts.names import Role
from robot_team.contracts.reports import TaskReportModel, TaskStatus, TaskType

MAX_LESSONS = 12
"""The most lessons of earlier cases kept and shown to the next case (the newest; memory stays bounded)."""


def keep_lessons(kept: list[str], learned: list[str]) -> list[str]:
    """Return the lessons kept after a reflection taught ``learned``: the newest :data:`MAX_LESSONS`, each once."""
    older = [x for x in kept if x not in learned]
    return (older + list(dict.fromkeys(learned)))[-MAX_LESSONS:]


_REFUSALS = {
    FeedbackKind.REFLECTION_INCOMPLETE: ('reflection incomplete', 'Reflection refused, incomplete: '),
    FeedbackKind.REFLECTION_CONTRADICTS: ('reflection contradicts the record',
                                          'Reflection refused, it contradicts the record: '),
}
"""A refusal of the manager-side guards: the summary it is recorded with, what the brain is told before the problems."""


class ReflectionStep:
    """Checks a case's reflection, has the gate authorise it and the supervisor record it.

    Parameters
    ----------
    ports
        The manager's ROS side (the gate, the supervisor's record, ROS time).
    emit
        The manager's event sink (its case's events).
    feedback
        Tells the case's brain why a reflection was refused.
    lock
        The manager core's lock (guards the lanes).
    """

    def __init__(self, ports: ManagerPorts, emit: Callable[..., object], feedback: BrainFeedback,
                 lock: threading.RLock):
        self._ports = ports
        self._emit = emit
        self._feedback = feedback
        self._lock = lock

    def submit(self, lane: Lane, act: Reflect, source: str) -> bool:
        """Carry out ``act`` for ``lane``'s case (decided by ``source``); return whether the supervisor recorded it.

        Refused (recorded as ``reflection_rejected`` and told to the brain) when it is incomplete,
        contradicts the case's record or the gate refuses it; not recorded when the supervisor
        rejects its report (told to the brain).
        """
        missing = act.reflection.missing_parts()
        if missing:
            self._refuse(lane, act, source, FeedbackKind.REFLECTION_INCOMPLETE, 'missing', missing)
            return False
        with self._lock:
            tasks = [t.model_copy() for t in lane.obs.tasks]
        wrong = reflection_contradictions(act.reflection, tasks)
        if wrong:
            self._refuse(lane, act, source, FeedbackKind.REFLECTION_CONTRADICTS, 'contradictions', wrong)
            return False
        auth = self._ports.authorize(TaskType.REFLECTION.value, Role.MANAGER.value, 'all workflow steps are done',
                                     case_id=lane.case_id)
        if not auth.approved:
            self._emit(EventKind.REFLECTION_REJECTED, 'supervisor refused the reflection now', reason=auth.explanation,
                       rule=auth.rule.value, source=source)
            self._feedback.tell(lane, FeedbackKind.REFLECTION_REFUSED, f'Reflection refused: {auth.explanation}',
                                auth.rule.value)
            return False
        self._emit(EventKind.REFLECTION, 'manager wrote the reflection', target=auth.task_id, task_id=auth.task_id,
                   source=source, **act.reflection.model_dump(mode='json'))
        # Close the reflection step at the supervisor like any other task.
        report = TaskReportModel(task_id=auth.task_id, task_type=TaskType.REFLECTION, robot=Role.MANAGER.value,
                                 status=TaskStatus.SUCCESS, summary='reflection written', stamp_s=self._ports.now(),
                                 data=act.reflection.model_dump(mode='json'))
        answer = self._ports.submit_report(report)
        if not answer.accepted:   # recorded by the supervisor as report_rejected; the deadline still runs
            self._feedback.tell(lane, FeedbackKind.REFLECTION_REFUSED,
                                f'Reflection not recorded: {answer.explanation}')
            return False
        return True

    def _refuse(self, lane: Lane, act: Reflect, source: str, kind: FeedbackKind, field: str,
                problems: list[str]) -> None:
        """Record a reflection the manager-side guards refused (``problems`` as ``field``) and tell the brain."""
        summary, told = _REFUSALS[kind]
        self._emit(EventKind.REFLECTION_REJECTED, summary, reason='; '.join(problems), **{field: problems},
                   reflection=act.reflection.model_dump(mode='json'), source=source)
        self._feedback.tell(lane, kind, told + '; '.join(problems))
