"""What the manager's guards tell a case's brain: typed feedback, a repeated refusal said once (no rclpy).

Each refusal or failure of a brain's action (the prefetched-results guard, a refused delegation,
escalation or reflection, an action that failed, a robot busy with another case's task) reaches the
case's brain as a :class:`~robot_team.brains.base.GuardFeedback` in its next observation.
:class:`BrainFeedback` gives it, and keeps a brain refused twice in a row for the same reason on the
same observation from deciding again in a loop against the gate.
"""

from __future__ import annotations

import threading
from typing import Callable

from robot_team.brains.base import FeedbackKind, GuardFeedback, ManagerObservation
from robot_team.contracts.names import RobotId
from robot_team.core.manager_cases import Lane
from robot_team.contracts.events import EventKind


class BrainFeedback:
    """Gives the guards' feedback to the brain of a case (:class:`~robot_team.core.manager_cases.Lane`).

    Parameters
    ----------
    lock
        The manager core's lock (guards the lanes).
    emit
        The manager's event sink (its case's events).
    update
        ``update(lane, cue, change)``: changes ``lane``'s observation and wakes its brain (the core's).
    """

    def __init__(self, lock: threading.RLock, emit: Callable[..., object],
                 update: Callable[[Lane, str, Callable[[ManagerObservation], None]], None]):
        self._lock = lock
        self._emit = emit
        self._update = update

    def tell(self, lane: Lane, kind: FeedbackKind, text: str, rule: str = '') -> None:
        """Tell ``lane``'s brain what a guard said; the same words twice with nothing new in between do not wake it.

        A brain refused twice in a row for the same reason on the same observation would be refused
        again: it decides next when something changes (a report, a decision, a robot back...), not in
        a loop against the gate (seen with a deterministic brain and a task the gate still counted
        as running).
        """
        feedback = GuardFeedback(kind=kind, text=text, rule=rule)
        with self._lock:
            repeat = feedback in lane.last_feedback and not lane.obs.new
            lane.round_feedback.append(feedback)
            if repeat:
                lane.obs.feedback.append(feedback)
        if repeat:
            self._emit(EventKind.OBSERVATION, 'the same refusal again: the manager decides when something changes',
                       reason=text, cue='repeated_refusal', kind=kind.value, rule=rule)
            return
        self._update(lane, '', lambda o: o.feedback.append(feedback))

    @staticmethod
    def robot_busy(lane: Lane, robot: RobotId, busy_with: str) -> None:
        """Tell ``lane``'s brain that its case waits for ``robot``, busy with task ``busy_with`` of another (lock held).

        It does not wake the brain: the case decides again once the robot is free.
        """
        lane.obs.feedback.append(GuardFeedback(
            kind=FeedbackKind.ROBOT_BUSY, text=f'{robot} runs {busy_with or "a task"} of another case; this '
            f'case waits for it (you are told when it is free)'))

    @staticmethod
    def new_round(lane: Lane) -> None:
        """Start a decision round of ``lane``'s case: this round's feedback becomes the last one's (lock held)."""
        lane.last_feedback, lane.round_feedback = lane.round_feedback, []
