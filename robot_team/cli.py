"""The ``robot-team`` command line: run ED episodes and list scenarios.

Commands stay thin: parse options, call :mod:`robot_team.run`, print.
"""

from __future__ import annotations

import faulthandler
import json
import os
import statistics
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from robot_team.bench import bench_episodes, bench_teams
from robot_team.bench_llm import main as bench_main
from robot_team.contracts.clock_sync import check_clock_mode
from robot_team.contracts.config import ConfigError, deployment_scenario, load_scenario, scenario_names
from robot_team.console.operator_commands import (console_command, escalations_app, instruct_command,
                                                  resolve_command)
from robot_team.evaluation.eval_command import eval_command
from robot_team.evaluation.shift import generate_shift, write_shift
from robot_team.evaluation.shift_run import run_shift
from robot_team.faults import FAULTS, NOTICE_BOUND_S, run_fault
from robot_team.fhir.gateway import TOKEN_ENV, check_binding
from robot_team.run.lifecycle import EXIT_BAD_INPUT, EXIT_NOT_STARTED, exit_code
from robot_team.llm.llm_command import llm_app
from robot_team.llm.factory import LLM_BRAINS
from robot_team.llm.local import MODEL_HELP
from robot_team.llm.settings import LLMSettings
from robot_team.run_report import truth_text
from robot_team.run import episode
from robot_team.contracts.names import parse_fleet
from robot_team.recorder import read_jsonl
from robot_team.contracts.reports import WORKFLOW_ORDER
from robot_team.run.restarts import DEFAULT_MAX_RESTARTS
from robot_team.run.dds import ensure_localhost_dds
from robot_team.run.llm_endpoint import check_brain
from robot_team.contracts.scene import SCENE_FILE, SceneTimeline, floor_of, read_samples

app = typer.Typer(help='Accountable LLM-driven robot team for the emergency department (ROS 2).',
                  no_args_is_help=True, add_completion=False)
console = Console()

FHIR_PORT_HELP = ('Also serve FHIR Encounter notifications (R5 subscription-notification or R4 backport Bundles, '
                  'POST http://FHIR_HOST:PORT/fhir): emergency Encounters open cases, finished/cancelled ones '
                  'end them (docs/deployment.md). 0: off.')
FHIR_HOST_HELP = (f'Address the FHIR gateway binds (loopback by default; elsewhere the bearer token in {TOKEN_ENV} '
                  'is required).')
JUMP_AHEAD_HELP = ('Follow clock without a speed cap: jump sim time across quiet time (every node waiting for '
                   'a scheduled event, no robot driving) to the step that brings the next event: the same decisions, '
                   'sooner (robot_team.contracts.clock_sync). --no-jump-ahead: step through it.')
FOXGLOVE_HELP = ('Serve the live scene (SceneUpdate on /team/scene) and events (Log on /team/log) to Foxglove '
                 'over WebSocket on this port (ws://FOXGLOVE_HOST:PORT; 0: any free port, in report.json); layout: '
                 'config/foxglove/robot_team.json.')
FLEET_HELP = ("Robots per role beyond one, e.g. 'navigation_robot=2,display_robot=1' (named <role>_1, "
              "<role>_2..., each its own node in its own namespace, docked at its own dock). Default: the "
              "scenario's or shift file's (one per role).")
"""``--fleet``'s help (``run`` and ``shift``)."""


STATUS_STYLE = {'success': 'green', 'failure': 'red', 'escalated': 'yellow', 'held_for_human': 'yellow',
                'timeout': 'red', 'interrupted': 'red', 'start_error': 'red'}


@contextmanager
def _exit_on_refusal(*, start: bool = False):
    """Print why a command was refused and exit with the code scripts test for (:mod:`robot_team.run.lifecycle`).

    A :class:`~robot_team.contracts.config.ConfigError` or ``ValueError`` (bad input) exits with
    ``EXIT_BAD_INPUT``; with ``start``, a ``RuntimeError`` (the team did not start) exits with
    ``EXIT_NOT_STARTED``. Other errors pass through.
    """
    try:
        yield
    except typer.Exit:   # click's Exit is a RuntimeError: an exit already decided passes through
        raise
    except (ConfigError, ValueError) as exc:
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    except RuntimeError as exc:
        if not start:
            raise
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(EXIT_NOT_STARTED) from exc


