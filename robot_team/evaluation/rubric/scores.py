"""The rubric's cells and scores: the seven metrics of the published criteria, views, criteria, a run's score.

:class:`Metric` names the seven process metrics of the published rubric (Table II); a
:class:`Cell` scores one metric for one task (or the run's reflection); a :class:`ViewScore`
holds the cells of one view (``attempted`` or ``floor``) under one criteria (``published`` or
``strict``); a :class:`RunScore` holds a run's four view scores with its LLM usage, guard counts
and false successes. Data only: the scoring is in :mod:`robot_team.evaluation.rubric.published`
and :mod:`robot_team.evaluation.rubric.strict`.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, Literal

from pydantic import BaseModel, Field, computed_field

from robot_team.evaluation.rubric.usage import LLMUsage
from robot_team.evaluation.truth import FalseSuccess
from robot_team.contracts.reports import TaskType


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
