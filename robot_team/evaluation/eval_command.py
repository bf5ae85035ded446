"""``robot-team eval``: run the published evaluation (scenarios x conditions x trials), score it, write the tables.

Thin: parse options, call :func:`robot_team.evaluation.trials.run.run_trials` and
:func:`~robot_team.evaluation.trials.outputs.write_outputs`, show progress and the summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from robot_team.contracts.config import ConfigError, load_scenario, scenario_names
from robot_team.evaluation.judge import make_judge
from robot_team.evaluation.parallel import SchedulerError
from robot_team.evaluation.trials import (
    CHANCE_BRAIN, CONDITIONS, TrialInterrupted, parallel_domains, run_trials, write_outputs)
from robot_team.run.lifecycle import exit_code
from robot_team.llm.local import MODEL_HELP, check_model, resolve_model
from robot_team.llm.lockstep import check_llm_clock
from robot_team.run.llm_endpoint import check_brain

console = Console()

DEFAULT_CHANCE_TRIALS = 2
"""Chance trials per scenario and condition when ``--chance`` is not given (0 with ``--brain random``)."""


def expand_scenarios(values: list[str] | None) -> list[str]:
    """Return the scenarios ``--scenario`` names: repeated and/or comma-separated, ``all`` for every shipped one.

    Default (none given): ``onboarding``. Duplicates are dropped, the order kept. Each is loaded
    to check it.

    Raises
    ------
    ConfigError
        If a scenario cannot be loaded (unknown name, bad YAML).
    """
    chosen: list[str] = []
    for value in values or ['onboarding']:
        for item in (part.strip() for part in value.split(',')):
            if item:
                chosen.extend(scenario_names() if item == 'all' else [item])
    chosen = list(dict.fromkeys(chosen))
    if not chosen:
        raise ConfigError('--scenario: no scenario given')
    for name in chosen:
        load_scenario(name)
    return chosen


def eval_command(
    trials: Annotated[int, typer.Option(min=1, help='Trials (episodes) per condition.')] = 5,
    condition: Annotated[Optional[list[str]], typer.Option(
        '--condition', help="Condition to run: 'baseline' (no knowledge base) or 'kb'; repeat for both "
                            '(default: both).')] = None,
    brain: Annotated[str, typer.Option(help="Brain of every robot: 'protocol', 'openai', 'local' (the built-in "
                                            "local model, one endpoint for all trials) or 'random' (the chance "
                                            'baseline, trial k with seed k).')] = 'protocol',
    chance: Annotated[Optional[int], typer.Option(
        min=0, help='Chance trials per scenario and condition: the random chooser (every reply drawn at random '
                    "within its request's schema, trial k with seed k) in DIR/chance/, and per condition the margin "
                    f'of the brain over it (default: {DEFAULT_CHANCE_TRIALS}; 0: none; none with --brain '
                    f'{CHANCE_BRAIN}).')] = None,
    llm_clock: Annotated[Optional[str], typer.Option(help="LLM brains: 'lockstep' (default: sim time holds while a "
                                                          "brain waits on its LLM; the follow clock of the trials "
                                                          "always holds) or 'realtime'.")] = None,
    scenario: Annotated[Optional[list[str]], typer.Option(
        '--scenario', help="Scenario name or YAML path; repeat it or give a comma list for several, 'all' for "
                           'every scenario `robot-team scenarios` lists (default: onboarding).')] = None,
    shift: Annotated[Optional[list[str]], typer.Option(
        '--shift', help='Shift file (a scenario YAML with arrivals, e.g. the shift.yaml `robot-team shift` '
                        'writes): run like a scenario, and every case scored with the rubric on its own '
                        '(DIR/.../trial-<k>/cases.json). Repeatable.')] = None,
    model: Annotated[Optional[str], typer.Option(help=MODEL_HELP)] = None,
    out: Annotated[Path, typer.Option(help='Evaluation folder: DIR/<condition>/trial-<k>/ for one scenario, '
                                           'DIR/<scenario>/<condition>/trial-<k>/ for several, and the tables.')]
    = Path('runs/eval'),
    judge: Annotated[str, typer.Option(help="Reflection judge: 'structural' (no LLM) or 'llm'.")] = 'structural',
    judge_model: Annotated[Optional[str], typer.Option(help='Model of the LLM judge (default: LLM settings).')]
    = None,
    domain_id: Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID for the episodes (default: env or 0); '
                                                          'with --jobs N the first of N consecutive ones.')]
    = None,
    real_time_factor: Annotated[Optional[float], typer.Option(help='The most sim seconds per wall second (default: '
                                                                   'no cap: trials run on the follow clock, as '
                                                                   'fast as the team keeps up).')] = None,
    jobs: Annotated[int, typer.Option(min=1, help='Trials at a time. 1 (default): one after another in this '
                                                  'process. N > 1: side by side on Dask, a local cluster of N '
                                                  'worker processes (or the --scheduler\'s workers), each team in '
                                                  'its own namespace /t<k> and ROS domain (--domain-id + slot, '
                                                  'slot 0 to N-1).')] = 1,
    scheduler: Annotated[Optional[str], typer.Option(help='Address of a running Dask scheduler (tcp://HOST:PORT) '
                                                          'whose workers run the trials, --jobs at a time, instead '
                                                          'of a local cluster; DIR must be a folder they all see.')]
    = None,
    quiet: Annotated[bool, typer.Option(help='No progress display.')] = False,
) -> None:
    """Run the evaluation trials, score the 17-point rubric, write JSON/CSV/Markdown/PNG to DIR.

    Besides the brain's trials, --chance N (default 2) trials of the random chooser per scenario and
    condition, and the brain's margin over them (none when the brain is 'random'). Each run is scored
    under the published criteria and the strict ones (held to the run's ground truth), in both views,
    with its false successes (docs/evaluation.md).

    Exit code 2 for bad input (unknown brain, scenario, condition, model or one not installed, ROS
    domains out of range, no Dask scheduler at --scheduler, --chance with --brain random); 1 when
    trials failed (the finished ones are kept).
    """
    conditions = condition or list(CONDITIONS)
    try:
        check_brain(brain, '--brain')
        if chance is None:
            chance = 0 if brain == CHANCE_BRAIN else DEFAULT_CHANCE_TRIALS
        elif chance and brain == CHANCE_BRAIN:
            raise ValueError(f'--chance {chance} with --brain {CHANCE_BRAIN}: the random chooser is the chance '
                             'baseline itself; leave --chance out (or 0)')
        scenarios = [*(expand_scenarios(scenario) if scenario or not shift else []),
                     *(expand_scenarios(shift) if shift else [])]
        if model is not None and brain != 'local':
            raise ValueError(f"--model is the built-in endpoint's model: use it with --brain local (not '{brain}')")
        if brain == 'local':
            check_model(resolve_model(model))
        reflection_judge = make_judge(judge, judge_model)
        if llm_clock is not None:
            check_llm_clock(llm_clock, '--llm-clock')
        unknown = [c for c in conditions if c not in CONDITIONS]
        if unknown:
            raise ValueError(f"unknown condition(s) {', '.join(unknown)}: expected {', '.join(CONDITIONS)}")
        if jobs > 1 or scheduler is not None:
            parallel_domains(domain_id, jobs)
            if brain == 'local' and scheduler is not None:
                raise ValueError("--brain local with --scheduler: the local endpoint listens on this machine's "
                                 'loopback only; use --jobs N (a local cluster) instead')
    except (ConfigError, ValueError) as exc:
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(2) from exc
    total = len(scenarios) * len(dict.fromkeys(conditions)) * (trials + chance)
    with Progress(TextColumn('[bold]{task.description}'), BarColumn(), MofNCompleteColumn(),
                  TextColumn('{task.fields[status]}'), TimeElapsedColumn(), console=console,
                  disable=quiet) as progress:
        bar = progress.add_task('eval', total=total, status='starting')

        def on_trial(name, k, result):
            if result is None:
                progress.update(bar, description=f'{name} trial {k}', status='running')
            else:
                score = result.score
                progress.update(bar, advance=1, status=f"{'reused' if result.reused else score.outcome}: "
                                f'{score.attempted.points:g}/{score.floor.points:g} of {score.attempted.max_points:g}')
        try:
            summary = run_trials(scenarios if len(scenarios) > 1 else scenarios[0], out, conditions=conditions,
                                 trials=trials, brain=brain,
                                 domain_id=domain_id, real_time_factor=real_time_factor, judge=reflection_judge,
                                 judge_name=judge, on_trial=on_trial, llm_clock=llm_clock, model=model, jobs=jobs,
                                 scheduler=scheduler, chance=chance)
        except TrialInterrupted as exc:
            console.print(f'[red]interrupted:[/red] {exc} (finished trials are kept; run again to resume)')
            raise typer.Exit(exit_code({'outcome': 'interrupted', 'interrupted_by': exc.signal_name})) from exc
        except SchedulerError as exc:
            console.print(f'[red]error:[/red] {exc}')
            raise typer.Exit(2) from exc
        except (ConfigError, RuntimeError, ValueError) as exc:
            console.print(f'[red]error:[/red] {exc} (finished trials are kept; run again to resume)')
            raise typer.Exit(1) from exc
    paths = write_outputs(summary, out)
    for c in summary.conditions:
        console.print(f"[bold]{c.scenario} {c.condition}[/bold]: {c.runs} runs, {c.as_expected} with the expected "
                      f"outcome ({c.expected_outcome}), success rate attempted "
                      f"{100 * c.success_rate['attempted']:.2f}% / floor {100 * c.success_rate['floor']:.2f}%"
                      + (f", strict {100 * c.strict_success_rate['attempted']:.2f}% / "
                         f"{100 * c.strict_success_rate['floor']:.2f}%" if c.strict_success_rate else '')
                      + f', {c.false_successes} false success(es), cost per run USD {c.cost_per_run_usd:.4f}')
        if c.margin_points is not None:
            console.print(f"  chance ({c.chance_runs} runs): attempted {c.chance_points_mean['attempted']:.2f} "
                          f"/ floor {c.chance_points_mean['floor']:.2f} points per run; margin attempted "
                          f"{c.margin_points['attempted']:+.2f} / floor {c.margin_points['floor']:+.2f} points "
                          f"(this evaluation {c.points_mean['attempted']:.2f} / {c.points_mean['floor']:.2f})")
    for r in summary.runs:
        if r.cases:
            console.print(f'[bold]{r.scenario} {r.condition} trial {r.trial}[/bold] cases (attempted/floor of max): '
                          + ', '.join(f"{c['patient_id']} {c['attempted']:g}/{c['floor']:g} of {c['rubric_max']:g}"
                                      for c in r.cases))
    if reflection_judge is not None and reflection_judge.errors:
        console.print(f'[yellow]LLM judge failed {reflection_judge.errors} time(s); structural scores kept[/yellow]')
    reused = sum(r.reused for r in [*summary.runs, *summary.chance_runs])
    side_by_side = f', {jobs} at a time' if jobs > 1 else ''
    where = f' on {scheduler}' if scheduler else ''
    chance_note = f' + {len(summary.chance_runs)} chance' if summary.chance_runs else ''
    console.print(f'{len(summary.runs)}{chance_note} trials ({reused} reused{side_by_side}{where}) in '
                  f"{summary.wall_time_s:.1f} s; tables: {paths['summary.md']}")