@app.command()
def run(
    scenario: Annotated[str, typer.Option(help="Scenario name (see `robot-team scenarios`) or YAML path; '': none, "
                                               'a deployment on the shipped floor and staff (patients from '
                                               '--fhir-port or ed/patient_arrivals, until Ctrl-C, a report per '
                                               'case in DIR/cases/).')]
    = 'onboarding',
    brain: Annotated[str, typer.Option(help="Brain of every robot: 'protocol', 'openai' (any OpenAI-compatible "
                                            "endpoint: OPENAI_BASE_URL, OPENAI_API_KEY, config/llm.yaml), "
                                            "'local' (the built-in local model on 127.0.0.1, started and stopped "
                                            "by the run) or 'random' (the chance baseline: every reply drawn at "
                                            "random within its request's schema, on 127.0.0.1; see --seed).")]
    = 'protocol',
    seed: Annotated[Optional[int], typer.Option(min=0, help="With --brain random: the random chooser's seed "
                                                            '(default 0; the model is named chance-seed-SEED).')]
    = None,
    clock: Annotated[str, typer.Option(help="'follow': sim time advances as fast as every node of the team keeps "
                                            'up (the same decisions under any load; holds while a brain waits on '
                                            "its LLM); 'wall': at --real-time-factor x wall time, as Gazebo (demos, "
                                            'physical robots).')] = 'follow',
    llm_clock: Annotated[str, typer.Option(help="LLM brains on the wall clock: 'realtime' (sim time runs while a "
                                                "brain waits on its LLM) or 'lockstep' (sim time holds, as a paused "
                                                'Gazebo).')]
    = 'realtime',
    jump_ahead: Annotated[bool, typer.Option('--jump-ahead/--no-jump-ahead', help=JUMP_AHEAD_HELP)] = True,
    kb: Annotated[bool, typer.Option('--kb/--no-kb', help='LLM brains: give each robot its knowledge-base '
                                                          'sections (config/kb).')] = True,
    model: Annotated[Optional[str], typer.Option(help=MODEL_HELP)] = None,
    out: Annotated[Path, typer.Option(help='Folder for report.json, events.jsonl/.mcap, staff.sqlite.')]
    = Path('runs/latest'),
    processes: Annotated[bool, typer.Option('--processes/--in-process',
                                            help='One process per node (as ros2 launch), or all in one.')] = False,
    domain_id: Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID for the graph (default: env or 0).')]
    = None,
    real_time_factor: Annotated[Optional[float], typer.Option(help="Wall clock: sim seconds per wall second "
                                                                   "(default: the scenario's; LLM brains in "
                                                                   "realtime: config/llm.yaml's real_time_factor, "
                                                                   '5). Follow clock: the most (default: no cap).')]
    = None,
    quiet: Annotated[bool, typer.Option(help='No progress display.')] = False,
    namespace: Annotated[str, typer.Option(help="Run the whole team under this ROS namespace (robots in "
                                                "NAMESPACE/<robot>, its own clock topic), e.g. 'floor2', so "
                                                "that two teams share one domain.")] = '/',
    log_level: Annotated[str, typer.Option(help="Nodes' console log level (debug, info, warn, error); the event "
                                                'record is complete whatever it is.')] = 'warn',
    max_restarts: Annotated[int, typer.Option(min=0, help='With --processes: how many times a node process that '
                                                          'dies is started again (per node, 0.5 s after its exit; '
                                                          '0: never).')]
    = DEFAULT_MAX_RESTARTS,
    fleet: Annotated[str, typer.Option(help=FLEET_HELP)] = '',
    fhir_port: Annotated[int, typer.Option(min=0, max=65535, help=FHIR_PORT_HELP)] = 0,
    fhir_host: Annotated[str, typer.Option(help=FHIR_HOST_HELP)] = '127.0.0.1',
    foxglove: Annotated[Optional[int], typer.Option(min=0, max=65535, help=FOXGLOVE_HELP)] = None,
    foxglove_host: Annotated[str, typer.Option(help='Address the Foxglove server binds (loopback by default; '
                                                    'anything else shows the floor to the network).')] = '127.0.0.1',
) -> None:
    """Run one ED episode on the embedded simulator and write DIR/report.json.

    Exit code: 0 if the outcome (every case's, with several patients) is the expected one, 1 for
    another outcome or a patient who waited so long that a person was asked to take them, 2 for
    bad input, 3 if the team did not start, 130/143 if interrupted by SIGINT/SIGTERM (the
    report and the record so far are written).
    """
    with _exit_on_refusal():
        loaded = load_scenario(scenario) if scenario.strip() else deployment_scenario()
        if fleet:
            loaded = loaded.model_copy(update={'fleet': parse_fleet(fleet, '--fleet')})
        check_brain(brain, '--brain')
        check_clock_mode(clock, '--clock')
        if model is not None and brain != 'local':
            raise ConfigError(f"--model is the built-in endpoint's model: use it with --brain local (not '{brain}')")
        if seed is not None and brain != 'random':
            raise ConfigError(f"--seed is the random chooser's seed: use it with --brain random (not '{brain}')")
    options = {}
    if brain in LLM_BRAINS:
        # Realtime: sim time keeps running while a brain waits on the LLM, so run slower than protocol runs.
        options = {'kb': kb}
        if llm_clock == 'realtime' and clock == 'wall':
            real_time_factor = real_time_factor or LLMSettings().real_time_factor
    if foxglove:
        console.print(f'Foxglove: open ws://{foxglove_host}:{foxglove} (layout config/foxglove/robot_team.json)')
    with _exit_on_refusal(start=True):
        if fhir_port:   # off loopback only with a bearer token (refused before anything starts)
            check_binding(fhir_host, os.environ.get(TOKEN_ENV))
        result = _run_with_progress(loaded, out, brain, processes, domain_id, real_time_factor, quiet, options,
                                    log_level, namespace, llm_clock, model, clock, max_restarts, seed,
                                    fhir_port, fhir_host, (foxglove, foxglove_host), jump_ahead)
    print_summary(result.report)
    code = exit_code(result.report)
    if code:
        raise typer.Exit(code)


