"""Benchmarks of the ED episode: one team after another (:func:`bench_episodes`), many at once (:func:`bench_teams`).

:func:`bench_episodes` runs the scenario ``runs`` times in one process, with the same settings,
and reports per run: wall time of the whole episode (team start-up included), sim time at the
episode's end, and the sim clock's rate (sim seconds per wall second between the simulator's
first and last event, i.e. while the floor runs). Pure orchestration over
:func:`robot_team.run.episode.run_episode`.

:func:`bench_teams` runs a team alone, then ``teams`` teams at once on this machine, each a
``robot-team run`` process in its own namespace (``/t<k>``) and ROS domain, exactly as a user
would start them; it reports how many completed, their outcomes, whether each made the decisions
the team alone made (:func:`decision_sequence`), the wall time and the total sim seconds per wall
second.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import MOTION_SIM
from robot_team.recorder import read_jsonl
from robot_team.run.episode import run_episode

DECISION_KINDS = (EventKind.DELEGATION, EventKind.TASK_REPORT, EventKind.JUDGMENT, EventKind.ALTERNATIVE_PROPOSED,
                  EventKind.ESCALATION, EventKind.HUMAN_DECISION, EventKind.TAKEOVER, EventKind.SAFE_DEFAULT,
                  EventKind.EPISODE_FINISHED)
"""The events whose sequence is a team's decisions: delegations, reports and their judgment,
alternatives, escalations and their answers, takeovers, safe defaults, and the outcome."""


def clock_rate(events) -> float | None:
    """Return sim seconds per wall second over the clock source's sim events (None if fewer than two).

    The clock source is ``motion_sim``; its first sim event is the clock's start.
    """
    sim = [e for e in events if e.actor == MOTION_SIM and e.kind == EventKind.SIM.value]
    if len(sim) < 2:
        return None
    wall = sim[-1].wall_time - sim[0].wall_time
    return (sim[-1].stamp_s - sim[0].stamp_s) / wall if wall > 0 else None


def bench_episodes(scenario: str = 'onboarding', runs: int = 5, processes: bool = False,
                   domain_id: int | None = None, out_dir: Path | None = None) -> dict:
    """Run ``scenario`` ``runs`` times; return per-run figures and their medians/maxima.

    Returns ``{'scenario', 'mode', 'runs': [{wall_time_s, sim_time_s, clock_rate, outcome,
    node_crashes, restarts, same_decisions}], 'median_wall_time_s', 'max_wall_time_s',
    'median_clock_rate', 'min_clock_rate', 'all_outcomes_as_expected', 'node_crashes',
    'runs_with_the_first_runs_decisions', 'out_dir'}``; times in seconds. ``node_crashes`` is the
    report's count of ``node_crashed`` events (its ``guards``: a node process that died, one
    process per node, its native stack in ``logs/<node>.log``), ``restarts`` the restarts per node
    (the report's ``restarts``, one process per node only), ``same_decisions`` whether the run's
    :func:`decision_sequence` is the first run's.
    """
    root = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix='robot_team_bench_'))
    rows = []
    expected = True
    first = None
    for k in range(runs):
        result = run_episode(scenario, root / f'run-{k}', processes=processes, domain_id=domain_id)
        report = result.report
        expected = expected and bool(report['outcome_as_expected'])
        decisions = decision_sequence(result.events)
        first = decisions if first is None else first
        rows.append({'wall_time_s': report['wall_time_s'], 'sim_time_s': report['sim_time_s'],
                     'clock_rate': round(clock_rate(result.events) or 0.0, 2), 'outcome': report['outcome'],
                     'node_crashes': report['guards'].get(EventKind.NODE_CRASHED.value, 0),
                     'restarts': dict(report.get('restarts', {}).get('restarts', {})),
                     'same_decisions': decisions == first})
    walls = [r['wall_time_s'] for r in rows]
    rates = [r['clock_rate'] for r in rows]
    return {'scenario': scenario, 'mode': 'processes' if processes else 'in-process', 'runs': rows,
            'median_wall_time_s': round(statistics.median(walls), 3), 'max_wall_time_s': max(walls),
            'median_clock_rate': round(statistics.median(rates), 2), 'min_clock_rate': min(rates),
            'all_outcomes_as_expected': expected, 'node_crashes': sum(r['node_crashes'] for r in rows),
            'runs_with_the_first_runs_decisions': sum(r['same_decisions'] for r in rows), 'out_dir': str(root)}


def decision_sequence(events: list[TeamEventModel]) -> list[tuple]:
    """Return a team's decisions in order, without times or wording.

    Each decision is a tuple (event kind, task ID, task type, robot, HCW ID, status or decision or
    outcome), in the order of the events' stamps. Two teams that made the same decisions have equal
    sequences whatever their namespace, clock rate or the load of the machine (IDs such as
    ``nav-2`` are kept: they count the attempts).
    """
    kinds = {k.value for k in DECISION_KINDS}
    out = []
    for e in sorted(events, key=lambda e: (e.stamp_s, e.wall_time)):
        if e.kind not in kinds:
            continue
        d = e.data
        out.append((e.kind, d.get('task_id', ''), d.get('task_type', ''), d.get('robot', e.target),
                    str(d.get('hcw_id', '')), d.get('status') or d.get('judged_status') or d.get('decision')
                    or d.get('outcome') or ''))
    return out


def _start_team(scenario: str, out: Path, namespace: str, domain_id: int, clock: str) -> subprocess.Popen:
    """Start one ``robot-team run`` process (its output to ``out/run.log``)."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain_id),
               ROS_AUTOMATIC_DISCOVERY_RANGE=os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST'))
    log = open(out / 'run.log', 'w', encoding='utf-8')
    try:
        return subprocess.Popen([sys.executable, '-m', 'robot_team.cli', 'run', '--scenario', scenario, '--quiet',
                                 '--namespace', namespace, '--out', str(out), '--domain-id', str(domain_id),
                                 '--clock', clock], stdout=log, stderr=subprocess.STDOUT, env=env)
    finally:
        log.close()


def _team_result(out: Path, returncode: int | None, reference: list[tuple] | None) -> dict:
    """Read one team's report and record; compare its decisions with ``reference``."""
    row = {'out_dir': str(out), 'returncode': returncode, 'completed': False, 'outcome': None,
           'outcome_as_expected': False, 'sim_time_s': 0.0, 'wall_time_s': None, 'same_decisions': None}
    try:
        report = json.loads((out / 'report.json').read_text())
        events = read_jsonl(out / 'events.jsonl')
    except (OSError, ValueError) as exc:
        row['error'] = f'no report or record in {out}: {exc}'
        return row
    sequence = decision_sequence(events)
    row.update(completed=True, outcome=report['outcome'], outcome_as_expected=bool(report['outcome_as_expected']),
               sim_time_s=report['sim_time_s'], wall_time_s=report['wall_time_s'], decisions=len(sequence),
               same_decisions=None if reference is None else sequence == reference)
    if reference is not None and sequence != reference:
        row['first_difference'] = next((i for i, (a, b) in enumerate(zip(sequence, reference)) if a != b),
                                       min(len(sequence), len(reference)))
    return row


def bench_teams(teams: int, scenario: str = 'onboarding', *, clock: str = 'follow', domain_id: int | None = None,
                out_dir: Path | None = None, timeout_s: float = 1800.0) -> dict:
    """Run a team alone, then ``teams`` teams at once; return what each did against the team alone.

    Each team is a ``robot-team run`` process (in-process mode) in namespace ``/t<k>`` on ROS
    domain ``domain_id + k`` (``domain_id`` default: the environment's ``ROS_DOMAIN_ID`` or 0; the
    team alone uses ``domain_id``). Returns ``{'teams', 'scenario', 'clock', 'alone': row,
    'rows': [row], 'completed', 'as_expected', 'same_decisions', 'wall_time_s',
    'sim_s_per_wall_s', 'out_dir'}``, a row being ``{out_dir, returncode, completed, outcome,
    outcome_as_expected, sim_time_s, wall_time_s, decisions, same_decisions}``; times in seconds,
    ``wall_time_s`` from the first start to the last exit, ``sim_s_per_wall_s`` the teams' sim
    seconds summed over it.

    Raises
    ------
    ValueError
        If ``teams`` is below 1 or the domain IDs would pass 232 (DDS's last on one host).
    """
    if teams < 1:
        raise ValueError(f'teams must be at least 1, got {teams}')
    base = domain_id if domain_id is not None else int(os.environ.get('ROS_DOMAIN_ID', '0'))
    if base + teams > 232:
        raise ValueError(f'domain IDs {base}..{base + teams} pass 232: give a lower --domain-id')
    root = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix='robot_team_bench_teams_'))
    alone_dir = root / 'alone'
    proc = _start_team(scenario, alone_dir, '/alone', base, clock)
    alone = _team_result(alone_dir, proc.wait(timeout=timeout_s), None)
    reference = decision_sequence(read_jsonl(alone_dir / 'events.jsonl')) if alone['completed'] else None
    start = time.monotonic()
    procs = [(root / f't{k}', _start_team(scenario, root / f't{k}', f'/t{k}', base + k, clock))
             for k in range(1, teams + 1)]
    codes = []
    for _, p in procs:
        try:
            codes.append(p.wait(timeout=max(timeout_s - (time.monotonic() - start), 1.0)))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(None)
    wall = time.monotonic() - start
    rows = [_team_result(out, code, reference) for (out, _), code in zip(procs, codes)]
    return {'teams': teams, 'scenario': scenario, 'clock': clock, 'alone': alone, 'rows': rows,
            'completed': sum(r['completed'] for r in rows), 'as_expected': sum(r['outcome_as_expected'] for r in rows),
            'same_decisions': sum(bool(r['same_decisions']) for r in rows), 'wall_time_s': round(wall, 3),
            'sim_s_per_wall_s': round(sum(r['sim_time_s'] for r in rows) / wall, 2) if wall > 0 else None,
            'out_dir': str(root)}
