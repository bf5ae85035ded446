"""The evaluation as Markdown tables, shaped like the published Tables III and IV, with the chance row."""

from __future__ import annotations

from robot_team.evaluation.rubric import METRIC_LABELS, VIEWS, Metric
from robot_team.evaluation.trials.results import ConditionSummary, EvalSummary
from robot_team.evaluation.trials.spec import CHANCE_BRAIN, CHANCE_DIR, CONDITION_LABELS


def _pct(value: float | None) -> str:
    return '-' if value is None else f'{100 * value:.2f}%'


def _cached(c: ConditionSummary) -> str:
    """Return ' (N cached)' for a condition whose endpoint took prompt tokens from its cache ('' otherwise)."""
    return f' ({c.cached_prompt_tokens_per_run:.0f} cached)' if c.cached_prompt_tokens_per_run else ''


def fmt(value: float | None, digits: int = 3) -> str:
    """Return ``value`` with ``digits`` decimals ('-' for None)."""
    return '-' if value is None else f'{value:.{digits}f}'


def condition_label(summary: EvalSummary, c: ConditionSummary) -> str:
    """Return a condition's label, prefixed with its scenario when the evaluation has several."""
    label = CONDITION_LABELS.get(c.condition, c.condition)
    return f'{c.scenario}: {label}' if len(summary.scenarios) > 1 else label


def _strict_cells(score) -> tuple[str, str]:
    """Return a run's strict points (attempted / floor of max) and its false successes as table cells ('-': none)."""
    strict = '-' if score.strict_attempted is None or score.strict_floor is None else \
        f'{score.strict_attempted.points:g} / {score.strict_floor.points:g} of {score.strict_attempted.max_points:g}'
    return strict, '-' if score.false_successes is None else str(len(score.false_successes))


_RUN_COLUMNS = ('Outcome', 'Expected', 'Points (attempted/floor)', 'Strict points (attempted/floor)', 'False successes',
                'LLM decisions', 'Fallback decisions', 'Takeovers', 'Human decisions')
"""The columns of a run's score, as the runs' and the chance runs' tables show them (:func:`_run_cells`)."""


def _run_cells(r) -> list:
    """Return a run's score as the cells of :data:`_RUN_COLUMNS`."""
    s, d = r.score, r.score.decisions
    strict, false = _strict_cells(s)
    return [s.outcome, r.expected_outcome, f'{s.attempted.points:g} / {s.floor.points:g} of {s.attempted.max_points:g}',
            strict, false, d.get('llm', 0), d.get('fallback', 0), s.takeovers, d.get('human', 0)]


def _row(cells) -> str:
    """Return a Markdown table row of ``cells`` (each as an f-string writes it)."""
    return '| ' + ' | '.join(format(c) for c in cells) + ' |'


def _head(columns) -> list[str]:
    """Return a Markdown table's header lines: the ``columns`` and the line under them."""
    return [_row(columns), '|' + '---|' * len(columns)]


