"""The strict criteria: each published cell held to the run's ground truth, where the paper's text allows.

A strict cell starts from its published cell and can only lose points (:func:`_stricter`): each
rule (the ``strict_*`` functions, :data:`STRICT_RULES`) names in its docstring the published
definition it extends, and checks it against :mod:`robot_team.evaluation.truth` (what the
simulator, the RTLS and the staff directory show). Tool usage has no strict rule.
"""

from __future__ import annotations

from typing import Callable

from robot_team.evaluation.rubric.evidence import find_item, normalized
from robot_team.evaluation.rubric.published import first_decision, score_view
from robot_team.evaluation.rubric.record import MANAGER, Record, as_task_type, view_records
from robot_team.evaluation.rubric.scores import ROBOT_METRICS, Cell, Metric, ReflectionJudge, ViewScore
from robot_team.evaluation.truth import RunTruth, screen_members, team_differences
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.reports import OPERATIONAL_TASKS, TaskType


StrictRule = Callable[[Record, TaskType | None, str, RunTruth], list[tuple[float, str]]]
"""A strict rule: ``(record of the view, task type, view, truth) -> findings`` ((score, reason) pairs)."""


def _stricter(cell: Cell, findings: list[tuple[float, str]]) -> Cell:
    """Return ``cell`` lowered to its worst strict finding: a strict cell never scores above its published one.

    An N/A cell stays N/A. Findings as bad as the published score add their reasons to it.
    """
    if cell.score is None or not findings:
        return cell
    worst = min(score for score, _ in findings)
    reasons = '; '.join(dict.fromkeys(reason for score, reason in findings if score == worst))
    if worst < cell.score:
        return cell.model_copy(update={'score': worst, 'reason': f'world: {reasons}'})
    if worst == cell.score and worst < 1.0:
        return cell.model_copy(update={'reason': f'{cell.reason}; world: {reasons}'})
    return cell


def strict_delegation_accuracy(rec: Record, task_type: TaskType, view: str,
                               truth: RunTruth) -> list[tuple[float, str]]:
    """Delegation accuracy (strict): the right robot, for the patient's room, with a suitable HCW.

    Published (Table II): each task is delegated to the robot whose role it is (0.5 when the
    manager did part of the robot's work). The paper's task is to escort *the patient's*
    physician to *the patient's* room, so the strict cell also scores 0 for a delegation
    naming another room than the patient's, and, for navigation, an HCW who is not suitable at
    the decision (:meth:`RunTruth.hcw_choice`: not in the directory, not of the patient's
    required specialty, or off shift; a human's ``reassign`` choice is suitable). Attempted view:
    every delegation request; floor view: every delegation that went out.
    """
    kind = EventKind.DELEGATION_REQUESTED if view == 'attempted' else EventKind.DELEGATION
    findings = []
    for _, event in rec.kind(kind, actor=MANAGER):
        d = event.data
        if as_task_type(d.get('task_type')) is not task_type:
            continue
        label = d.get('task_id') or f'the request at {event.stamp_s:.1f} s'
        room = str(d.get('room') or '')
        if room and room != truth.patient.room:
            findings.append((0.0, f"{label} names room {room}; the patient is in {truth.patient.room}"))
        if task_type is TaskType.NAVIGATION:
            choice = truth.hcw_choice(str(d.get('hcw_id') or ''), event.stamp_s)
            if not choice.suitable:
                findings.append((0.0, f'{label}: {choice.reason}'))
    return findings


def strict_completion_judgment(rec: Record, task_type: TaskType, view: str,
                               truth: RunTruth) -> list[tuple[float, str]]:
    """Task completion judgment (strict): 0 when the manager judged a success that the world contradicts.

    Published (Table II): the manager judges each report's outcome correctly (the report's
    grounded status). Strict: a judgment of ``success`` must also match what the world shows
    (:class:`~robot_team.evaluation.truth.TaskTruth`): the HCW arrived, the badge and check-in
    are real, the screen shows the care team.
    """
    findings = []
    for task in rec.of_type(task_type):
        world = truth.task(task.task_id)
        if task.judged == 'success' and world is not None and not world.succeeded:
            findings.append((0.0, f'{task.task_id} judged a success; {world.reason}'))
    return findings


