"""The means of a condition over its trials (cells pooled across runs), and its chance row and margins."""

from __future__ import annotations

from robot_team.evaluation.rubric import VIEWS, Metric, ViewScore
from robot_team.evaluation.trials.results import ConditionSummary, TrialResult


def _pooled(scores: list[ViewScore], n: int) -> tuple[float, float, dict[str, float | None]]:
    """Return the success rate (points / applicable points), mean points and metric means of ``scores``."""
    total_max = sum(s.max_points for s in scores)
    means = {}
    for metric in Metric:
        cells = [c.score for s in scores for c in s.cells if c.metric is metric and c.score is not None]
        means[metric.value] = sum(cells) / len(cells) if cells else None
    return (sum(s.points for s in scores) / total_max if total_max else 0.0), sum(s.points for s in scores) / n, means


def summarize(condition: str, runs: list[TrialResult], scenario: str = '') -> ConditionSummary:
    """Return the means of ``condition`` (of ``scenario``) over ``runs`` (cells pooled across runs for metric means).

    The strict figures pool the runs scored with their ground truth (every run of an evaluation).
    """
    n = max(len(runs), 1)
    rates, points, means = {}, {}, {}
    strict_rates, strict_points, strict_means = {}, {}, {}
    truthful = [r for r in runs if r.score.false_successes is not None]
    for view in VIEWS:
        rates[view], points[view], means[view] = _pooled([r.score.view(view) for r in runs], n)
        if truthful:
            strict_rates[view], strict_points[view], strict_means[view] = _pooled(
                [r.score.view(view, 'strict') for r in truthful], len(truthful))
    outcomes: dict[str, int] = {}
    for r in runs:
        outcomes[r.score.outcome] = outcomes.get(r.score.outcome, 0) + 1
    return ConditionSummary(
        condition=condition, runs=len(runs), scenario=scenario,
        expected_outcome=runs[0].expected_outcome if runs else 'success',
        as_expected=sum(r.as_expected for r in runs), success_rate=rates, points_mean=points,
        max_points_mean=sum(r.score.attempted.max_points for r in runs) / n,
        cost_per_run_usd=sum(r.score.usage.cost_usd for r in runs) / n,
        prompt_tokens_per_run=sum(r.score.usage.prompt_tokens for r in runs) / n,
        cached_prompt_tokens_per_run=sum(r.score.usage.cached_prompt_tokens for r in runs) / n,
        completion_tokens_per_run=sum(r.score.usage.completion_tokens for r in runs) / n,
        llm_requests_per_run=sum(r.score.usage.requests for r in runs) / n,
        metric_means=means, outcomes=outcomes, wall_time_per_run_s=sum(r.wall_time_s for r in runs) / n,
        llm_decisions_per_run=sum(r.score.decisions.get('llm', 0) for r in runs) / n,
        fallback_decisions_per_run=sum(r.score.decisions.get('fallback', 0) for r in runs) / n,
        takeovers_per_run=sum(r.score.takeovers for r in runs) / n,
        choices_per_decision=_mean([r.score.usage.choices_per_decision for r in runs]),
        strict_success_rate=strict_rates, strict_points_mean=strict_points, strict_metric_means=strict_means,
        false_successes=sum(len(r.score.false_successes or []) for r in runs),
        false_successes_per_run=sum(len(r.score.false_successes or []) for r in runs) / n,
        world_successes=sum(bool(r.score.world_success) for r in runs))


def with_chance(summary: ConditionSummary, chance: ConditionSummary | None) -> ConditionSummary:
    """Return ``summary`` with its chance row: the chance trials' means and the margins over them, per view.

    ``chance``: the summary of the chance trials of the same scenario and condition (None, or no
    runs: ``summary`` unchanged, its chance fields None). Margin: ``summary``'s value minus chance's.
    """
    if chance is None or not chance.runs:
        return summary
    return summary.model_copy(update={
        'chance_runs': chance.runs, 'chance_points_mean': dict(chance.points_mean),
        'chance_success_rate': dict(chance.success_rate),
        'margin_points': {view: summary.points_mean[view] - chance.points_mean[view] for view in VIEWS},
        'margin_success_rate': {view: summary.success_rate[view] - chance.success_rate[view] for view in VIEWS}})


def _mean(values: list[float | None]) -> float | None:
    """Return the mean of the values that are not None (None if none is)."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None