@app.command()
def shift(
    shift_file: Annotated[Optional[Path], typer.Option(
        '--shift', help='Shift file: a scenario YAML with `arrivals` (more patients).')] = None,
    hours: Annotated[Optional[float], typer.Option(help='Generate a shift this long (sim hours).')] = None,
    arrivals_per_hour: Annotated[float, typer.Option(help='Generated shift: mean arrivals per hour (Poisson).')]
    = 5.0,
    seed: Annotated[int, typer.Option(min=0, help="Generated shift: the generator's seed.")] = 11,
    door_share: Annotated[float, typer.Option(
        help="Generated shift: share of cases whose room's door is jammed from their arrival (0 to 1).")] = 0.0,
    brain: Annotated[str, typer.Option(help="Every robot's brain: 'protocol', 'openai', 'local', 'random'.")]
    = 'protocol',
    kb: Annotated[bool, typer.Option('--kb/--no-kb', help='LLM brains: knowledge-base sections.')] = True,
    lessons: Annotated[bool, typer.Option(
        '--lessons/--no-lessons', help="Give each case the lessons of the shift's earlier reflections (with "
                                       "the KB); --no-lessons: the condition without them.")] = True,
    clock: Annotated[str, typer.Option(help="'follow' (as fast as the team keeps up) or 'wall'.")] = 'follow',
    jump_ahead: Annotated[bool, typer.Option('--jump-ahead/--no-jump-ahead', help=JUMP_AHEAD_HELP)] = True,
    out: Annotated[Path, typer.Option(help='Folder for shift.json, summary.md/png, report.json, the record.')]
    = Path('runs/shift'),
    domain_id: Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID for the graph (default: env or 0).')]
    = None,
    cases_at_once: Annotated[Optional[int], typer.Option(
        min=0, help="Cases served at once (0: no limit; a robot still runs one task at a time). Default: the "
                    "shift file's (a generated shift: 0).")] = None,
    fleet: Annotated[str, typer.Option(help=FLEET_HELP)] = '',
    processes: Annotated[bool, typer.Option('--processes/--in-process', help='One process per node (each '
                                            "node's peak memory in report.json's node_memory_mib).")] = False,
    fhir_port: Annotated[int, typer.Option(min=0, max=65535, help=FHIR_PORT_HELP)] = 0,
    fhir_host: Annotated[str, typer.Option(help=FHIR_HOST_HELP)] = '127.0.0.1',
) -> None:
    """Serve many patients with one team over a shift; write DIR/shift.json, summary.md and summary.png.

    Give a shift file (``--shift``) or generate one (``--hours``, ``--arrivals-per-hour``,
    ``--seed``; written to DIR/shift.yaml). Exit code as ``run``: 0 when every case reached its
    expected outcome, 1 otherwise, 2 for bad input, 3 if the team did not start.
    """
    with _exit_on_refusal():
        if (shift_file is None) == (hours is None):
            raise ConfigError('give a shift file (--shift FILE) or the generator options (--hours H '
                              '[--arrivals-per-hour R --seed S]), not both')
        check_brain(brain, '--brain')
        check_clock_mode(clock, '--clock')
        if shift_file is not None:
            loaded = load_scenario(str(shift_file))
        else:
            loaded = generate_shift(hours=hours, arrivals_per_hour=arrivals_per_hour, seed=seed,
                                    door_share=door_share)
        if cases_at_once is not None:
            loaded = loaded.model_copy(update={'cases_at_once': cases_at_once})
        if fleet:
            loaded = loaded.model_copy(update={'fleet': parse_fleet(fleet, '--fleet')})
        if shift_file is None:
            out.mkdir(parents=True, exist_ok=True)
            write_shift(loaded, out / 'shift.yaml')
    console.print(f'[bold]Shift[/bold] {loaded.name}: {len(loaded.cases)} patient(s) over '
                  f'{max(p.arrival_time_s for p in loaded.cases) / 3600:.2f} h of sim time, '
                  f"{loaded.cases_at_once or 'any number of'} case(s) at once; robots {', '.join(loaded.robots)}")
    with _exit_on_refusal(start=True):
        options = ({'kb': kb} if brain in LLM_BRAINS else {}) | ({} if lessons else {'lessons': False})
        if fhir_port:   # off loopback only with a bearer token (refused before anything starts)
            check_binding(fhir_host, os.environ.get(TOKEN_ENV))
        content = run_shift(loaded, out, brain=brain, domain_id=domain_id, clock=clock, log_level='warn',
                            brain_options=options or None, fhir_port=fhir_port, fhir_host=fhir_host,
                            processes=processes, jump_ahead=jump_ahead)
    summary = content['summary']
    console.print(f"[bold]Cases[/bold] {summary['cases']}, as expected {summary['as_expected']}; wall "
                  f"{content['wall_time_s']} s for {content['sim_time_s']} sim s; see {out / 'summary.md'}")
    code = exit_code(json.loads((out / 'report.json').read_text()))
    if code:
        raise typer.Exit(code)


