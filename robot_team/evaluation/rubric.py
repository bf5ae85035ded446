"""Score one run on the published 17-point process rubric, from its event record alone.

The rubric is Table II of Bai, Ding, Taylor, *From Virtual Agents to Robot Teams: A Multi-Robot
Framework Evaluation in High-Stakes Healthcare Context*. Every cell scores 0, 0.5 or 1 (or N/A)
with a short reason:

- manager level, per task (navigation, info collection, display): delegation accuracy, task
  completion judgment, issue handling (navigation only; N/A for the other two), plus reflection
  quality once per run;
- robot level, per task: tool usage, local reasoning, report compliance.

3 tasks x 6 metrics - 2 N/A + 1 reflection = 17 points. Issue handling is also N/A when no
navigation attempt failed (nothing to handle); ``max_points`` then drops to 16. A task type that a
human's ``abort`` closed before the workflow allowed it to start (its earlier step had not
succeeded: the gate's order rule, :func:`robot_team.workflow.delegation_refusal`, at the decision)
was never the manager's to delegate nor its robot's to do: its cells are N/A too
(:func:`closed_before_start`), so an escalated run is scored on the work it could have done.

Two views of the same record:

- ``attempted``: what the brains tried, comparable with the published hand scores. Attempts the
  guards refused (``tool_refused``, ``delegation_refused``, ``workflow_violation``,
  ``false_completion``, ``reflection_rejected``, ``report_rejected``) count against the cell
  they concern. What the protocol brain decided as a fallback (the LLM's endpoint down, or a
  takeover after a stall; ``source: fallback``, :mod:`robot_team.decisions`) is left out of the
  cells of the level it stood in for: the LLM did not decide it. A manager cell keeps a robot's
  report written by that robot's fallback (the manager's LLM still had to judge and handle it),
  and a robot cell keeps a delegation the manager's fallback made.
- ``floor``: what happened on the floor after the guards (refused attempts never reached ROS).

Two criteria, each scored in both views:

- ``published``: the paper's criteria as written (the cells above), for an honest comparison with
  the published hand scores;
- ``strict``: the same cells held to the ground truth of :mod:`robot_team.evaluation.truth` (what
  the simulator, the RTLS and the staff directory show), where the paper's text allows: delegation
  accuracy also checks the room and the HCW's specialty and availability, issue handling checks
  that the chosen recovery could work, completion judgment, local reasoning, report compliance
  and reflection quality check content against the world. A strict cell starts from its published
  cell and can only lose points (:func:`_stricter`); each rule's docstring names the published
  definition it extends (the ``strict_*`` functions). Tool usage is the same in both.

Pure functions over :class:`~robot_team.events.TeamEventModel` lists in record order; no ROS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field, computed_field

from robot_team.brains.base import BrainReport
from robot_team.catalog import KEY_TOOLS, TASK_OWNER, TOOL_OWNERS, RubricUse, rubric_tool
from robot_team.decisions import count_decisions, count_takeovers, without_fallback
from robot_team.evaluation.truth import FalseSuccess, RunTruth, false_successes, load_run, screen_members, \
    team_differences
from robot_team.events import EventKind, TeamEventModel
from robot_team.grounding import contradictions
from robot_team.names import Robot, role_name
from robot_team.run_report import GUARD_KINDS
from robot_team.reports import OPERATIONAL_TASKS, TaskStatus, TaskType
from robot_team.tools.base import ToolResult
from robot_team.workflow import TaskOutline, delegation_refusal

MANAGER = Robot.MANAGER.value
RUBRIC_POINTS = 17
"""Points of the published rubric for one run (max_points when every cell applies)."""

View = Literal['attempted', 'floor']
VIEWS: tuple[str, ...] = ('attempted', 'floor')
Criteria = Literal['published', 'strict']
CRITERIA: tuple[str, ...] = ('published', 'strict')
"""``published``: the paper's criteria as written; ``strict``: the same held to the run's ground truth."""
CRITERIA_LABELS = {'published': 'published criteria', 'strict': 'strict (ground truth)'}


class Metric(str, Enum):
    """The seven process metrics of the published rubric."""

    DELEGATION_ACCURACY = 'delegation_accuracy'
    COMPLETION_JUDGMENT = 'completion_judgment'
    ISSUE_HANDLING = 'issue_handling'
    REFLECTION_QUALITY = 'reflection_quality'
    TOOL_USAGE = 'tool_usage'
    LOCAL_REASONING = 'local_reasoning'
    REPORT_COMPLIANCE = 'report_compliance'


METRIC_LABELS: dict[Metric, str] = {
    Metric.DELEGATION_ACCURACY: 'Delegation accuracy',
    Metric.COMPLETION_JUDGMENT: 'Task completion judgment',
    Metric.ISSUE_HANDLING: 'Issue handling',
    Metric.REFLECTION_QUALITY: 'Reflection quality',
    Metric.TOOL_USAGE: 'Tool usage',
    Metric.LOCAL_REASONING: 'Local reasoning',
    Metric.REPORT_COMPLIANCE: 'Report compliance',
}
MANAGER_METRICS = (Metric.DELEGATION_ACCURACY, Metric.COMPLETION_JUDGMENT, Metric.ISSUE_HANDLING)
ROBOT_METRICS = (Metric.TOOL_USAGE, Metric.LOCAL_REASONING, Metric.REPORT_COMPLIANCE)

PUBLISHED_REFERENCE: dict[str, Any] = {
    'source': ('Bai, Ding, Taylor, "From Virtual Agents to Robot Teams: A Multi-Robot Framework Evaluation '
               'in High-Stakes Healthcare Context", Tables III and IV'),
    'model': 'gpt-4o-2024-08-06',
    'runs_per_condition': 5,
    'success_rate': {'baseline': 0.4529, 'kb': 0.7294},
    'cost_per_run_usd': {'baseline': 0.0772, 'kb': 0.1536},
    'metric_means': {
        'baseline': {'delegation_accuracy': 0.333, 'completion_judgment': 0.933, 'issue_handling': 0.0,
                     'reflection_quality': 0.3, 'tool_usage': 0.333, 'local_reasoning': 0.4,
                     'report_compliance': 0.467},
        'kb': {'delegation_accuracy': 0.733, 'completion_judgment': 0.967, 'issue_handling': 0.0,
               'reflection_quality': 0.8, 'tool_usage': 0.667, 'local_reasoning': 0.733,
               'report_compliance': 0.767},
    },
}
"""The published figures (hand-scored, 5 runs per condition): the reference row of every output."""

TASK_PREFIX = {'nav': TaskType.NAVIGATION, 'info': TaskType.INFO_COLLECTION, 'display': TaskType.DISPLAY,
               'reflection': TaskType.REFLECTION}

PREFETCH_KEYS: dict[TaskType, frozenset[str]] = {
    TaskType.NAVIGATION: frozenset({'hcw_location', 'location', 'path', 'staff', 'door', 'route'}),
    TaskType.INFO_COLLECTION: frozenset({'badge_scan', 'badge_id', 'name', 'specialty', 'staff_record'}),
    TaskType.DISPLAY: frozenset({'members', 'care_team', 'layout'}),
}
"""Delegation context keys that carry a task's own result (a pre-fetched result passed by the manager)."""

