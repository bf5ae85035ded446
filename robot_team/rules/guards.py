"""Guards on the manager's own outputs, as pure functions (the manager node records what they find).

- :func:`reflection_contradictions`: a reflection whose task outcomes contradict the record
  (e.g. claims navigation succeeded when no navigation task succeeded) is refused.
- :func:`report_contradictions`: the manager accepts an operational success only from the
  robot that owns the task *with its tools' ground truth and what the world showed attached*,
  consistent with both for the task the manager delegated (its room and HCW): the same check the
  robot node runs (:func:`robot_team.rules.grounding.success_problems`), repeated on the evidence that
  travelled with the report.
- :func:`prefetched_results`: a delegation must carry who, where and why (HCW number, room,
  patient cue, recovery reason), never the task's results. The rule: ``context`` may hold only
  the keys in :data:`DELEGATION_CONTEXT_KEYS`, and ``instructions`` may not state result fields
  as ``field: value`` (name, specialty, badge, location, coordinates, path, layout, members,
  status, outcome) or coordinates ``(x, y)``. A hit is role misalignment: the manager doing a
  robot's work. Both checks complement :meth:`robot_team.contracts.reports.Reflection.missing_parts`
  and the supervisor's workflow gate.
"""

from __future__ import annotations

import re
from typing import Iterable

from robot_team.brains.base import BrainReport, Delegate, TaskRecord
from robot_team.rules.grounding import success_problems
from robot_team.contracts.reports import OPERATIONAL_TASKS, Reflection, TaskReportModel, TaskStatus
from robot_team.catalog import TASK_OWNER, TaskFacts
from robot_team.contracts.names import role_name, role_robots
from robot_team.tools.base import ToolResult

DELEGATION_CONTEXT_KEYS = frozenset({'patient_id', 'presentation', 'esi_level', 'required_specialty',
                                     'assigned_hcw_id', 'note'})
"""What a delegation's context may carry: the patient cue, nothing a robot produces."""

_RESULT_FIELD = re.compile(
    r'\b(name|specialty|badge(?:[ _]?id)?|location|position|pose|coordinates|path|route|layout|members|'
    r'care[ _]team|status|outcome|result|hcw_location|arrived_at)\s*[:=]', re.IGNORECASE)
_COORDINATES = re.compile(r'\(\s*-?\d+(?:\.\d+)?\s*,\s*-?\d+(?:\.\d+)?\s*(?:,\s*-?\d+(?:\.\d+)?\s*)?\)')


def reflection_contradictions(reflection: Reflection, tasks: Iterable[TaskRecord]) -> list[str]:
    """Return how ``reflection``'s task outcomes contradict the record ``tasks`` (empty: consistent).

    A ``success`` outcome needs a succeeded task of that type; a ``failure`` outcome contradicts
    a record whose latest task of that type succeeded; the robot named must be the task's owner.
    """
    tasks = list(tasks)
    problems = []
    for outcome in reflection.task_outcomes:
        of_type = [t for t in tasks if t.task_type is outcome.task_type]
        kind = outcome.task_type.value
        if outcome.status is TaskStatus.SUCCESS and not any(t.state == 'success' for t in of_type):
            problems.append(f'{kind} is claimed successful but no {kind} task succeeded (record: '
                            + (', '.join(f'{t.task_id} {t.state}' for t in of_type) or 'none delegated') + ')')
        elif outcome.status is TaskStatus.FAILURE and of_type and of_type[-1].state == 'success':
            problems.append(f'{kind} is claimed failed but {of_type[-1].task_id} succeeded')
        owner = TASK_OWNER.get(outcome.task_type)
        if owner and role_name(outcome.robot) != owner:
            problems.append(f"{kind} is attributed to '{outcome.robot}', but only {owner} does {kind}")
    return problems