def _run_with_progress(scenario, out, brain, processes, domain_id, real_time_factor, quiet, options=None,
                       log_level='warn', namespace='/', llm_clock='realtime', model=None, clock='follow',
                       max_restarts=DEFAULT_MAX_RESTARTS, seed=None, fhir_port=0, fhir_host='127.0.0.1',
                       foxglove=(None, '127.0.0.1'), jump_ahead=True):

    if quiet:
        return episode.run_episode(scenario, out, brain=brain, processes=processes, domain_id=domain_id,
                                   log_level=log_level, real_time_factor=real_time_factor, brain_options=options,
                                   namespace=namespace, llm_clock=llm_clock, local_model=model, clock=clock,
                                   max_restarts=max_restarts, seed=seed, fhir_port=fhir_port, fhir_host=fhir_host,
                                   foxglove_port=foxglove[0], foxglove_host=foxglove[1], jump_ahead=jump_ahead)
    steps = [t.value for t in WORKFLOW_ORDER]
    with Progress(SpinnerColumn(), TextColumn('[bold]{task.description}'), BarColumn(),
                  TextColumn('{task.fields[status]}'), TimeElapsedColumn(), console=console) as progress:
        bar = progress.add_task(f'{scenario.name}', total=len(steps), status='starting the team')

        def on_event(event):
            data = event.data
            status = f'[dim]t={event.stamp_s:6.1f}s[/dim] {event.actor}: {event.summary}'
            done = None
            if event.kind == 'task_report' and data.get('status') == 'success':
                done = steps.index(data.get('task_type')) + 1 if data.get('task_type') in steps else None
            elif event.kind == 'reflection':
                done = len(steps)
            progress.update(bar, status=status[:110], **({'completed': done} if done else {}))
        return episode.run_episode(scenario, out, brain=brain, processes=processes, domain_id=domain_id,
                                   log_level=log_level, real_time_factor=real_time_factor, on_event=on_event,
                                   brain_options=options, namespace=namespace, llm_clock=llm_clock,
                                   local_model=model, clock=clock, max_restarts=max_restarts, seed=seed,
                                   fhir_port=fhir_port, fhir_host=fhir_host, foxglove_port=foxglove[0],
                                   foxglove_host=foxglove[1], jump_ahead=jump_ahead)