PLACEHOLDERS = ('tbd', 'todo', 'placeholder', 'n/a', '...', 'lorem', 'xxx', 'none', '-')
PLACEHOLDER_FRAGMENTS = ('lorem ipsum', 'placeholder', '[insert', '<insert', 'to be determined', 'tbd')


class Cell(BaseModel):
    """One rubric cell: a metric for a task (or the run), its score and why."""

    metric: Metric
    task: TaskType | None = Field(None, description='None for reflection quality (once per run).')
    score: float | None = Field(description='0, 0.5 or 1; None when the cell does not apply (N/A).')
    reason: str


class ViewScore(BaseModel):
    """The rubric scored in one view (``attempted`` or ``floor``) under one criteria (``published`` or ``strict``)."""

    view: View
    criteria: Criteria = 'published'
    cells: list[Cell]

    @computed_field
    @property
    def points(self) -> float:
        """Sum of the applicable cells."""
        return float(sum(c.score for c in self.cells if c.score is not None))

    @computed_field
    @property
    def max_points(self) -> float:
        """Number of applicable cells (17 on the published scenario)."""
        return float(sum(1 for c in self.cells if c.score is not None))

    @computed_field
    @property
    def success_rate(self) -> float:
        """``points / max_points`` (points/17 on the published scenario)."""
        return self.points / self.max_points if self.max_points else 0.0

    def cell(self, metric: Metric | str, task: TaskType | str | None = None) -> Cell:
        """Return the cell of ``metric`` for ``task`` (None: the reflection).

        Raises
        ------
        KeyError
            If there is no such cell.
        """
        metric, task = Metric(metric), (TaskType(task) if task is not None else None)
        for cell in self.cells:
            if cell.metric is metric and cell.task == task:
                return cell
        raise KeyError(f'no cell {metric.value} for {task}')

    def metric_means(self) -> dict[str, float | None]:
        """Return each metric's mean over its applicable cells (None if none applies)."""
        means: dict[str, float | None] = {}
        for metric in Metric:
            scores = [c.score for c in self.cells if c.metric is metric and c.score is not None]
            means[metric.value] = sum(scores) / len(scores) if scores else None
        return means


class LLMUsage(BaseModel):
    """LLM requests, tokens and cost of a run (``llm_*`` events; zero for the protocol brain)."""

    requests: int = 0
    replies: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = Field(0, description='Prompt tokens the endpoint took from its prompt cache (its '
                                      "usage's ``prompt_tokens_details.cached_tokens``; 0 where it reports none).")
    completion_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = Field(default_factory=list)
    cost_by_robot: dict[str, float] = Field(default_factory=dict)
    decisions_offered: int = Field(0, description='Requests that recorded what they offered (robot_team.llm.decoding).')
    choices_offered: int = Field(0, description='Choices offered, summed over those requests.')

    @property
    def choices_per_decision(self) -> float | None:
        """Mean number of choices a model was offered per decision (None: no request recorded its offer)."""
        return self.choices_offered / self.decisions_offered if self.decisions_offered else None


class RunScore(BaseModel):
    """One run scored: both views under both criteria, the false successes, LLM usage and guard counts."""

    run: str = ''
    outcome: str = ''
    attempted: ViewScore = Field(description='Published criteria, attempted view.')
    floor: ViewScore = Field(description='Published criteria, floor view.')
    strict_attempted: ViewScore | None = Field(None, description='Strict criteria, attempted view (None: scored '
                                               'without the ground truth, from the events alone).')
    strict_floor: ViewScore | None = Field(None, description='Strict criteria, floor view (None: as above).')
    false_successes: list[FalseSuccess] | None = Field(None, description='Successes the team claimed that the '
                                                       'world contradicts (None: scored without the ground truth).')
    world_success: bool | None = Field(None, description='Whether the world shows the onboarding done (None: '
                                       'without the ground truth).')
    usage: LLMUsage
    guards: dict[str, int] = Field(default_factory=dict)
    decisions: dict[str, int] = Field(default_factory=dict, description='Decisions per source (llm, protocol, '
                                      'fallback, human).')
    takeovers: int = Field(0, description='Times the protocol brain took over a role after a stall.')
    judge: str = 'structural'

    def view(self, name: str, criteria: str = 'published') -> ViewScore | None:
        """Return the ``attempted`` or ``floor`` view under ``criteria`` (None: strict without the ground truth).

        Raises
        ------
        ValueError
            If ``name`` or ``criteria`` is unknown.
        """
        if name not in VIEWS:
            raise ValueError(f"unknown view '{name}': expected one of {', '.join(VIEWS)}")
        if criteria not in CRITERIA:
            raise ValueError(f"unknown criteria '{criteria}': expected one of {', '.join(CRITERIA)}")
        return getattr(self, name if criteria == 'published' else f'strict_{name}')


ReflectionJudge = Callable[[dict, dict], tuple[float, str]]
"""An optional judge of a reflection's content: ``(reflection, record summary) -> (score, reason)``."""


# --- The record, indexed ---------------------------------------------------------------------