def strict_issue_handling(rec: Record, task_type: TaskType, view: str, truth: RunTruth) -> list[tuple[float, str]]:
    """Issue handling (strict): the recovery chosen after a navigation failure must be one that could work.

    Published (Table II): right after a failure report the manager proposes an alternative or
    escalates. Strict: an alternative counts only if the HCW proposed was available and suitable
    at the decision (:attr:`HcwChoice.available`: of the required specialty and answering pages,
    or a human's choice); proposing another one (a busy or off-shift HCW, another specialty)
    scores 0, whether or not an available HCW existed (the reason says which did, or that only
    escalation could help). Escalating scores as published (a person can always decide). The
    availability is what the record showed then: the RTLS's answers, the pages delivered, else
    the scenario's staff data.
    """
    findings = []
    for task in rec.of_type(TaskType.NAVIGATION):
        if not task.reported or task.status != 'failure' or task.failure_at is None:
            continue
        _, event = first_decision(rec, task.failure_at, view, task.task_id)
        if event is None or event.kind not in (EventKind.DELEGATION_REQUESTED.value, EventKind.DELEGATION.value) \
                or as_task_type(event.data.get('task_type')) is not TaskType.NAVIGATION:
            continue
        hcw = str(event.data.get('hcw_id', ''))
        if not hcw or hcw == task.hcw_id:
            continue   # the published cell already scores a retry of the same HCW 0
        choice = truth.hcw_choice(hcw, event.stamp_s)
        if choice.available:
            continue
        others = truth.alternatives(event.stamp_s, excluding={task.hcw_id, hcw})
        could = (f"#{', #'.join(others)} {'was' if len(others) == 1 else 'were'} available" if others
                 else 'no other HCW of the specialty was available: only an escalation could help')
        findings.append((0.0, f'after {task.task_id} failed the manager proposed #{hcw}, a recovery that could '
                         f'not work ({choice.reason}); {could}'))
    return findings


def _report_claims(task_type: TaskType, data: dict, world) -> list[str]:
    """Return what a success report's ``data`` states that the world contradicts (IDs, names, care team)."""
    wrong = []
    if task_type is TaskType.NAVIGATION:
        hcw = find_item(data, 'id')
        if hcw is not None and normalized(hcw) != normalized(world.hcw_id):
            wrong.append(f'reports HCW {hcw!r}; the world shows #{world.hcw_id} escorted')
    elif task_type is TaskType.INFO_COLLECTION:
        record = world.staff_record
        if record is None:
            return wrong
        for item, key in (('id', 'hcw_id'), ('name', 'name')):
            value = find_item(data, item)
            if value is not None and normalized(value) != normalized(getattr(record, key)):
                wrong.append(f'reports {key} {value!r}; the directory says {getattr(record, key)!r}')
        specialty = find_item(data, 'specialty')
        if specialty is not None \
                and normalized(specialty) not in (normalized(record.specialty), normalized(record.role)):
            wrong.append(f'reports specialty {specialty!r}; the directory says {record.specialty!r}')
    else:
        members = find_item(data, 'members')
        if members is not None:
            problems = team_differences(screen_members(members), world.care_team)
            if problems:
                wrong.append('reports a care team other than the directory\'s: ' + '; '.join(problems))
    return wrong


def strict_local_reasoning(rec: Record, task_type: TaskType, view: str, truth: RunTruth) -> list[tuple[float, str]]:
    """Local reasoning (strict): a success report's content must be what the world shows.

    Published (Table II): the report holds what the task needs (location and path; ID, name
    and specialty; the care team and a layout built from it), grounded in the robot's own tool
    output. Strict: a success report scores 0 when the world contradicts the task's success, or
    when an item it states is not the world's: the HCW escorted (navigation), the ID, name and
    specialty of the HCW whose badge was scanned, as the directory gives them (info collection),
    the care team as the directory gave it at the report, compared by ID, name and role
    (display): made-up or placeholder entries never match.
    """
    findings = []
    for task in rec.of_type(task_type):
        report, world = task.report, truth.task(task.task_id)
        if report is None or report.get('status') != 'success' or world is None:
            continue
        if not world.succeeded:
            findings.append((0.0, f'{task.task_id} reports a success; {world.reason}'))
            continue
        findings += [(0.0, f'{task.task_id} {claim}') for claim in
                     _report_claims(task_type, report.get('data') or {}, world)]
    return findings