def print_summary(report: dict) -> None:
    """Print a run report as tables."""
    style = STATUS_STYLE.get(report['outcome'], 'white')
    expected = report.get('expected_outcome')
    console.print(f"\n[bold]Scenario[/bold] {report['scenario']}  [bold]brain[/bold] {report['brain']}  "
                  f"[bold]mode[/bold] {report['mode']}  [bold]outcome[/bold] [{style}]{report['outcome']}[/{style}]"
                  + (f' (expected {expected})' if expected else ''))
    table = Table(title='Tasks', show_lines=False)
    for column in ('task', 'robot', 'status', 'issue', 'ground truth'):
        table.add_column(column)
    for task in report['tasks']:
        status = task['status']
        table.add_row(f"{task['task_id']} {task['name']}", task['robot'],
                      f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]", task['issue'] or 'none',
                      _truth(task))
    console.print(table)
    for esc in report['escalations']:
        console.print(f"[yellow]escalation[/yellow] {esc['escalation_id']} on {esc.get('task_id')} by "
                      f"{esc.get('raised_by')}: {esc.get('reason')} -> decision: {esc.get('decision') or 'none'}"
                      f"{' #' + esc['hcw_id'] if esc.get('hcw_id') else ''} ({esc.get('operator_id') or '-'})")
    if report['reflection']:
        console.print('[bold]Reflection[/bold]')
        for outcome in report['reflection']['task_outcomes']:
            console.print(f"  - {outcome['task_type']}: {outcome['status']} - {outcome['summary']}")
        for line in report['reflection']['recovery_attempts']:
            console.print(f'  recovery: {line}')
        for line in report['reflection']['lessons_learned']:
            console.print(f'  lesson: {line}')
    if report['guards']:
        console.print('[bold]Guards[/bold] ' + ', '.join(f'{k}: {v}' for k, v in report['guards'].items()))
    decisions = {k: v for k, v in (report.get('decisions') or {}).items() if v}
    if decisions or report.get('takeovers'):
        console.print('[bold]Decisions[/bold] ' + ', '.join(f'{k}: {v}' for k, v in decisions.items())
                      + f"; takeovers: {report.get('takeovers', 0)}")
    for applied in report.get('safe_defaults') or []:
        console.print(f"[yellow]safe default[/yellow] {applied['directive']} after the {applied['deadline']} deadline "
                      f"({applied['escalation_id']}): {applied['reason']}")
    cases = report.get('cases') or []
    if len(cases) > 1:
        for case in cases:
            style = STATUS_STYLE.get(case['outcome'] or 'timeout', 'white')
            expected = '' if case['outcome'] == (case['expected_outcome'] or 'success') else \
                f" (expected {case['expected_outcome'] or 'success'})"
            console.print(f"[bold]Case[/bold] {case['patient_id']} ESI {case['esi_level'] or '?'} {case['room']}: "
                          f"[{style}]{case['outcome'] or 'open'}[/{style}]{expected}, waited "
                          f"{case['waited_for_robot_s']} s, door to provider {case['door_to_provider_s']} s")
    for patient in report.get('unserved_patients') or []:
        console.print(f"[red]waited too long[/red] patient {patient['patient_id']} (ESI {patient['esi_level'] or '?'})"
                      f" in {patient['room']}: a person was asked to take them at {patient['arrived_s']} s")
    if report.get('interrupted_by'):
        console.print(f"[red]interrupted[/red] by {report['interrupted_by']}: the record so far is written")
    llm = (report.get('llm') or {}).get('total') or {}
    if llm.get('requests') or llm.get('errors'):
        per = report['llm']['per_robot']
        console.print(f"[bold]LLM[/bold] {llm['requests']} requests, {llm['prompt_tokens']} prompt + "
                      f"{llm['completion_tokens']} completion tokens, ${llm['cost_usd']:.4f}, {llm['errors']} errors ("
                      + ', '.join(f"{robot}: {u['prompt_tokens']}+{u['completion_tokens']}" for robot, u in per.items())
                      + ')')
    chance = report.get('chance_llm')
    if chance:
        console.print(f"[bold]Chance[/bold] the random chooser {chance['model']} (seed {chance['seed']}): "
                      + ', '.join(f'{robot}: {n} replies' for robot, n in chance['replies'].items()))
    events = report['events']
    console.print(f"sim time {report['sim_time_s']:.1f} s, wall time {report['wall_time_s']:.2f} s "
                  f"(x{report['real_time_factor']}), {events['count']} events "
                  f"({'complete' if events['complete'] else 'GAPS: ' + json.dumps(events['sequence_gaps'])})")
    console.print(f"report: {report['files']['report']}")