@dataclass
class _Task:
    task_id: str
    task_type: TaskType
    robot: str = ''
    hcw_id: str = ''
    delegated_at: int | None = None
    report_at: int | None = None
    report: dict | None = None
    judged_at: int | None = None
    judged: str | None = None
    false_completion: TeamEventModel | None = None
    rejected: list[TeamEventModel] = field(default_factory=list)
    tools_called: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """The published report's status; 'failure' without a valid report."""
        return (self.report or {}).get('status') or 'failure'

    @property
    def reported(self) -> bool:
        return self.report is not None or bool(self.rejected) or self.false_completion is not None

    def robot_or_owner(self) -> str:
        """The robot the task went to (its owner if no delegation was recorded)."""
        return self.robot or TASK_OWNER[self.task_type]

    @property
    def failure_at(self) -> int | None:
        """Index from which the manager knew of the outcome (judgment, else the report)."""
        return self.judged_at if self.judged_at is not None else self.report_at


class _Record:
    """The events of one run, indexed by task."""

    def __init__(self, events: list[TeamEventModel]):
        self.events = events
        self.tasks: dict[str, _Task] = {}
        self.refusals: list[TeamEventModel] = []
        for index, event in enumerate(events):
            self._add(index, event)

    def _task(self, task_id: str, task_type: str | None = None) -> _Task | None:
        if not task_id:
            return None
        if task_id not in self.tasks:
            kind = _task_type(task_type) or _task_type(TASK_PREFIX.get(task_id.rsplit('-', 1)[0]))
            if kind is None or kind is TaskType.REFLECTION:
                return None
            self.tasks[task_id] = _Task(task_id, kind)
        return self.tasks[task_id]

    def _add(self, index: int, event: TeamEventModel) -> None:
        d, kind = event.data, event.kind
        if kind == EventKind.DELEGATION.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.robot, task.hcw_id = d.get('robot', event.target), str(d.get('hcw_id', ''))
                task.delegated_at = index
        elif kind == EventKind.TASK_REPORT.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.report, task.report_at = d, index
        elif kind == EventKind.JUDGMENT.value:
            task = self._task(d.get('task_id', ''), d.get('task_type'))
            if task is not None:
                task.judged, task.judged_at = d.get('judged_status'), index
        elif kind == EventKind.FALSE_COMPLETION.value:
            task = self._task(d.get('task_id') or event.target)
            if task is not None:
                task.false_completion = event
        elif kind == EventKind.REPORT_REJECTED.value:
            task = self._task(d.get('task_id') or event.target)
            if task is not None:
                task.rejected.append(event)
        elif kind == EventKind.TOOL_CALL.value:
            task = self._task(d.get('task_id', ''))
            if task is not None and event.actor == task.robot_or_owner():
                task.tools_called.append(event.target)
        elif kind == EventKind.TOOL_REFUSED.value:
            self.refusals.append(event)

    def of_type(self, task_type: TaskType) -> list[_Task]:
        """Return the tasks of ``task_type`` in the order they appear."""
        return [t for t in self.tasks.values() if t.task_type is task_type]

    def kind(self, *kinds: EventKind, actor: str | None = None) -> list[tuple[int, TeamEventModel]]:
        """Return ``(index, event)`` of the given kinds (and actor), in record order."""
        values = {k.value for k in kinds}
        return [(i, e) for i, e in enumerate(self.events)
                if e.kind in values and (actor is None or e.actor == actor)]


def _task_type(value) -> TaskType | None:
    if isinstance(value, TaskType):
        return value
    try:
        return TaskType(value)
    except ValueError:
        return None


def _tool_owner(event: TeamEventModel) -> str | None:
    return event.data.get('owner') or TOOL_OWNERS.get(event.target)


def _caller(event: TeamEventModel) -> str:
    """The role of whoever called the refused tool (a fleet's robot counts as its role)."""
    return role_name(event.data.get('caller') or event.actor)


# --- Scoring helpers ---------------------------------------------------------------------------

def _cell(metric: Metric, task: TaskType | None, findings: list[tuple[float, str]], ok: str) -> Cell:
    """Return the worst finding (reasons of equally bad findings joined), or 1 with ``ok``."""
    if not findings:
        return Cell(metric=metric, task=task, score=1.0, reason=ok)
    worst = min(score for score, _ in findings)
    reasons = list(dict.fromkeys(reason for score, reason in findings if score == worst))
    return Cell(metric=metric, task=task, score=worst, reason='; '.join(reasons))


def _norm(value) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    return str(value).strip().lower()


def _leaves(value) -> set:
    """Return the normalized scalar leaves of a JSON value."""
    out: set = set()
    if isinstance(value, dict):
        for item in value.values():
            out |= _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            out |= _leaves(item)
    elif value is not None and value != '':
        out.add(_norm(value))
    return out


def _journal(report: dict) -> list[dict]:
    return list((report.get('evidence') or {}).get('tool_journal') or [])


def _journal_leaves(journal: list[dict], tools: tuple[str, ...] | None = None) -> set:
    out: set = set()
    for entry in journal:
        if tools is None or entry.get('tool') in tools:
            out |= _leaves(entry.get('output'))
            if entry.get('error'):
                out.add(_norm(entry['error']))
    return out


def _last_ok_output(journal: list[dict], tool: str) -> dict | None:
    for entry in reversed(journal):
        if entry.get('tool') == tool and entry.get('ok'):
            return entry.get('output') or {}
    return None


def _grounded(value, journal_leaves: set) -> bool:
    leaves = _leaves(value)
    return bool(leaves) and leaves <= journal_leaves


def _failure_supported(task_type: TaskType, journal: list[dict], data: dict) -> bool:
    """Whether the tools' ground truth shows a problem (so a failure report is grounded)."""
    if any(not entry.get('ok') for entry in journal):
        return True
    try:
        results = [ToolResult(tool=e.get('tool', ''), args=e.get('args') or {}, ok=bool(e.get('ok')),
                              output=e.get('output') or {}, error=e.get('error', '')) for e in journal]
        return bool(contradictions(task_type, BrainReport(status=TaskStatus.SUCCESS, data=data), results))
    except (KeyError, TypeError, IndexError, ValueError):
        return False