def markdown(summary: EvalSummary) -> str:
    """Return the evaluation as Markdown tables shaped like the published Tables III and IV (a row per scenario)."""
    ref = summary.reference
    model = ref['model']
    served = f', model {summary.model}' if summary.model else ''
    lines = [f'# Evaluation: {summary.scenario}, brain {summary.brain}{served}, {summary.trials} trial(s) per '
             'condition', '', f'Reflection judge: {summary.judge}. Attempted: what the brains tried (refused attempts '
             "count against); floor: what happened after the guards. As expected: runs whose outcome is the scenario's "
             'expected one. Two criteria: published (the paper\'s, comparable with the published rows) and strict '
             '(the same cells held to the ground truth of the simulator, the RTLS and the staff directory: '
             'docs/evaluation.md). False successes: successes the team claimed (a manager\'s judgment, the '
             'episode\'s outcome) that the world contradicts.', '',
             '## Success rate and cost per run (cf. Table III)', '',
             '| Scenario | Condition | Runs | As expected | Success rate (attempted) | Success rate (floor) '
             '| Strict success rate (attempted) | Strict success rate (floor) | False successes '
             '| Points (attempted/floor) | Cost per run (USD) | Prompt tokens per run | Completion tokens per run '
             '| Fallback decisions per run | Takeovers per run | Choices per decision | Wall s per run |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for c in summary.conditions:
        label = CONDITION_LABELS.get(c.condition, c.condition)
        lines.append(f"| {c.scenario} | {label} | {c.runs} | {c.as_expected}/{c.runs} ({c.expected_outcome}) "
                     f"| {_pct(c.success_rate['attempted'])} | {_pct(c.success_rate['floor'])} "
                     f"| {_pct(c.strict_success_rate.get('attempted'))} | {_pct(c.strict_success_rate.get('floor'))} "
                     f'| {c.false_successes} '
                     f"| {c.points_mean['attempted']:.2f} / {c.points_mean['floor']:.2f} of {c.max_points_mean:g} "
                     f'| {c.cost_per_run_usd:.4f} | {c.prompt_tokens_per_run:.0f}{_cached(c)} '
                     f'| {c.completion_tokens_per_run:.0f} | {c.fallback_decisions_per_run:.1f} '
                     f'| {c.takeovers_per_run:.1f} | {fmt(c.choices_per_decision, 1)} | {c.wall_time_per_run_s:.0f} |')
    for condition in ('baseline', 'kb'):
        lines.append(f"| - | Published, {CONDITION_LABELS[condition]} ({model}) | {ref['runs_per_condition']} | - "
                     f"| {_pct(ref['success_rate'][condition])} | - | - | - | - | - "
                     f"| {ref['cost_per_run_usd'][condition]:.4f} | - | - | - | - | - | - |")
    lines += _chance_markdown(summary)
    header = ['Metric']
    for c in summary.conditions:
        label = condition_label(summary, c)
        header += [f'{label} (attempted)', f'{label} (floor)', f'{label} (strict, attempted)',
                   f'{label} (strict, floor)']
    header += [f'Published, {CONDITION_LABELS["baseline"]}', f'Published, {CONDITION_LABELS["kb"]}']
    lines += ['', '## Metric means (cf. Table IV)', '', '| ' + ' | '.join(header) + ' |',
              '|' + '---|' * len(header)]
    for metric in Metric:
        row = [METRIC_LABELS[metric]]
        for c in summary.conditions:
            row += [fmt(c.metric_means['attempted'][metric.value]), fmt(c.metric_means['floor'][metric.value])]
            row += [fmt(c.strict_metric_means.get(view, {}).get(metric.value)) for view in VIEWS]
        row += [fmt(ref['metric_means']['baseline'][metric.value]), fmt(ref['metric_means']['kb'][metric.value])]
        lines.append('| ' + ' | '.join(row) + ' |')
    lines += ['', '## Runs', '', 'Decisions by source: llm (the LLM), fallback (the protocol brain in its place: '
              'endpoint down, or a takeover after a stall; the attempted view leaves these out), human.', '',
              *_head(['Scenario', 'Run', *_RUN_COLUMNS])]
    for r in summary.runs:
        lines.append(_row([r.scenario, f'{r.condition}/trial-{r.trial}', *_run_cells(r)]))
    if summary.chance_runs:
        lines += ['', '## Chance runs', '', *_head(['Scenario', 'Run', 'Seed', *_RUN_COLUMNS, 'Wall s'])]
        for r in summary.chance_runs:
            lines.append(_row([r.scenario, f'{CHANCE_DIR}/{r.condition}/trial-{r.trial}', r.seed, *_run_cells(r),
                               f'{r.wall_time_s:.0f}']))
    found = [(r, f) for r in [*summary.runs, *summary.chance_runs] for f in r.score.false_successes or []]
    lines += ['', '## False successes', '']
    lines += [f"- {r.scenario} {CHANCE_DIR + '/' if r.chance else ''}{r.condition}/trial-{r.trial}: "
              f"{f.task_id or 'the episode'} "
              f"({'judged a success' if f.claim == 'judgment' else 'finished as a success'}): {f.reason}"
              for r, f in found] or ['None: every success the team claimed is one the world shows.']
    lines += ['', f"Reference: {ref['source']}; {model}, {ref['runs_per_condition']} hand-scored runs per "
              'condition, 17 points per run (published criteria).', '']
    return '\n'.join(lines)


def _chance_markdown(summary: EvalSummary) -> list[str]:
    """Return the chance section: per scenario and condition, the brain's mean points, chance's, the margin."""
    if summary.brain == CHANCE_BRAIN:
        return ['', f"This evaluation is the chance baseline (brain {CHANCE_BRAIN}, trial k with seed k): no chance "
                'row beside it.']
    if not summary.chance_trials:
        return ['', 'No chance row (--chance 0).']
    lines = ['', '## Margin over chance (the random chooser)', '',
             f'Chance: {summary.chance_trials} trial(s) per scenario and condition of the random chooser (brain '
             f"{CHANCE_BRAIN}, trial k with seed k: every reply drawn at random within its request's schema; "
             "docs/chance.md). Margin: this evaluation's mean minus chance's.", '',
             '| Scenario | Condition | Runs | Chance runs | Attempted (mean points) | Chance attempted | Margin '
             '(attempted) | Floor (mean points) | Chance floor | Margin (floor) | Success rate margin (attempted / '
             'floor) | Chance outcomes |', '|---|---|---|---|---|---|---|---|---|---|---|---|']
    chance = {(c.scenario, c.condition): c for c in summary.chance}
    for c in summary.conditions:
        row = chance.get((c.scenario, c.condition))
        label = CONDITION_LABELS.get(c.condition, c.condition)
        if row is None or c.margin_points is None:
            lines.append(f'| {c.scenario} | {label} | {c.runs} | 0 | {c.points_mean["attempted"]:.2f} | - | - '
                         f'| {c.points_mean["floor"]:.2f} | - | - | - | - |')
            continue
        outcomes = ', '.join(f'{k} {v}' for k, v in sorted(row.outcomes.items()))
        lines.append(f'| {c.scenario} | {label} | {c.runs} | {row.runs} | {c.points_mean["attempted"]:.2f} '
                     f'| {row.points_mean["attempted"]:.2f} | **{c.margin_points["attempted"]:+.2f}** '
                     f'| {c.points_mean["floor"]:.2f} | {row.points_mean["floor"]:.2f} '
                     f'| {c.margin_points["floor"]:+.2f} | {100 * c.margin_success_rate["attempted"]:+.2f} / '
                     f'{100 * c.margin_success_rate["floor"]:+.2f} pp | {outcomes} |')
    return lines
