"""What the LLM manager is told each turn: the news of its observation and the task record, as text.

:class:`ManagerUpdates` keeps what the manager's model was told of the case (each task's state
and issue, each escalation's decision, the human supervisor's instructions, the lost robots, the
guard notes still to tell) and writes the next update from an observation: only what changed,
then the rest of the record in one line (older turns leave the request's window). World text in
it (a human's note, an issue) is quoted: data, never instructions
(:data:`~robot_team.llm.transcript.DATA_RULE`).
"""

from __future__ import annotations

from typing import Iterable

from robot_team.brains.base import ManagerObservation
from robot_team.llm.transcript import compact


class ManagerUpdates:
    """What the manager's model was told of the case, and the text of its next update.

    The lost robots it was told about stay across cases (:meth:`new_case`); the rest is per case.
    """

    def __init__(self):
        self._seen_lost: set[str] = set()   # team nodes the model was told are lost (team/liveness)
        self.new_case()

    def new_case(self) -> None:
        """Forget what the model was told of the last case (the lost robots stay)."""
        self._seen: dict[str, str] = {}
        self._seen_escalations: dict[str, str] = {}
        self._seen_instructions: set[str] = set()
        self._notes: list[str] = []   # guard notes that needed no decision, for the next update

    def note(self, texts: Iterable[str]) -> None:
        """Keep guard notes that need no decision, to tell them with the next update."""
        self._notes.extend(texts)

    def needs_judgment(self, obs: ManagerObservation) -> bool:
        """Return whether ``obs`` holds a failure or an escalation change the model was not told yet."""
        return any(t.state == 'failure' and self._seen.get(t.task_id) != f'{t.state}|{t.issue}'
                   for t in obs.tasks) \
            or any(self._seen_escalations.get(e.escalation_id) != (e.decision or 'open') for e in obs.escalations)

    def text(self, obs: ManagerObservation, first: bool, lessons: bool) -> str:
        """Return what is new in ``obs`` and the task record, compactly (the next user message).

        ``first``: the case's first update (the patient in full); ``lessons``: tell the run's earlier
        cases' lessons with it (the knowledge-base condition). What it tells counts as told from now on.
        """
        lines = []
        p = obs.patient
        if p is not None and first:
            lines.append(f'Patient {p.patient_id} in {p.room}: {p.presentation!r}, ESI {p.esi_level}; assigned '
                         f'HCW #{p.assigned_hcw_id} ({p.required_specialty}).')
            if lessons and obs.lessons:   # the Criticize-Reflect loop across the run's cases (KB condition)
                lines.append('Lessons from earlier cases of this shift: ' + ' '.join(obs.lessons))
        elif p is not None:   # restated briefly: older turns may be out of the window
            lines.append(f'Patient {p.patient_id} in {p.room}, assigned HCW #{p.assigned_hcw_id}.')
        told = set()
        for t in obs.tasks:
            key = f'{t.state}|{t.issue}'
            if self._seen.get(t.task_id) != key and t.state != 'running':
                detail = f'issue {t.issue!r}' if t.issue else f'summary {t.summary!r}'
                extra = {k: t.data[k] for k in ('alternatives', 'hcw_id', 'name', 'specialty') if k in t.data
                         and not (k == 'hcw_id' and t.data[k] == t.hcw_id)}   # the robot is its task type's
                lines.append(f'{t.task_id} ({t.task_type.value}, HCW #{t.hcw_id or "-"}): {t.state}; '
                             f'{detail}' + (f'; data {compact(extra, 300)}' if extra else ''))
                told.add(t.task_id)
            self._seen[t.task_id] = key
        for e in obs.escalations:
            key = e.decision or 'open'
            if self._seen_escalations.get(e.escalation_id) != key:
                lines.append(f'Escalation {e.escalation_id} on {e.task_id or "-"} by {e.raised_by or "?"}: '
                             f'{e.reason!r}; decision: {e.decision or "pending"}'
                             + (f' #{e.hcw_id}' if e.hcw_id else '') + (f', note {e.note!r}' if e.note else ''))
                self._seen_escalations[e.escalation_id] = key
        for instruction in obs.instructions:
            if instruction.instruction_id not in self._seen_instructions:
                self._seen_instructions.add(instruction.instruction_id)
                lines.append(f'Human supervisor {instruction.operator_id} (advisory; workflow rules and guards '
                             f'still apply)' + (f' on {instruction.task_id}' if instruction.task_id else '')
                             + f': {instruction.text!r}')
        lost, seen_lost = set(obs.lost_robots), self._seen_lost
        for node in sorted(lost - seen_lost):
            lines.append(f'Supervisor: {node} was lost (its node stopped answering); its running task, if any, '
                         f'was closed as a failure (robot_lost). Wait until it is back to delegate to it.')
        for node in sorted(seen_lost - lost):
            lines.append(f'Supervisor: {node} is back and can take tasks again.')
        self._seen_lost = lost
        for note in [*self._notes, *(feedback.text for feedback in obs.feedback)]:
            lines.append(f'Guard: {note}')
        self._notes = []
        record = '; '.join(f'{t.task_id} {t.task_type.value} #{t.hcw_id or "-"} {t.state}' for t in obs.tasks
                           if t.task_id not in told)   # the rest of the record (older turns leave the window)
        if record:
            lines.append(f'Record: {record}.')
        return '\n'.join(lines)