# --- Manager level -----------------------------------------------------------------------------

def _requests(rec: _Record, task_type: TaskType) -> list[tuple[int, TeamEventModel]]:
    return [(i, e) for i, e in rec.kind(EventKind.DELEGATION_REQUESTED, actor=MANAGER)
            if _task_type(e.data.get('task_type')) is task_type]


def _prefetched(request: TeamEventModel, task_type: TaskType) -> list[str]:
    context = request.data.get('context') or {}
    return sorted(k for k in context if k in PREFETCH_KEYS[task_type]) if isinstance(context, dict) else []


def _handled_at(rec: _Record, task: _Task, view: str) -> int | None:
    """Return the index at which failed navigation ``task`` was handled (or its deadline missed)."""
    kinds = ({EventKind.DELEGATION_REQUESTED.value, EventKind.ESCALATION_REQUESTED.value} if view == 'attempted'
             else {EventKind.DELEGATION.value, EventKind.ESCALATION.value})
    for index in range(task.failure_at + 1, len(rec.events)):
        event, d = rec.events[index], rec.events[index].data
        if event.kind == EventKind.DEADLINE_MISSED.value and d.get('task_id') == task.task_id:
            return index
        if event.kind not in kinds:
            continue
        if event.kind in (EventKind.ESCALATION_REQUESTED.value, EventKind.ESCALATION.value):
            if d.get('task_id') == task.task_id:
                return index
        elif _task_type(d.get('task_type')) is TaskType.NAVIGATION and str(d.get('hcw_id', '')) != task.hcw_id:
            return index
    return None


def _pending_failure_windows(rec: _Record, view: str) -> list[tuple[int, int]]:
    """Return ``(from, to)`` index windows in which a navigation failure awaited handling."""
    windows = []
    for task in rec.of_type(TaskType.NAVIGATION):
        if task.failure_at is None or task.status != 'failure':
            continue
        end = _handled_at(rec, task, view)
        windows.append((task.failure_at, end if end is not None else len(rec.events)))
    return windows


def _role_misalignments(rec: _Record, task_type: TaskType) -> list[tuple[int, TeamEventModel]]:
    """Return the manager's pre-fetch guard events (results put into a ``task_type`` delegation)."""
    out = []
    for index, event in rec.kind(EventKind.WORKFLOW_VIOLATION):
        delegation = event.data.get('delegation') or {}
        if event.data.get('who') == MANAGER and _task_type(delegation.get('task_type')) is task_type:
            out.append((index, event))
    return out


def delegation_accuracy(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score whether ``task_type`` was delegated to the robot that owns it (0.5: the manager pre-fetched)."""
    owner, findings = TASK_OWNER[task_type], []
    metric = Metric.DELEGATION_ACCURACY
    requests = _requests(rec, task_type)
    stripped = _role_misalignments(rec, task_type)
    if view == 'attempted':
        for _, request in requests:
            robot = request.data.get('robot', request.target)
            if role_name(robot) != owner:
                findings.append((0.0, f'asked {robot} to do {task_type.value} (owner: {owner})'))
        for event in rec.refusals:
            if _caller(event) == MANAGER and _tool_owner(event) == owner:
                findings.append((0.5, f"the manager also called {owner}'s tool {event.target} itself (refused)"))
        for _, event in stripped:
            found = '; '.join(event.data.get('found') or []) or event.reason
            findings.append((0.5, f'the manager passed a pre-fetched result to {owner} ({found}; removed)'))
        windows = _pending_failure_windows(rec, view)
        for index, event in rec.kind(EventKind.WORKFLOW_VIOLATION):
            if event.data.get('who') == MANAGER or _task_type(event.data.get('task_type')) is not task_type:
                continue
            if not any(a < index <= b for a, b in windows):
                findings.append((0.5, f'delegated out of workflow order first (refused: {event.reason})'))
        sent = requests
    else:
        delegated = [t for t in rec.of_type(task_type) if t.delegated_at is not None]
        if not delegated:
            return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} was never delegated')
        for task in delegated:
            if role_name(task.robot) != owner:
                findings.append((0.0, f'{task.task_id} went to {task.robot} (owner: {owner})'))
        # the request each delegation went out from: the latest one of that type before it; the
        # manager's guard strips pre-fetched results between the two
        sent = []
        for task in delegated:
            before = [(i, r) for i, r in requests if i < task.delegated_at]
            if before and not any(before[-1][0] < i < task.delegated_at for i, _ in stripped):
                sent.append(before[-1])
    if not requests:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} was never delegated')
    for _, request in sent:
        keys = _prefetched(request, task_type)
        if keys:
            findings.append((0.5, f"the manager passed a pre-fetched result to {owner} ({', '.join(keys)})"))
    return _cell(metric, task_type, findings, f'delegated to {owner}, the owner, with no pre-fetched result')


def completion_judgment(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score the manager's judgment of each report of ``task_type`` against the grounded status."""
    metric, findings = Metric.COMPLETION_JUDGMENT, []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value} to judge')
    for task in tasks:
        if task.judged is None:
            findings.append((0.0, f'{task.task_id} ({task.status}) was never judged'))
        elif task.judged != task.status:
            findings.append((0.0, f'{task.task_id} judged a {task.judged}, but it was a {task.status}'
                             + (f" ({task.report.get('issue')})" if task.report and task.report.get('issue') else '')))
    successes = [t for t in tasks if t.judged == 'success' and t.status == 'success' and t.judged_at is not None]
    if successes:
        first = min(t.judged_at for t in successes)
        done = next(t for t in successes if t.judged_at == first)
        if view == 'attempted':
            redo = [e for i, e in _requests(rec, task_type) if i > first]
        else:
            redo = [rec.events[t.delegated_at] for t in rec.of_type(task_type)
                    if t.delegated_at is not None and t.delegated_at > first]
        for event in redo:
            why = (event.reason or event.data.get('reason') or '').strip()
            findings.append((0.5, f'redid {task_type.value} after {done.task_id} had clearly succeeded'
                             + (f' (reason given: {why})' if why else ' without a reason')))
    ok = '; '.join(f'{t.task_id} judged a {t.judged}, as grounded' for t in tasks)
    return _cell(metric, task_type, findings, ok)


