"""Run a shift (many patients on one team) and write ``shift.json``, ``summary.md`` and ``summary.png``.

A shift is a :class:`~robot_team.config.Scenario` with ``arrivals`` (a shift file, or
:func:`robot_team.evaluation.shift.generate_shift`). It runs as one episode of one team on the
embedded simulator (:func:`robot_team.runner.run_episode`): every arrival opens a case, served
``cases_at_once`` at a time (the shift's), most urgent first (``robot_team.cases``). ``shift.json``::

    {shift, brain, cases_at_once, fleet, kb, lessons, outcome, wall_time_s, sim_time_s,
     cases: [report.json's cases with attempted, floor, rubric_max],
     robots: {robot: {busy_s, tasks}}, summary: robot_team.evaluation.shift.summarize_shift(...)}
"""

from __future__ import annotations

import json
from pathlib import Path

from robot_team.config import Scenario
from robot_team.evaluation.rubric import score_run
from robot_team.evaluation.shift import plot_timeline, summarize_shift, write_summary_md
from robot_team.events import EventKind, TeamEventModel
from robot_team.names import Robot
from robot_team.report import case_events
from robot_team.runner import run_episode


def robot_spans(events: list[TeamEventModel]) -> dict[str, list[tuple[float, float, str]]]:
    """Return each robot's busy spans ``(start_s, end_s, case_id)`` (sim s): delegation to the task's first report.

    A task without a report runs until the last event's time.
    """
    started: dict[str, tuple[str, float, str]] = {}
    spans: dict[str, list[tuple[float, float, str]]] = {}
    end = events[-1].stamp_s if events else 0.0
    for event in events:
        task_id = str(event.data.get('task_id', ''))
        if event.kind == EventKind.DELEGATION.value and event.actor == Robot.MANAGER.value and task_id not in started:
            started[task_id] = (str(event.data.get('robot', '')), event.stamp_s, str(event.data.get('case_id', '')))
        elif event.kind == EventKind.TASK_REPORT.value and task_id in started:
            robot, start, case = started.pop(task_id)
            spans.setdefault(robot, []).append((start, event.stamp_s, case))
    for robot, start, case in started.values():
        spans.setdefault(robot, []).append((start, end, case))
    return spans


def case_rubric(events: list[TeamEventModel], case_id: str) -> dict:
    """Return the published rubric of one case: ``attempted`` and ``floor`` points of ``rubric_max``.

    Scores the case's own events (:func:`robot_team.report.case_events`) with
    :func:`robot_team.evaluation.rubric.score_run`, as one onboarding of the published evaluation.
    """
    score = score_run(case_events(events, case_id))
    return {'attempted': score.attempted.points, 'floor': score.floor.points,
            'rubric_max': score.attempted.max_points}


def run_shift(shift: Scenario, out_dir: Path | str, **options) -> dict:
    """Run ``shift`` on one team and write ``shift.json``, ``summary.md`` and ``summary.png`` in ``out_dir``.

    ``options`` go to :func:`robot_team.runner.run_episode` (brain, domain_id, clock...). Returns
    the ``shift.json`` content (see the module docstring; times in sim s).
    """
    out = Path(out_dir)
    result = run_episode(shift, out, **options)
    report = result.report
    spans = robot_spans(result.events)
    duration = max(float(report.get('sim_time_s') or 0.0), 1e-9)
    busy = {robot: round(sum(e - s for s, e, _ in items), 3) for robot, items in spans.items()}
    cases = [case | case_rubric(result.events, case['patient_id']) for case in report.get('cases') or []]
    waited = [c | {'waited_for_robot_s': c['waited_for_robot_s'] if c['waited_for_robot_s'] is not None
                   else max(duration - (c['arrival_s'] or 0.0), 0.0)} for c in cases]   # never started: all along
    summary = summarize_shift(waited, robots=busy, duration_s=duration)
    brain_options = options.get('brain_options') or {}
    conditions = {'cases_at_once': shift.cases_at_once, 'fleet': shift.robots, 'kb': brain_options.get('kb'),
                  'lessons': bool(brain_options.get('lessons', True))}
    content = {'shift': shift.name, 'brain': report.get('brain'), **conditions, 'outcome': report.get('outcome'),
               'wall_time_s': report.get('wall_time_s'), 'sim_time_s': report.get('sim_time_s'), 'cases': cases,
               'robots': {robot: {'busy_s': busy[robot], 'tasks': len(spans[robot])} for robot in spans},
               'summary': summary, 'report': str(out / 'report.json')}
    (out / 'shift.json').write_text(json.dumps(content, indent=2, default=str))
    write_summary_md(summary, cases, out / 'summary.md')
    plot_timeline(cases, spans, out / 'summary.png')
    return content
