"""The files an evaluation writes: eval.json, runs.csv, cells.csv, metrics.csv, summary.md and summary.png."""

from __future__ import annotations

import csv
from pathlib import Path

from robot_team.evaluation.rubric import CRITERIA, METRIC_LABELS, VIEWS, Metric
from robot_team.evaluation.trials.results import EvalSummary
from robot_team.evaluation.trials.spec import CONDITION_LABELS
from robot_team.evaluation.trials.tables import condition_label, fmt, markdown


CHANCE_SOURCE = 'chance (random chooser)'
MARGIN_SOURCE = 'margin over chance'
"""``metrics.csv`` sources of the chance row and of the margins (this evaluation's value minus chance's)."""


def plot(summary: EvalSummary, path: Path) -> None:
    """Draw success rates and metric means per condition next to the published figures (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ref = summary.reference
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={'width_ratios': [1, 2.4]})
    labels, attempted, floor, chance = [], [], [], []
    for c in summary.conditions:
        labels.append(condition_label(summary, c).replace(': ', '\n'))
        attempted.append(100 * c.success_rate['attempted'])
        floor.append(100 * c.success_rate['floor'])
        chance.append(100 * c.chance_success_rate['attempted'] if c.chance_success_rate else 0.0)
    xs = list(range(len(labels)))
    with_chance_bars = any(c.chance_success_rate for c in summary.conditions)
    width = 0.27 if with_chance_bars else 0.4
    shift = width if with_chance_bars else width / 2
    left.bar([x - shift for x in xs], attempted, width, label='attempted')
    left.bar([x + width - shift for x in xs], floor, width, label='floor')
    if with_chance_bars:
        left.bar([x + width for x in xs], chance, width, color='lightgrey', hatch='//',
                 label='chance (random chooser), attempted')
    for k, condition in enumerate(('baseline', 'kb')):
        labels.append(f'Published\n{CONDITION_LABELS[condition]}')
        left.bar([len(xs) + k], [100 * ref['success_rate'][condition]], 0.5, color='grey',
                 label='published (hand-scored)' if k == 0 else None)
    xs = range(len(labels))
    left.set_xticks(list(xs), labels, fontsize=8)
    left.set_ylabel('success rate (%)')
    left.set_ylim(0, 105)
    left.set_title('Success rate (points / 17)')
    left.legend(fontsize=8)
    series = [(f'{condition_label(summary, c)} (attempted)', c.metric_means['attempted'])
              for c in summary.conditions]
    series += [(f'Published {CONDITION_LABELS[c]}', ref['metric_means'][c]) for c in ('baseline', 'kb')]
    width = 0.8 / len(series)
    metrics = list(Metric)
    for k, (label, means) in enumerate(series):
        values = [means.get(m.value) or 0.0 for m in metrics]
        right.bar([i - 0.4 + width * (k + 0.5) for i in range(len(metrics))], values, width, label=label)
    right.set_xticks(range(len(metrics)), [METRIC_LABELS[m].replace(' ', '\n', 1) for m in metrics], fontsize=8)
    right.set_ylim(0, 1.05)
    right.set_title('Metric means (0 / 0.5 / 1 per cell)')
    right.legend(fontsize=7, ncol=4, loc='upper center', bbox_to_anchor=(0.5, -0.16))
    fig.suptitle(f'{summary.scenario}: brain {summary.brain}, {summary.trials} trial(s) per condition '
                 f'vs. published ({ref["model"]})', fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(summary: EvalSummary, out: Path) -> dict[str, str]:
    """Write eval.json, runs.csv, cells.csv, metrics.csv, summary.md and summary.png to ``out``; return paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ('eval.json', 'runs.csv', 'cells.csv', 'metrics.csv', 'summary.md',
                                           'summary.png')}
    paths['eval.json'].write_text(summary.model_dump_json(indent=2))
    with open(paths['runs.csv'], 'w', newline='') as f:
        writer = csv.writer(f)
        writer.writerow(['scenario', 'condition', 'trial', 'outcome', 'expected_outcome', 'as_expected',
                         'points_attempted', 'points_floor', 'max_points',
                         'success_rate_attempted', 'success_rate_floor', 'cost_usd', 'prompt_tokens',
                         'completion_tokens', 'llm_requests', 'llm_decisions', 'fallback_decisions', 'takeovers',
                         'human_decisions', 'wall_time_s', 'reused', 'out_dir', 'brain', 'seed', 'chance',
                         # appended: the strict criteria and the world's view of the run
                         'points_strict_attempted', 'points_strict_floor', 'success_rate_strict_attempted',
                         'success_rate_strict_floor', 'false_successes', 'world_success'])
        for r in [*summary.runs, *summary.chance_runs]:   # the chance row's trials last (chance True)
            s = r.score
            strict = [s.view(view, 'strict') for view in VIEWS]
            writer.writerow([r.scenario, r.condition, r.trial, s.outcome, r.expected_outcome, r.as_expected,
                             s.attempted.points, s.floor.points,
                             s.attempted.max_points, round(s.attempted.success_rate, 4),
                             round(s.floor.success_rate, 4), round(s.usage.cost_usd, 6), s.usage.prompt_tokens,
                             s.usage.completion_tokens, s.usage.requests, s.decisions.get('llm', 0),
                             s.decisions.get('fallback', 0), s.takeovers, s.decisions.get('human', 0),
                             r.wall_time_s, r.reused, r.out_dir, r.brain, '' if r.seed is None else r.seed, r.chance,
                             *[v.points if v else '' for v in strict],
                             *[round(v.success_rate, 4) if v else '' for v in strict],
                             '' if s.false_successes is None else len(s.false_successes),
                             '' if s.world_success is None else s.world_success])
    with open(paths['cells.csv'], 'w', newline='') as f:
        writer = csv.writer(f)
        writer.writerow(['scenario', 'condition', 'trial', 'view', 'metric', 'task', 'score', 'reason', 'chance',
                         'criteria'])
        for r in [*summary.runs, *summary.chance_runs]:
            for criteria in CRITERIA:
                for view in VIEWS:
                    scored = r.score.view(view, criteria)
                    for cell in scored.cells if scored is not None else []:
                        writer.writerow([r.scenario, r.condition, r.trial, view, cell.metric.value,
                                         cell.task.value if cell.task else 'run',
                                         'N/A' if cell.score is None else cell.score, cell.reason, r.chance, criteria])
    ref = summary.reference
    with open(paths['metrics.csv'], 'w', newline='') as f:
        writer = csv.writer(f)
        # scenario, then criteria: appended after the earlier columns
        writer.writerow(['source', 'condition', 'view', 'metric', 'mean', 'scenario', 'criteria'])
        for c in summary.conditions:
            for criteria, rates, means in (('published', c.success_rate, c.metric_means),
                                           ('strict', c.strict_success_rate, c.strict_metric_means)):
                for view in VIEWS:
                    if view not in rates:
                        continue
                    for metric in Metric:
                        writer.writerow(['this evaluation', c.condition, view, metric.value,
                                         fmt(means[view][metric.value], 4), c.scenario, criteria])
                    writer.writerow(['this evaluation', c.condition, view, 'success_rate', round(rates[view], 4),
                                     c.scenario, criteria])
            writer.writerow(['this evaluation', c.condition, '', 'cost_per_run_usd', round(c.cost_per_run_usd, 6),
                             c.scenario, ''])
            writer.writerow(['this evaluation', c.condition, '', 'false_successes', c.false_successes, c.scenario,
                             'strict'])
            for view in VIEWS:
                writer.writerow(['this evaluation', c.condition, view, 'points_mean', round(c.points_mean[view], 4),
                                 c.scenario, 'published'])
        for row in summary.chance:     # the chance row (the random chooser) and the margins over it
            for view in VIEWS:
                for metric in Metric:
                    writer.writerow([CHANCE_SOURCE, row.condition, view, metric.value,
                                     fmt(row.metric_means[view][metric.value], 4), row.scenario, 'published'])
                writer.writerow([CHANCE_SOURCE, row.condition, view, 'success_rate', round(row.success_rate[view], 4),
                                 row.scenario, 'published'])
                writer.writerow([CHANCE_SOURCE, row.condition, view, 'points_mean', round(row.points_mean[view], 4),
                                 row.scenario, 'published'])
            writer.writerow([CHANCE_SOURCE, row.condition, '', 'false_successes', row.false_successes, row.scenario,
                             'strict'])
        for c in summary.conditions:
            if c.margin_points is None:
                continue
            for view in VIEWS:
                writer.writerow([MARGIN_SOURCE, c.condition, view, 'points_mean', round(c.margin_points[view], 4),
                                 c.scenario, 'published'])
                writer.writerow([MARGIN_SOURCE, c.condition, view, 'success_rate',
                                 round(c.margin_success_rate[view], 4), c.scenario, 'published'])
        for condition in ('baseline', 'kb'):
            published = f"published ({ref['model']})"
            for metric in Metric:
                writer.writerow([published, condition, 'hand-scored', metric.value,
                                 ref['metric_means'][condition][metric.value], '', 'published'])
            writer.writerow([published, condition, 'hand-scored', 'success_rate', ref['success_rate'][condition],
                             '', 'published'])
            writer.writerow([published, condition, '', 'cost_per_run_usd', ref['cost_per_run_usd'][condition], '',
                             ''])
    paths['summary.md'].write_text(markdown(summary))
    plot(summary, paths['summary.png'])
    return {name: str(path) for name, path in paths.items()}