_DECISIONS_ATTEMPTED = (EventKind.DELEGATION_REQUESTED, EventKind.ESCALATION_REQUESTED, EventKind.REFLECTION,
                        EventKind.REFLECTION_REJECTED, EventKind.EPISODE_FINISHED, EventKind.TOOL_REFUSED)
_DECISIONS_FLOOR = (EventKind.DELEGATION, EventKind.ESCALATION, EventKind.REFLECTION, EventKind.EPISODE_FINISHED)


def _first_decision(rec: _Record, start: int, view: str,
                    task_id: str) -> tuple[int | None, TeamEventModel | None]:
    """Return the manager's first decision after index ``start`` (or ``task_id``'s missed deadline)."""
    kinds = {k.value for k in (_DECISIONS_ATTEMPTED if view == 'attempted' else _DECISIONS_FLOOR)}
    for index in range(start + 1, len(rec.events)):
        event = rec.events[index]
        if event.kind == EventKind.DEADLINE_MISSED.value and event.data.get('task_id') == task_id \
                and event.data.get('deadline', 'issue_handling') == 'issue_handling':
            return index, event
        if event.kind not in kinds:
            continue
        if event.kind == EventKind.ESCALATION.value:
            return index, event
        if event.kind == EventKind.TOOL_REFUSED.value:
            if _caller(event) == MANAGER:
                return index, event
            continue
        if event.actor == MANAGER:
            return index, event
    return None, None


