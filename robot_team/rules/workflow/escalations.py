"""A case's escalations as the workflow keeps them (:class:`EscalationBook`): numbered, opened, decided.

IDs are ``<id prefix>esc-<n>`` in the order they were opened. Who may escalate what, and what a
decision changes in the workflow (a ``decision`` deadline, ``abort`` closing the episode), is the
policy's business (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`); the lifecycle of an
escalation is :mod:`robot_team.contracts.escalation_model`'s.
"""

from __future__ import annotations

from typing import Iterator

from robot_team.contracts.escalation_model import EscalationRecord, LifecycleAction, transition
from robot_team.rules.workflow.state import DECISIONS


class EscalationBook:
    """The escalations of one case by ID, in the order they were opened.

    Not locked: its owner (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`) calls it with its
    own lock held. :meth:`get` and iteration give the records themselves; :meth:`copies` gives
    copies.
    """

    def __init__(self):
        self._escalations: dict[str, EscalationRecord] = {}

    @classmethod
    def restored(cls, escalations: list[EscalationRecord], id_prefix: str) -> EscalationBook:
        """Return a book of copies of stored ``escalations``; the next one opened is numbered after them.

        Raises
        ------
        ValueError
            If their IDs are not ``<id_prefix>esc-1`` to ``<id_prefix>esc-N`` in order.
        """
        expected = [f'{id_prefix}esc-{n}' for n in range(1, len(escalations) + 1)]
        got = [e.escalation_id for e in escalations]
        if got != expected:
            raise ValueError(f"stored escalation IDs {', '.join(got)} are not {id_prefix}esc-1 to "
                             f"{id_prefix}esc-{len(got)} in order")
        book = cls()
        book._escalations = {e.escalation_id: e.model_copy(deep=True) for e in escalations}
        return book

    def __len__(self) -> int:
        return len(self._escalations)

    def __iter__(self) -> Iterator[EscalationRecord]:
        return iter(self._escalations.values())

    def __contains__(self, escalation_id: str) -> bool:
        return escalation_id in self._escalations

    def get(self, escalation_id: str) -> EscalationRecord | None:
        """Return the escalation ``escalation_id``, if any."""
        return self._escalations.get(escalation_id)

    def copies(self) -> list[EscalationRecord]:
        """Return a copy of every escalation, in the order they were opened."""
        return [e.model_copy(deep=True) for e in self._escalations.values()]

    def open(self, id_prefix: str, *, task_id: str, task_type: str, raised_by: str, reason: str,
             options: list[str], opened_s: float, patient_id: str) -> EscalationRecord:
        """Record a new open escalation, numbered next after ``id_prefix``; return it.

        Raises
        ------
        ValueError
            If ``reason`` is empty.
        """
        if not str(reason or '').strip():
            raise ValueError('an escalation needs a reason the human can read')
        escalation_id = f'{id_prefix}esc-{len(self._escalations) + 1}'
        self._escalations[escalation_id] = EscalationRecord(
            escalation_id=escalation_id, task_id=task_id, task_type=task_type, raised_by=raised_by, reason=reason,
            options=options, opened_s=opened_s, patient_id=patient_id)
        return self._escalations[escalation_id]

    def take_back(self, escalation: EscalationRecord) -> None:
        """Keep a copy of ``escalation`` under its own ID (one a previous supervisor opened)."""
        self._escalations[escalation.escalation_id] = escalation.model_copy(deep=True)

    def decide(self, escalation_id: str, decision: str, hcw_id: str, note: str, operator_id: str,
               now_s: float) -> str | None:
        """Record a human's ``decision`` on the open escalation ``escalation_id``; return why not, or None.

        ``decision`` is one of :data:`~robot_team.rules.workflow.state.DECISIONS`; ``reassign`` needs
        ``hcw_id``. A refused decision changes nothing.
        """
        escalation = self._escalations.get(escalation_id)
        if escalation is None:
            open_ids = [e.escalation_id for e in self._escalations.values() if e.is_open]
            return f"no escalation '{escalation_id}'; open escalations: {', '.join(open_ids) or 'none'}"
        if not escalation.is_open:
            return (f"{escalation_id} is already resolved ({escalation.decision} by "
                    f'{escalation.decided_by or "an unnamed operator"})')
        if decision not in DECISIONS:
            return f"unknown decision '{decision}'; expected one of {', '.join(DECISIONS)}"
        if decision == 'reassign' and not str(hcw_id or '').strip():
            return "decision 'reassign' needs hcw_id: the HCW to assign instead"
        transition(escalation, LifecycleAction.RESOLVE)
        escalation.decision = decision
        escalation.hcw_id = str(hcw_id or '').strip()
        escalation.note = note or ''
        escalation.decided_by = operator_id or ''
        escalation.closed_s = now_s
        return None