def report_contradictions(report: TaskReportModel, task: TaskFacts) -> list[str]:
    """Return why ``report``'s success is not supported by its attached evidence (empty: supported).

    Failures are always accepted (a failure needs no proof); a success of an operational task
    needs ``evidence['tool_journal']`` from the owning robot's tools and ``evidence['world']``
    (what its tools observed), consistent with the claim for ``task`` (what the manager delegated:
    room, HCW, when; :func:`robot_team.rules.grounding.success_problems`).
    """
    if report.status is not TaskStatus.SUCCESS or report.task_type not in OPERATIONAL_TASKS:
        return []
    entries = report.evidence.get('tool_journal')
    if not isinstance(entries, list) or not entries:
        return [f'{report.task_type.value} success reported without its tools\' ground truth']
    journal = []
    for entry in entries:
        if not isinstance(entry, dict) or 'tool' not in entry:
            return ['malformed tool journal in the evidence']
        journal.append(ToolResult(tool=str(entry['tool']), args=dict(entry.get('args') or {}),
                                  ok=bool(entry.get('ok')), output=dict(entry.get('output') or {}),
                                  error=str(entry.get('error') or '')))
    if TASK_OWNER.get(report.task_type) != role_name(report.robot):
        return [f'{report.robot} does not own {report.task_type.value}']
    world = report.evidence.get('world')
    if not isinstance(world, dict):
        return [f'{report.task_type.value} success reported without what the world showed (evidence: world)']
    claim = BrainReport(status=report.status, issue=report.issue, summary=report.summary, data=report.data)
    return success_problems(report.task_type, claim, journal, task, world)


def prefetched_results(delegation: Delegate) -> list[str]:
    """Return what in ``delegation`` looks like a robot's result fetched by the manager (empty: clean)."""
    found = [f"context key '{key}'" for key in delegation.context if key not in DELEGATION_CONTEXT_KEYS]
    text = delegation.instructions or ''
    found += [f"instructions state '{m.group(0).strip()}'" for m in _RESULT_FIELD.finditer(text)]
    found += [f"instructions give coordinates {m.group(0)}" for m in _COORDINATES.finditer(text)]
    return found


def default_instructions(delegation: Delegate) -> str:
    """Return the plain instructions for ``delegation``'s task (used when stripping pre-fetched results)."""
    who = f' #{delegation.hcw_id}' if delegation.hcw_id else ''
    return {
        'navigation': f'Find HCW{who} and escort them to {delegation.room}.',
        'info_collection': f'Read the badge scan at {delegation.room} and report ID, name, specialty.',
        'display': f'Show the care team of {delegation.room} on its screen.',
    }.get(delegation.task_type.value, '')


def strip_prefetched(delegation: Delegate) -> Delegate:
    """Return ``delegation`` without pre-fetched results (allowed context keys, plain instructions)."""
    context = {k: v for k, v in delegation.context.items() if k in DELEGATION_CONTEXT_KEYS}
    instructions = delegation.instructions
    if _RESULT_FIELD.search(instructions or '') or _COORDINATES.search(instructions or ''):
        instructions = default_instructions(delegation)
    return delegation.model_copy(update={'context': context, 'instructions': instructions})


def all_lost_refusal(robot: str, robots: Iterable[str], lost_robots: Iterable[str]) -> str:
    """Return why a delegation to ``robot`` (a robot or a role) must wait: every robot it may go to is lost ('' if not).

    :func:`lost_robot_refusal` of the first of them, when all are (:func:`role_robots`).
    """
    lost = [lost_robot_refusal(r, lost_robots) for r in role_robots(robot, robots)]
    return lost[0] if lost and all(lost) else ''


def lost_robot_refusal(robot: str, lost_robots: Iterable[str]) -> str:
    """Return why a delegation to ``robot`` must wait ('' if it may go): the robot is lost (team/liveness).

    A goal sent to a robot whose node is gone is never answered; the manager waits until the
    supervisor says the robot is back (restarted or reconnected). Shared by the manager's guard and
    its LLM offer (a lost robot's task types are not offered: guards at decode time).
    """
    if robot in set(lost_robots):
        return (f'{robot} is lost (its node stopped answering); wait until the supervisor says it is back, '
                f'or escalate')
    return ''