def _truth(task: dict) -> str:
    return truth_text(task['evidence'])


@app.command()
def bench(
    scenario: Annotated[str, typer.Option(help='Scenario to time.')] = 'onboarding',
    runs: Annotated[int, typer.Option(min=1, help='Episodes per mode.')] = 5,
    processes: Annotated[bool, typer.Option('--processes/--in-process', help='Also time one process per node.')]
    = False,
    domain_id: Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID for the graphs.')] = None,
    out: Annotated[Optional[Path], typer.Option(help='Keep the runs here (default: a temp folder).')] = None,
    teams: Annotated[Optional[int], typer.Option(
        min=1, help='Instead: a team alone, then this many teams at once (a robot-team run process each, namespace '
                    '/t<k>, domain --domain-id + k): completed, outcomes, decisions against the team alone, wall '
                    'time, sim s per wall s.')] = None,
    clock: Annotated[str, typer.Option(help="With --teams: the teams' clock, 'follow' or 'wall'.")] = 'follow',
    processes_only: Annotated[bool, typer.Option(
        '--processes-only', help='Time one process per node only (e.g. many starts in a row: node crashes and '
                                 'restarts are counted).')] = False,
) -> None:
    """Time ED episodes with the protocol brain: wall time (target < 2 s in one process) and sim clock rate.

    With --teams N: N teams at once on this machine. Exit code 1 if a team did not reach the
    expected outcome with the decisions of the team alone (bench --teams), 2 for bad input.
    """
    if teams is not None:
        try:
            check_clock_mode(clock, '--clock')
            res = bench_teams(teams, scenario, clock=clock, domain_id=domain_id, out_dir=out)
        except ValueError as exc:
            console.print(f'[red]error:[/red] {exc}')
            raise typer.Exit(EXIT_BAD_INPUT) from exc
        table = Table('teams', 'clock', 'completed', 'outcome as expected', 'decisions as alone', 'wall s',
                      'sim s per wall s', 'team alone')
        alone = res['alone']
        table.add_row(str(teams), clock, str(res['completed']), str(res['as_expected']), str(res['same_decisions']),
                      f"{res['wall_time_s']:.1f}", f"{res['sim_s_per_wall_s']}",
                      f"{alone['outcome']}, {alone.get('decisions', 0)} decisions, {alone['wall_time_s']} s wall")
        console.print(table)
        console.print_json(json.dumps(res))
        if not (res['as_expected'] == res['same_decisions'] == teams):
            raise typer.Exit(1)
        return
    modes = [True] if processes_only else [False, True] if processes else [False]
    table = Table('mode', 'runs', 'median wall s', 'max wall s', 'median sim clock x', 'min sim clock x',
                  'sim s', 'outcomes as expected', 'node crashes', "runs with run 1's decisions")
    results = []
    for mode in modes:
        res = bench_episodes(scenario, runs, processes=mode, domain_id=domain_id,
                             out_dir=(out / ('processes' if mode else 'in-process')) if out else None)
        results.append(res)
        table.add_row(res['mode'], str(runs), f"{res['median_wall_time_s']:.2f}", f"{res['max_wall_time_s']:.2f}",
                      f"{res['median_clock_rate']:.1f}", f"{res['min_clock_rate']:.1f}",
                      f"{statistics.median(r['sim_time_s'] for r in res['runs']):.1f}",
                      str(res['all_outcomes_as_expected']), str(res['node_crashes']),
                      str(res['runs_with_the_first_runs_decisions']))
    console.print(table)
    console.print_json(json.dumps(results))


