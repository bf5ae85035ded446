"""Run a shift (many patients on one team) and write ``shift.json``, ``summary.md`` and ``summary.png``.

A shift is a :class:`~robot_team.contracts.config.Scenario` with ``arrivals`` (a shift file, or
:func:`robot_team.evaluation.shift.generate_shift`). It runs as one episode of one team on the
embedded simulator (:func:`robot_team.run.episode.run_episode`): every arrival opens a case, served
``cases_at_once`` at a time (the shift's), most urgent first (``robot_team.contracts.cases``). ``shift.json``::

    {shift, brain, cases_at_once, fleet, kb, lessons, outcome, wall_time_s, sim_time_s,
     cases: [report.json's cases with attempted, floor, rubric_max],
     robots: {robot: {busy_s, tasks}}, summary: robot_team.evaluation.shift.summarize_shift(...)}

plus ``summary.robot_waits`` (:func:`robot_waits`) and ``summary.false_successes``: the world
audit of the whole run (:func:`robot_team.evaluation.truth.false_successes`: every success the
team accepted that the simulator's ground truth contradicts, ``task_id``, ``claim``, ``reason``;
None with ``summary.audit_error`` where the run left no ground truth to audit).
"""

from __future__ import annotations

import json
from pathlib import Path

from robot_team.contracts.config import Scenario
from robot_team.evaluation.rubric import score_run
from robot_team.evaluation.shift import plot_timeline, summarize_shift, write_summary_md
from robot_team.evaluation.truth import TruthInputError, false_successes
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import RobotId, Role, role_name
from robot_team.run_report import case_events
from robot_team.run.episode import run_episode


def robot_spans(events: list[TeamEventModel]) -> dict[str, list[tuple[float, float, str]]]:
    """Return each robot's busy spans ``(start_s, end_s, case_id)`` (sim s): delegation to the manager's judgment.

    A robot holds its task until the manager has its result (the ``judgment`` of the task), a
    little after its report; a task never judged ends at its first report, else at the last event.
    """
    started: dict[str, tuple[str, float, str]] = {}
    reported: dict[str, float] = {}
    spans: dict[str, list[tuple[float, float, str]]] = {}
    end = events[-1].stamp_s if events else 0.0
    for event in events:
        task_id = str(event.data.get('task_id', ''))
        if event.kind == EventKind.DELEGATION.value and event.actor == Role.MANAGER.value and task_id not in started:
            started[task_id] = (str(event.data.get('robot', '')), event.stamp_s, str(event.data.get('case_id', '')))
        elif event.kind == EventKind.TASK_REPORT.value and task_id in started:
            reported.setdefault(task_id, event.stamp_s)
        elif event.kind == EventKind.JUDGMENT.value and event.actor == Role.MANAGER.value and task_id in started:
            robot, start, case = started.pop(task_id)
            spans.setdefault(robot, []).append((start, event.stamp_s, case))
    for task_id, (robot, start, case) in started.items():
        spans.setdefault(robot, []).append((start, reported.get(task_id, end), case))
    return spans


def robot_waits(events: list[TeamEventModel], spans: dict[str, list[tuple[float, float, str]]],
                robots: list[RobotId], esi: dict[str, int], step_s: float = 0.0) -> dict:
    """Check every wait for a robot against the robots' busy spans (:func:`robot_spans`): what a fleet must never show.

    A wait starts at the manager's ``waiting_for_robot`` observation of a case (for a robot or a
    role) and ends at that case's next delegation to a robot of the role (else the last event).
    ``robots`` are the team's (a fleet's ``<role>_<n>``); ``esi`` each case's ESI level;
    ``step_s`` the clock's step (the record's resolution: a robot idle no longer than one step
    between its task's judgment and the waiting case's delegation is the manager's turn-around).

    Returns
    -------
    dict
        ``waits``: how many. ``beside_an_idle_robot``: ``{patient_id, robot, idle_s}`` for each
        wait during which a robot of its role stood idle longer than ``step_s`` at a stretch
        (``idle_s``: the longest stretch, sim s; none expected).
        ``behind_less_urgent``: ``{patient_id, given_to, robot, at_s}`` for each robot given to
        an ESI 4-5 case while an ESI 1-2 case waited for its role (none expected).
    """
    end = events[-1].stamp_s if events else 0.0
    waits = []
    for i, event in enumerate(events):
        if event.kind == EventKind.OBSERVATION.value and event.data.get('cue') == 'waiting_for_robot':
            case, role = str(event.data.get('case_id', '')), role_name(str(event.data.get('robot', '')))
            done = next((e.stamp_s for e in events[i + 1:] if e.kind == EventKind.DELEGATION.value
                         and e.data.get('case_id') == case and role_name(str(e.data.get('robot', ''))) == role), end)
            waits.append((case, role, event.stamp_s, done))
    idle = []
    for case, role, start, done in waits:
        for robot in (r for r in robots if role_name(r) == role):
            gap = _longest_gap(spans.get(robot, []), start, done)
            if gap > step_s + 1e-6:
                idle.append({'patient_id': case, 'robot': robot, 'idle_s': round(gap, 3)})
    behind = [{'patient_id': case, 'given_to': e.data.get('case_id'), 'robot': e.data.get('robot'), 'at_s': e.stamp_s}
              for e in events if e.kind == EventKind.DELEGATION.value and esi.get(e.data.get('case_id'), 0) in (4, 5)
              for case, role, start, done in waits
              if esi.get(case, 0) in (1, 2) and role == role_name(str(e.data.get('robot', ''))) and start <= e.stamp_s
              < done]
    return {'waits': len(waits), 'beside_an_idle_robot': idle, 'behind_less_urgent': behind}


def _longest_gap(spans: list[tuple[float, float, str]], start: float, end: float) -> float:
    """Return the longest time within ``[start, end]`` (sim s) that none of ``spans`` covers."""
    longest, at = 0.0, start
    for s, e, _ in sorted(spans):
        if e <= at or s >= end:
            continue
        longest, at = max(longest, s - at), max(at, e)
    return max(longest, end - at)


def case_rubric(events: list[TeamEventModel], case_id: str) -> dict:
    """Return the published rubric of one case: ``attempted`` and ``floor`` points of ``rubric_max``.

    Scores the case's own events (:func:`robot_team.run_report.case_events`) with
    :func:`robot_team.evaluation.rubric.run.score_run`, as one onboarding of the published evaluation.
    """
    score = score_run(case_events(events, case_id))
    return {'attempted': score.attempted.points, 'floor': score.floor.points,
            'rubric_max': score.attempted.max_points}


def run_shift(shift: Scenario, out_dir: Path | str, **options) -> dict:
    """Run ``shift`` on one team and write ``shift.json``, ``summary.md`` and ``summary.png`` in ``out_dir``.

    ``options`` go to :func:`robot_team.run.episode.run_episode` (brain, domain_id, clock...). Returns
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
    summary['robot_waits'] = robot_waits(result.events, spans, shift.robots,
                                         {c['patient_id']: int(c.get('esi_level') or 0) for c in cases},
                                         float((report.get('clock') or {}).get('max_step_size') or 0.0))
    try:   # the world audit: every success the team accepted that the simulator's ground truth contradicts
        summary['false_successes'] = [{'task_id': f.task_id, 'claim': f.claim, 'reason': f.reason}
                                      for f in false_successes(out)]
    except TruthInputError as exc:   # no ground truth to audit against (e.g. the run did not start): say so
        summary['false_successes'] = None
        summary['audit_error'] = str(exc)
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
