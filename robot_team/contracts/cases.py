"""Cases: each arrival opens one, and which waiting case the team serves next (no rclpy).

A **case** is one patient's onboarding: the arrival (patient, room, ESI level, assigned HCW,
required specialty), the tasks, deadlines, escalations and reflection that serve it. The case's
ID is its patient's ID (a repeated arrival of the same patient is the same case).

The team serves one case at a time per run today: a robot runs one task at a time and every
role has one robot, so a case that arrives while another is in progress waits for it; when the
case in progress closes (its reflection is recorded), the next case is the most urgent waiting
one. Both the manager and the supervisor's gate apply :func:`next_case`, the one
implementation of that order.

Urgency order (:func:`case_key`): Emergency Severity Index level first (1 most urgent to 5
least; ESI v4, Gilboy et al., *Emergency Severity Index (ESI): A Triage Tool for Emergency
Department Care, Version 4*, AHRQ 2012/2020), then arrival time (first come, first served),
then patient ID (a stable tie-break). A patient not yet triaged (ESI 0) is ranked as ESI 3, the
level the handbook gives a patient who needs several resources, i.e. after every ESI 1-2
patient and before every ESI 4-5 one: an unknown acuity is neither put first nor last.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

UNTRIAGED_RANK = 3
"""The ESI rank of a patient whose level is unknown (0): see the module's docstring."""


class WaitingCase(NamedTuple):
    """A case waiting for the team: the patient, their ESI level (0 unknown) and arrival time (ROS time, s)."""

    patient_id: str
    esi_level: int
    arrived_s: float


def case_key(esi_level: int, arrived_s: float, patient_id: str) -> tuple[int, float, str]:
    """Return the sort key of a case in urgency order (smaller first): ESI rank, arrival (s), patient ID.

    Raises
    ------
    ValueError
        If ``esi_level`` is not 0 (unknown) to 5.
    """
    level = int(esi_level)
    if not 0 <= level <= 5:
        raise ValueError(f'esi_level {esi_level!r}: expected 1 (most urgent) to 5, or 0 (not triaged)')
    return (level or UNTRIAGED_RANK, float(arrived_s), str(patient_id))


def next_case(waiting: Iterable[WaitingCase]) -> WaitingCase | None:
    """Return the waiting case the team serves next (:func:`case_key` order); None if none waits."""
    return min(waiting, key=lambda c: case_key(c.esi_level, c.arrived_s, c.patient_id), default=None)


def later_case_prefix(patient_id: str) -> str:
    """Return what goes before the task and escalation IDs of a run's later case (``P-0777/nav-1``).

    The first case of a run keeps the one-patient IDs (``nav-1``, ``esc-1``, no prefix), so a
    one-patient episode (the published evaluation's scenarios) is recorded exactly as before.
    """
    return f'{patient_id}/'