@app.command()
def faults(
    node: Annotated[Optional[list[str]], typer.Option(
        help='Node to kill (repeatable; default: every kind, one episode each): ' + ', '.join(FAULTS))] = None,
    scenario: Annotated[str, typer.Option(help='Scenario to run (one process per node).')] = 'onboarding',
    out: Annotated[Path, typer.Option(help='Each episode in OUT/<node>.')] = Path('runs/faults'),
    domain_id: Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID for the graphs.')] = None,
) -> None:
    """Kill each team node mid-task (kill -9) and report the time to notice, to recover, the outcome, the record.

    Exit code 1 if a loss was not noticed within 5 s, an episode missed its expected outcome or an
    event recorded before the fault is missing from the record; 2 for bad input.
    """
    ensure_localhost_dds()
    chosen = node or list(FAULTS)
    unknown = [n for n in chosen if n not in FAULTS]
    if unknown:
        console.print(f"[red]error:[/red] --node {', '.join(unknown)}: expected one of {', '.join(FAULTS)}")
        raise typer.Exit(EXIT_BAD_INPUT)
    table = Table('fault', 'noticed s', 'by', 'restarted s', 'back s', 'task recovered s', 'outcome',
                  'events before / missing')
    failed = False
    for name in chosen:
        res = run_fault(FAULTS[name], out / name, scenario, domain_id=domain_id)
        fmt = lambda v: '-' if v is None else f'{v:.2f}'  # noqa: E731
        missing = res.missing_jsonl + res.missing_mcap
        table.add_row(res.fault, fmt(res.noticed_s), res.noticed_by or '-', fmt(res.restarted_s), fmt(res.back_s),
                      (f'{res.lost_task}: ' if res.lost_task else '') + fmt(res.recovered_s),
                      f'{res.outcome} (expected {res.expected_outcome})', f'{res.events_before} / {missing}')
        failed |= (not res.killed or res.noticed_s is None or res.noticed_s > NOTICE_BOUND_S
                   or res.outcome != res.expected_outcome or missing > 0)
        (out / name / 'fault.json').write_text(res.model_dump_json(indent=2))
    console.print(table)
    if failed:
        raise typer.Exit(1)


@app.command('bench-llm')
def bench_llm(
    as_json: Annotated[bool, typer.Option('--json', help='Machine-readable output.')] = False,
) -> None:
    """Count prompt tokens per onboarding run (with/without KB) and the bridge overhead per tool call."""
    bench_main(['--json'] if as_json else [])


app.command('resolve', help='Answer an escalation (same as `robot-team escalations resolve`).')(
    resolve_command)


@app.command()
def scenarios() -> None:
    """List the shipped scenarios."""
    table = Table('scenario', 'expected outcome', 'description')
    for name in scenario_names():
        s = load_scenario(name)
        table.add_row(name, s.expected_outcome or '-', s.description)
    console.print(table)


@app.command()
def replay(
    run_dir: Annotated[Path, typer.Argument(help='A finished run\'s folder (events.jsonl, scene.jsonl).')],
    at: Annotated[Optional[float], typer.Option(help='Sim time to open at, s (default: the start).')] = None,
    screenshot: Annotated[Optional[Path], typer.Option(help='Render once offscreen at --at, write this PNG '
                                                            'and exit.')] = None,
) -> None:
    """Open the console's floor map on a finished run's record, with a slider over its sim time."""
    try:
        events = read_jsonl(run_dir / 'events.jsonl')
        samples = read_samples(run_dir / SCENE_FILE) if (run_dir / SCENE_FILE).exists() else []
        timeline = SceneTimeline(floor_of(events), samples, events)
        from robot_team.console.replay import run_replay  # optional: needs Qt (PySide6 or rqt's binding)
        code = run_replay(timeline, events, title=str(run_dir), at=at, screenshot=screenshot)
    except (OSError, ValueError, ConfigError, ImportError, RuntimeError) as exc:
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(1) from exc
    if screenshot is not None:
        console.print(f'screenshot: {screenshot}')
    raise typer.Exit(code)


app.command('eval')(eval_command)
app.add_typer(escalations_app, name='escalations')
app.command('instruct')(instruct_command)
app.command('console')(console_command)
app.add_typer(llm_app, name='llm')


def main() -> int:
    """Entry point of ``robot-team``.

    A native crash of this process (a fatal signal in rclpy or the middleware, e.g. SIGSEGV) leaves
    the Python stacks of all its threads on stderr (:mod:`faulthandler`), as every node process does.
    """
    faulthandler.enable()
    ensure_localhost_dds()
    app()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