def strict_report_compliance(rec: Record, task_type: TaskType, view: str,
                             truth: RunTruth) -> list[tuple[float, str]]:
    """Report compliance (strict): a report's explicit "no issue" must be true.

    Published (Table II): each report states its issue status explicitly ("issue reported" or
    "no issue"). Strict: a ``success`` report ("no issue") scores 0 when the world contradicts the
    task's success.
    """
    findings = []
    for task in rec.of_type(task_type):
        report, world = task.report, truth.task(task.task_id)
        if report is not None and report.get('status') == 'success' and world is not None and not world.succeeded:
            findings.append((0.0, f'{task.task_id} states no issue; {world.reason}'))
    return findings


def strict_reflection_quality(rec: Record, task_type: TaskType | None, view: str,
                              truth: RunTruth) -> list[tuple[float, str]]:
    """Reflection quality (strict): an outcome the reflection states as a success must be one in the world.

    Published (Table II): the manager's reflection covers the outcomes of all three tasks,
    recovery attempts and lessons (0.5 for an outcome that differs from the record). Strict: an
    outcome stated as ``success`` whose last task of that type the world contradicts scores 0.5
    as well.
    """
    findings = []
    reflections = [e.data for _, e in rec.kind(EventKind.REFLECTION)]
    if view == 'attempted':
        reflections += [e.data.get('reflection') for _, e in rec.kind(EventKind.REFLECTION_REJECTED)]
    for reflection in reflections:
        for outcome in (reflection or {}).get('task_outcomes') or []:
            kind = as_task_type(outcome.get('task_type')) if isinstance(outcome, dict) else None
            tasks = rec.of_type(kind) if kind in OPERATIONAL_TASKS else []
            world = truth.task(tasks[-1].task_id) if tasks else None
            if outcome.get('status') == 'success' and world is not None and not world.succeeded:
                findings.append((0.5, f'outcome of {kind.value} says success; {world.reason}'))
    return findings


STRICT_RULES: dict[Metric, StrictRule] = {
    Metric.DELEGATION_ACCURACY: strict_delegation_accuracy,
    Metric.COMPLETION_JUDGMENT: strict_completion_judgment,
    Metric.ISSUE_HANDLING: strict_issue_handling,
    Metric.REFLECTION_QUALITY: strict_reflection_quality,
    Metric.LOCAL_REASONING: strict_local_reasoning,
    Metric.REPORT_COMPLIANCE: strict_report_compliance,
}
"""The strict rule of each metric (tool usage has none: the tools called are facts of the record)."""


def score_strict_view(events: list[TeamEventModel], view: str, truth: RunTruth, *,
                      judge: ReflectionJudge | None = None, published: ViewScore | None = None,
                      _records: tuple[Record, Record] | None = None) -> ViewScore:
    """Score ``view`` under the strict criteria: each published cell lowered by its strict rule (:data:`STRICT_RULES`).

    ``published``: the view's published score, if already computed (else it is scored here).

    Raises
    ------
    ValueError
        If ``view`` is not ``'attempted'`` or ``'floor'``.
    """
    records = _records or view_records(events, view)
    published = published or score_view(events, view, judge=judge, _records=records)
    rec, robots = records
    cells = []
    for cell in published.cells:
        rule = STRICT_RULES.get(cell.metric)
        if rule is None or cell.score is None:
            cells.append(cell)
            continue
        cells.append(_stricter(cell, rule(robots if cell.metric in ROBOT_METRICS else rec, cell.task, view, truth)))
    return ViewScore(view=view, criteria='strict', cells=cells)
