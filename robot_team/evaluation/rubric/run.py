"""Score one run: both views under both criteria, with its false successes, LLM usage, guards and decisions."""

from __future__ import annotations

import json
from pathlib import Path

from robot_team.contracts.decisions import count_decisions, count_takeovers
from robot_team.evaluation.rubric.published import score_view
from robot_team.evaluation.rubric.record import view_records
from robot_team.evaluation.rubric.scores import VIEWS, ReflectionJudge, RunScore
from robot_team.evaluation.rubric.strict import score_strict_view
from robot_team.evaluation.rubric.usage import llm_usage
from robot_team.evaluation.truth import RunTruth, false_successes, load_run
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.run_report import GUARD_KINDS


def score_run(events: list[TeamEventModel], *, run: str = '', judge: ReflectionJudge | None = None,
              judge_name: str = 'structural', truth: RunTruth | None = None) -> RunScore:
    """Score one run's event record in both views, with its LLM usage and guard counts.

    With the run's ground truth (``truth``, :func:`robot_team.evaluation.truth.ground_truth`) also
    under the strict criteria, with its false successes; without it the strict views are None.
    """
    events = list(events)
    if judge is not None:   # one judgment per reflection, shared by both views
        verdicts: dict[str, tuple[float, str]] = {}
        outer = judge

        def judge(reflection: dict, record: dict) -> tuple[float, str]:
            key = json.dumps(reflection, sort_keys=True, default=str)
            if key not in verdicts:
                verdicts[key] = outer(reflection, record)
            return verdicts[key]
    finished = [e for e in events if e.kind == EventKind.EPISODE_FINISHED.value]
    guards: dict[str, int] = {}
    for event in events:
        if event.kind in {k.value for k in GUARD_KINDS}:
            guards[event.kind] = guards.get(event.kind, 0) + 1
    views, strict = {}, {}
    for view in VIEWS:
        records = view_records(events, view)
        views[view] = score_view(events, view, judge=judge, _records=records)
        if truth is not None:
            strict[view] = score_strict_view(events, view, truth, published=views[view], _records=records)
    return RunScore(run=run, outcome=finished[-1].data.get('outcome', '') if finished else 'timeout',
                    attempted=views['attempted'], floor=views['floor'],
                    strict_attempted=strict.get('attempted'), strict_floor=strict.get('floor'),
                    false_successes=false_successes(truth) if truth is not None else None,
                    world_success=truth.episode.succeeded if truth is not None else None,
                    usage=llm_usage(events), guards=guards, decisions=count_decisions(events),
                    takeovers=count_takeovers(events), judge=judge_name if judge else 'structural')


def score_run_dir(run_dir, *, judge: ReflectionJudge | None = None, judge_name: str = 'structural') -> RunScore:
    """Read a run folder and score it under both criteria (see :func:`score_run`).

    Reads ``events.jsonl``, and ``staff.sqlite`` and ``scenario.json`` for the ground truth
    (:func:`robot_team.evaluation.truth.load_run`).

    Raises
    ------
    robot_team.evaluation.truth.TruthInputError
        If a file is missing or malformed (the message names it).
    """
    run_dir = Path(run_dir)
    events, truth = load_run(run_dir)
    return score_run(events, run=str(run_dir), judge=judge, judge_name=judge_name, truth=truth)