def issue_handling(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score whether, right after each navigation failure, the manager proposed an alternative or escalated."""
    metric = Metric.ISSUE_HANDLING
    if task_type is not TaskType.NAVIGATION:
        return Cell(metric=metric, task=task_type, score=None, reason='applies to navigation only (N/A)')
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason='navigation never reported: no issue handled')
    failed = [t for t in tasks if t.status == 'failure' and t.failure_at is not None]
    if not failed:
        return Cell(metric=metric, task=task_type, score=None, reason='no navigation failure to handle (N/A)')
    findings, handled = [], []
    for task in failed:
        _, event = _first_decision(rec, task.failure_at, view, task.task_id)
        d = event.data if event is not None else {}
        if event is None:
            findings.append((0.0, f'{task.task_id} failed and the manager did nothing after it'))
        elif event.kind == EventKind.DEADLINE_MISSED.value:
            findings.append((0.0, f'{task.task_id} failed and the manager let the issue-handling deadline pass'))
        elif event.kind in (EventKind.ESCALATION_REQUESTED.value, EventKind.ESCALATION.value):
            if d.get('task_id') == task.task_id and d.get('raised_by', MANAGER) == MANAGER:
                handled.append(f'escalated {task.task_id}')
            else:
                findings.append((0.0, f'after {task.task_id} failed: escalation of {d.get("task_id")!r} by '
                                 f'{d.get("raised_by", MANAGER)}, not the manager handling it'))
        elif event.kind in (EventKind.DELEGATION_REQUESTED.value, EventKind.DELEGATION.value):
            hcw = str(d.get('hcw_id', ''))
            if _task_type(d.get('task_type')) is not TaskType.NAVIGATION:
                findings.append((0.0, f'after {task.task_id} failed the manager went on to '
                                 f'{d.get("task_type")} instead of handling the issue'))
            elif hcw and hcw == task.hcw_id:
                findings.append((0.0, f'after {task.task_id} failed the manager retried the same HCW #{hcw}: '
                                 f'no alternative, no escalation'))
            else:
                handled.append(f'proposed alternative HCW #{hcw} for {task.task_id}')
        else:
            findings.append((0.0, f'after {task.task_id} failed the manager did {event.kind} '
                             f'({event.summary}) instead of handling the issue'))
    return _cell(metric, task_type, findings, '; '.join(handled) + ' right after the failure report')


def _placeholder(text: str) -> bool:
    low = str(text).strip().lower()
    return low in PLACEHOLDERS or not low or any(f in low for f in PLACEHOLDER_FRAGMENTS if f != 'tbd') \
        or low.startswith('tbd')


def _reflection_findings(rec: _Record, reflection: dict) -> list[tuple[float, str]]:
    """Check a reflection's structure against the record."""
    findings = []
    outcomes = [o for o in reflection.get('task_outcomes') or [] if isinstance(o, dict)]
    recovery = list(reflection.get('recovery_attempts') or [])
    lessons = list(reflection.get('lessons_learned') or [])
    texts = [o.get('summary', '') for o in outcomes] + recovery + lessons
    if not outcomes and not recovery and not lessons:
        return [(0.0, 'empty reflection')]
    if any(_placeholder(t) for t in texts):
        findings.append((0.0, 'placeholder text instead of content'))
    for name, section in (('task outcomes', outcomes), ('recovery attempts', recovery), ('lessons learned', lessons)):
        if not section:
            findings.append((0.5, f'section {name} missing'))
    covered = {_task_type(o.get('task_type')) for o in outcomes}
    for task_type in OPERATIONAL_TASKS:
        if task_type not in covered:
            findings.append((0.5, f'no outcome for {task_type.value}'))
            continue
        tasks = rec.of_type(task_type)
        claimed = next(o for o in outcomes if _task_type(o.get('task_type')) is task_type).get('status')
        actual = tasks[-1].status if tasks and tasks[-1].reported else 'failure'
        if claimed and claimed != actual:
            findings.append((0.5, f'outcome of {task_type.value} says {claimed}, the record says {actual}'))
    return findings


def _record_summary(rec: _Record) -> dict:
    return {'tasks': [{'task_id': t.task_id, 'task_type': t.task_type.value, 'robot': t.robot, 'hcw_id': t.hcw_id,
                       'status': t.status, 'issue': (t.report or {}).get('issue', '')} for t in rec.tasks.values()],
            'escalations': [{k: e.data.get(k) for k in ('escalation_id', 'task_id', 'raised_by')} | {
                'reason': e.reason} for _, e in rec.kind(EventKind.ESCALATION)],
            'human_decisions': [{k: e.data.get(k) for k in ('escalation_id', 'decision', 'hcw_id')}
                                for _, e in rec.kind(EventKind.HUMAN_DECISION)]}


def reflection_quality(rec: _Record, view: str, judge: ReflectionJudge | None = None) -> Cell:
    """Score the manager's reflection: its own work, all three outcomes, recovery, lessons, no placeholder."""
    metric, findings = Metric.REFLECTION_QUALITY, []
    accepted = [e for _, e in rec.kind(EventKind.REFLECTION)]
    attempts: list[tuple[TeamEventModel, dict | None]] = [(e, e.data) for e in accepted]
    if view == 'attempted':
        for _, event in rec.kind(EventKind.REFLECTION_REJECTED):
            attempts.append((event, event.data.get('reflection')))
    if not attempts:
        return Cell(metric=metric, task=None, score=0.0, reason='no reflection was written')
    for event, reflection in attempts:
        if event.actor != MANAGER:
            findings.append((0.0, f'written by {event.actor}, not by the manager itself'))
        elif reflection is None:
            findings.append((0.5, f'reflection submitted before the workflow allowed it (refused: {event.reason})'))
        else:
            label = 'refused reflection: ' if event.kind == EventKind.REFLECTION_REJECTED.value else ''
            findings += [(s, label + r) for s, r in _reflection_findings(rec, reflection)]
    if judge is not None and accepted and accepted[-1].actor == MANAGER:
        score, reason = judge(accepted[-1].data, _record_summary(rec))
        if score < 1.0:
            findings.append((score, f'LLM judge: {reason}'))
    return _cell(metric, None, findings, 'by the manager: outcomes of all three tasks, recovery attempts and '
                 'lessons learned, no placeholder')


# --- Robot level -------------------------------------------------------------------------------

def tool_usage(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score whether the task's tool was used, and only by its owner."""
    metric, owner, findings = Metric.TOOL_USAGE, TASK_OWNER[task_type], []
    tasks = [t for t in rec.of_type(task_type) if t.delegated_at is not None or t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} never ran: no tool used')
    called = {tool for t in tasks for tool in t.tools_called}
    for task in tasks:
        if not task.tools_called:
            findings.append((0.0, f'{owner} used no tool on {task.task_id}'))
    for tool in KEY_TOOLS[task_type]:
        if tool not in called:
            findings.append((0.0, f'{owner} never called {tool}'))
    if view == 'attempted':
        for event in rec.refusals:
            caller, tool_owner = _caller(event), _tool_owner(event)
            if tool_owner == owner and caller != owner:
                findings.append((0.0, f'{caller} tried {owner}\'s tool {event.target} (refused)'))
            elif caller == owner and tool_owner != owner:
                findings.append((0.0, f'{owner} tried {event.target}, which it does not own (refused)'))
    used = ', '.join(sorted(called))
    return _cell(metric, task_type, findings, f'{used} used by {owner} only')


ALIASES = {
    'location': ('hcw_location', 'location', 'hcw_position', 'position'),
    'path': ('path', 'route', 'planned_path'),
    'id': ('hcw_id', 'id', 'staff_id', 'hcw_number'),
    'name': ('name', 'hcw_name', 'full_name'),
    'specialty': ('specialty', 'role', 'speciality'),
    'members': ('members', 'care_team', 'team', 'entries'),
    'layout': ('layout', 'layout_plan', 'plan'),
}
"""Keys under which a report's free-form ``data`` may hold each item (nested dicts are searched too)."""


def _find(data, item: str):
    """Return the first value under one of ``item``'s aliases in ``data`` (breadth-first), else None."""
    queue = [data]
    while queue:
        node = queue.pop(0)
        if not isinstance(node, dict):
            continue
        for key in ALIASES[item]:
            if node.get(key) not in (None, '', [], {}):
                return node[key]
        queue += [v for v in node.values() if isinstance(v, dict)]
    return None


def _reasoning_items(task_type: TaskType, report: dict) -> list[tuple[str, bool]]:
    """Return each item the report needs and whether it is present and grounded in the tools' output."""
    data, journal = report.get('data') or {}, _journal(report)
    issue, failed = (report.get('issue') or '').strip(), report.get('status') != 'success'
    issue_item = ('issue grounded in the tools' if failed else 'no issue',
                  (bool(issue) and _failure_supported(task_type, journal, data)) if failed else not issue)
    if task_type is TaskType.NAVIGATION:
        location_tool = rubric_tool(RubricUse.LOCATION)
        return [('HCW location', _grounded(_find(data, 'location'), _journal_leaves(journal, (location_tool,)))),
                ('path', _grounded(_find(data, 'path'), _journal_leaves(journal))),
                issue_item]
    if failed:
        return [issue_item]
    if task_type is TaskType.INFO_COLLECTION:
        record = _last_ok_output(journal, rubric_tool(RubricUse.IDENTITY)) or {}

        def same(item, key):
            value = _find(data, item)
            return value is not None and _norm(value) == _norm(record.get(key))
        return [('ID', same('id', 'hcw_id')), ('name', same('name', 'name')),
                ('specialty/role', same('specialty', 'specialty') or same('specialty', 'role'))]
    fetched = _last_ok_output(journal, rubric_tool(RubricUse.CARE_TEAM)) or {}
    members = _find(data, 'members')
    layout = str(_find(data, 'layout') or '')
    names = [m.get('name', '') for m in members or [] if isinstance(m, dict)]
    built = bool(layout.strip()) and bool(names) and all(n and n.lower() in layout.lower() for n in names)
    return [('fetched care team', _grounded(members, _leaves(fetched.get('members')))),
            ('layout plan built from it', built)]


def local_reasoning(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score whether each report holds what the task needs, grounded in the tool output."""
    metric, findings, good = Metric.LOCAL_REASONING, [], []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value}')
    for task in tasks:
        if view == 'attempted' and task.false_completion is not None:
            findings.append((0.0, f'{task.task_id}: claimed success against its own tools '
                             f'({task.false_completion.reason})'))
            continue
        if task.report is None:
            if view == 'attempted':
                findings.append((0.0, f'{task.task_id}: the report did not validate'))
            continue
        items = _reasoning_items(task_type, task.report)
        missing = [name for name, ok in items if not ok]
        if len(missing) == len(items):
            findings.append((0.0, f'{task.task_id}: missing or ungrounded: {", ".join(missing)}'))
        elif missing:
            findings.append((0.5, f'{task.task_id}: missing or ungrounded: {", ".join(missing)}'))
        else:
            good.append(f'{task.task_id}: ' + ', '.join(name for name, _ in items))
    if not good and not findings:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no valid report on {task_type.value}')
    return _cell(metric, task_type, findings, 'grounded in the tools: ' + '; '.join(good))


def report_compliance(rec: _Record, task_type: TaskType, view: str) -> Cell:
    """Score whether every report states its issue status explicitly ('issue reported' or 'no issue')."""
    metric, findings, good = Metric.REPORT_COMPLIANCE, [], []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value}')
    for task in tasks:
        if view == 'attempted':
            for event in task.rejected:
                findings.append((0.0, f'{task.task_id}: report rejected ({event.reason})'))
            if task.false_completion is not None:
                findings.append((0.0, f'{task.task_id}: claimed "no issue" although '
                                 f'{task.false_completion.reason}'))
        report = task.report
        if report is None:
            continue
        status, issue = report.get('status'), (report.get('issue') or '').strip()
        if status == 'failure' and not issue:
            findings.append((0.0, f'{task.task_id}: failure without an issue'))
        elif status not in ('success', 'failure'):
            findings.append((0.0, f'{task.task_id}: no explicit status ({status!r})'))
        else:
            good.append(f'{task.task_id}: ' + (f'issue reported ({issue})' if issue else 'no issue'))
    if not good and not findings:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no valid report on {task_type.value}')
    return _cell(metric, task_type, findings, '; '.join(good))


# --- Strict criteria: the published cells held to the ground truth --------------------------------

StrictRule = Callable[['_Record', TaskType | None, str, RunTruth], list[tuple[float, str]]]
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


def strict_delegation_accuracy(rec: _Record, task_type: TaskType, view: str,
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
        if _task_type(d.get('task_type')) is not task_type:
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


def strict_completion_judgment(rec: _Record, task_type: TaskType, view: str,
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


def strict_issue_handling(rec: _Record, task_type: TaskType, view: str, truth: RunTruth) -> list[tuple[float, str]]:
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
        _, event = _first_decision(rec, task.failure_at, view, task.task_id)
        if event is None or event.kind not in (EventKind.DELEGATION_REQUESTED.value, EventKind.DELEGATION.value) \
                or _task_type(event.data.get('task_type')) is not TaskType.NAVIGATION:
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
        hcw = _find(data, 'id')
        if hcw is not None and _norm(hcw) != _norm(world.hcw_id):
            wrong.append(f'reports HCW {hcw!r}; the world shows #{world.hcw_id} escorted')
    elif task_type is TaskType.INFO_COLLECTION:
        record = world.staff_record
        if record is None:
            return wrong
        for item, key in (('id', 'hcw_id'), ('name', 'name')):
            value = _find(data, item)
            if value is not None and _norm(value) != _norm(getattr(record, key)):
                wrong.append(f'reports {key} {value!r}; the directory says {getattr(record, key)!r}')
        specialty = _find(data, 'specialty')
        if specialty is not None and _norm(specialty) not in (_norm(record.specialty), _norm(record.role)):
            wrong.append(f'reports specialty {specialty!r}; the directory says {record.specialty!r}')
    else:
        members = _find(data, 'members')
        if members is not None:
            problems = team_differences(screen_members(members), world.care_team)
            if problems:
                wrong.append('reports a care team other than the directory\'s: ' + '; '.join(problems))
    return wrong


def strict_local_reasoning(rec: _Record, task_type: TaskType, view: str, truth: RunTruth) -> list[tuple[float, str]]:
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


def strict_report_compliance(rec: _Record, task_type: TaskType, view: str,
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


def strict_reflection_quality(rec: _Record, task_type: TaskType | None, view: str,
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
            kind = _task_type(outcome.get('task_type')) if isinstance(outcome, dict) else None
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
                      _records: tuple[_Record, _Record] | None = None) -> ViewScore:
    """Score ``view`` under the strict criteria: each published cell lowered by its strict rule (:data:`STRICT_RULES`).

    ``published``: the view's published score, if already computed (else it is scored here).

    Raises
    ------
    ValueError
        If ``view`` is not ``'attempted'`` or ``'floor'``.
    """
    records = _records or _view_records(events, view)
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


# --- Runs --------------------------------------------------------------------------------------

def closed_before_start(events: list[TeamEventModel]) -> dict[TaskType, str]:
    """Return the operational task types a human's ``abort`` closed before they could start, with why.

    A type counts when nothing of it was ever requested or delegated and, at the first human
    decision that closed the episode (the supervisor's ``human_decision`` event with
    ``closed: true``), the gate's order rule (:func:`robot_team.workflow.delegation_refusal`,
    rule 5) refused it: an earlier step had not succeeded. After that decision only the reflection
    may start (rule 4), so the type's cells do not apply. A type the gate already allowed when the
    human closed the episode is not in the result: the manager could have delegated it and did not.
    Read from the whole record (both views: what the floor allowed, whoever decided).
    """
    rec = _Record(list(events))
    closing = next((i for i, e in rec.kind(EventKind.HUMAN_DECISION) if e.data.get('closed')), None)
    if closing is None:
        return {}
    decision = rec.events[closing]
    started = {t.task_type for t in rec.tasks.values() if t.delegated_at is not None}
    started |= {_task_type(e.data.get('task_type')) for _, e in rec.kind(EventKind.DELEGATION_REQUESTED)}
    before = sorted((t for t in rec.tasks.values() if t.delegated_at is not None and t.delegated_at < closing),
                    key=lambda t: t.delegated_at)   # in authorization order, as the gate saw them then
    outline = [TaskOutline(t.task_id, t.task_type,
                           t.status if t.report_at is not None and t.report_at < closing else 'running',
                           (t.report or {}).get('issue', '')) for t in before]
    closed = {}
    for task_type in OPERATIONAL_TASKS:
        refusal = delegation_refusal(task_type, outline)
        if task_type not in started and refusal is not None and refusal[0] == 'order':
            closed[task_type] = (f"a human closed the episode ({decision.data.get('decision')} on "
                                 f"{decision.data.get('escalation_id')}) while {task_type.value} could not start "
                                 f"yet ({refusal[1]}) (N/A)")
    return closed


def _view_records(events: list[TeamEventModel], view: str) -> tuple[_Record, _Record]:
    """Return the records the manager's cells and the robots' cells of ``view`` are scored on."""
    if view == 'floor':
        record = _Record(list(events))
        return record, record
    return (_Record(without_fallback(events, {MANAGER})),
            _Record(without_fallback(events, set(TASK_OWNER.values()))))


def score_view(events: list[TeamEventModel], view: str, *, judge: ReflectionJudge | None = None,
               _records: tuple[_Record, _Record] | None = None) -> ViewScore:
    """Score the rubric's 19 cells (17 applicable on the published scenario) in ``view``.

    The cells of a task type a human's ``abort`` closed before it could start are N/A
    (:func:`closed_before_start`).

    Raises
    ------
    ValueError
        If ``view`` is not ``'attempted'`` or ``'floor'``.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view '{view}': expected one of {', '.join(VIEWS)}")
    rec, robots = _records or _view_records(events, view)
    cells = []
    for task_type in OPERATIONAL_TASKS:
        cells += [delegation_accuracy(rec, task_type, view), completion_judgment(rec, task_type, view),
                  issue_handling(rec, task_type, view)]
    cells.append(reflection_quality(rec, view, judge))
    for task_type in OPERATIONAL_TASKS:
        cells += [tool_usage(robots, task_type, view), local_reasoning(robots, task_type, view),
                  report_compliance(robots, task_type, view)]
    closed = closed_before_start(events)
    cells = [Cell(metric=c.metric, task=c.task, score=None, reason=closed[c.task])
             if c.task in closed and c.score is not None else c for c in cells]
    return ViewScore(view=view, cells=cells)


def llm_usage(events: list[TeamEventModel]) -> LLMUsage:
    """Sum the LLM requests, tokens and cost (``llm_reply`` ``cost_usd``) of a run."""
    usage = LLMUsage()
    models: dict[str, None] = {}
    for event in events:
        if event.kind == EventKind.LLM_REQUEST.value:
            usage.requests += 1
            offered = event.data.get('offered')
            if isinstance(offered, dict) and event.data.get('attempt', 1) == 1:
                usage.decisions_offered += 1
                usage.choices_offered += int(offered.get('choices') or 0)
        elif event.kind == EventKind.LLM_ERROR.value:
            usage.errors += 1
        elif event.kind == EventKind.LLM_REPLY.value:
            d = event.data
            usage.replies += 1
            usage.prompt_tokens += int(d.get('prompt_tokens') or 0)
            endpoint = d.get('usage') if isinstance(d.get('usage'), dict) else {}
            usage.cached_prompt_tokens += int((endpoint.get('prompt_tokens_details') or {}).get('cached_tokens') or 0)
            usage.completion_tokens += int(d.get('completion_tokens') or 0)
            cost = float(d.get('cost_usd') or 0.0)
            usage.cost_usd += cost
            robot = d.get('robot') or event.actor
            usage.cost_by_robot[robot] = usage.cost_by_robot.get(robot, 0.0) + cost
            if d.get('model'):
                models[str(d['model'])] = None
    usage.models = list(models)
    return usage


def score_run(events: list[TeamEventModel], *, run: str = '', judge: ReflectionJudge | None = None,
              judge_name: str = 'structural', truth: RunTruth | None = None) -> RunScore:
    """Score one run's event record in both views, with its LLM usage and guard counts.

    With the run's ground truth (``truth``, :func:`robot_team.evaluation.truth.ground_truth`) also
    under the strict criteria, with its false successes; without it the strict views are None.
    """
    events = list(events)
    if judge is not None:   # one judgment per reflection, shared by both views
        verdicts: dict[str, tuple[float, str]] = {}
        outer = judge

        def judge(reflection: dict, record: dict) -> tuple[float, str]:
            key = json.dumps(reflection, sort_keys=True, default=str)
            if key not in verdicts:
                verdicts[key] = outer(reflection, record)
            return verdicts[key]
    finished = [e for e in events if e.kind == EventKind.EPISODE_FINISHED.value]
    guards: dict[str, int] = {}
    for event in events:
        if event.kind in {k.value for k in GUARD_KINDS}:
            guards[event.kind] = guards.get(event.kind, 0) + 1
    views, strict = {}, {}
    for view in VIEWS:
        records = _view_records(events, view)
        views[view] = score_view(events, view, judge=judge, _records=records)
        if truth is not None:
            strict[view] = score_strict_view(events, view, truth, published=views[view], _records=records)
    return RunScore(run=run, outcome=finished[-1].data.get('outcome', '') if finished else 'timeout',
                    attempted=views['attempted'], floor=views['floor'],
                    strict_attempted=strict.get('attempted'), strict_floor=strict.get('floor'),
                    false_successes=false_successes(truth) if truth is not None else None,
                    world_success=truth.episode.succeeded if truth is not None else None,
                    usage=llm_usage(events), guards=guards, decisions=count_decisions(events),
                    takeovers=count_takeovers(events), judge=judge_name if judge else 'structural')


def score_run_dir(run_dir, *, judge: ReflectionJudge | None = None, judge_name: str = 'structural') -> RunScore:
    """Read a run folder and score it under both criteria (see :func:`score_run`).

    Reads ``events.jsonl``, and ``staff.sqlite`` and ``scenario.json`` for the ground truth
    (:func:`robot_team.evaluation.truth.load_run`).

    Raises
    ------
    robot_team.evaluation.truth.TruthInputError
        If a file is missing or malformed (the message names it).
    """
    run_dir = Path(run_dir)
    events, truth = load_run(run_dir)
    return score_run(events, run=str(run_dir), judge=judge, judge_name=judge_name, truth=truth)
