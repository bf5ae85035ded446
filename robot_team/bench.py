"""Benchmark of the ED onboarding episode (issue targets: < 10 s wall, sim clock >= 20x real time).

Runs the scenario ``runs`` times in one process, side by side with the same settings, and
reports per run: wall time of the whole episode (team start-up included), sim time at the
episode's end, and the sim clock's rate (sim seconds per wall second between the simulator's
first and last event, i.e. while the floor runs). Pure orchestration over
:func:`robot_team.runner.run_episode`.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from robot_team.events import EventKind
from robot_team.names import MOTION_SIM
from robot_team.runner import run_episode


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

    Returns ``{'scenario', 'mode', 'runs': [{wall_time_s, sim_time_s, clock_rate, outcome}],
    'median_wall_time_s', 'max_wall_time_s', 'median_clock_rate', 'min_clock_rate',
    'all_outcomes_as_expected'}``; times in seconds.
    """
    root = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix='robot_team_bench_'))
    rows = []
    expected = True
    for k in range(runs):
        result = run_episode(scenario, root / f'run-{k}', processes=processes, domain_id=domain_id)
        report = result.report
        expected = expected and bool(report['outcome_as_expected'])
        rows.append({'wall_time_s': report['wall_time_s'], 'sim_time_s': report['sim_time_s'],
                     'clock_rate': round(clock_rate(result.events) or 0.0, 2), 'outcome': report['outcome']})
    walls = [r['wall_time_s'] for r in rows]
    rates = [r['clock_rate'] for r in rows]
    return {'scenario': scenario, 'mode': 'processes' if processes else 'in-process', 'runs': rows,
            'median_wall_time_s': round(statistics.median(walls), 3), 'max_wall_time_s': max(walls),
            'median_clock_rate': round(statistics.median(rates), 2), 'min_clock_rate': min(rates),
            'all_outcomes_as_expected': expected, 'out_dir': str(root)}
