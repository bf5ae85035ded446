"""One trial: run its episode (or reuse a finished one), then score it from its record and write ``score.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from robot_team.contracts.config import load_scenario
from robot_team.contracts.files import write_atomically
from robot_team.evaluation.rubric import ReflectionJudge, score_run_dir
from robot_team.evaluation.shift_run import case_rubric
from robot_team.evaluation.trials.results import TrialInterrupted, TrialResult
from robot_team.evaluation.trials.spec import (
    CHANCE_BRAIN, CHANCE_DIR, CONDITIONS, TRIAL_FILE, completed_trial, default_llm_clock, trial_dir, trial_spec)
from robot_team.evaluation.truth import load_run
from robot_team.run.episode import run_episode


def run_trial(scenario: str, out: Path, condition: str, trial: int, *, brain: str = 'protocol',
              domain_id: int | None = None, real_time_factor: float | None = None,
              judge: ReflectionJudge | None = None, judge_name: str = 'structural',
              on_event: Callable | None = None, llm_clock: str | None = None, local_llm=None,
              model: str | None = None, per_scenario: bool = False, namespace: str = '/',
              seed: int | None = None, chance: bool = False) -> TrialResult:
    """Run (or reuse) one trial and score it.

    ``llm_clock`` defaults to :func:`default_llm_clock`; ``local_llm``: a started local endpoint
    shared by the trials of ``brain`` 'local' (see :func:`robot_team.run.episode.run_episode`);
    ``model``: the name of the model it serves (recorded in ``trial.json``; a trial of another
    model is not reused). ``per_scenario`` puts the trial under ``DIR/<scenario name>/``
    (:func:`trial_dir`). ``namespace``: the team's ROS namespace (default '/'). ``seed`` (brain
    'random'): the random chooser's seed (default: ``trial``; recorded in ``trial.json``, a trial of
    another seed is not reused). ``chance``: a trial of the chance row (labelled ``chance/...``;
    ``out`` is then the chance folder, ``DIR/chance``).

    Raises
    ------
    ConfigError
        If the scenario cannot be loaded.
    ValueError
        If ``condition`` is unknown, or ``seed`` is not an integer >= 0.
    TrialInterrupted
        If the episode was interrupted (its folder keeps the record so far; it is run again
        when the evaluation resumes).
    """
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition '{condition}': expected one of {', '.join(CONDITIONS)}")
    loaded = load_scenario(scenario)
    folder = trial_dir(out, condition, trial, loaded.name if per_scenario else '')
    llm_clock = llm_clock or default_llm_clock(brain)
    if brain == CHANCE_BRAIN and seed is None:
        seed = trial
    spec = trial_spec(scenario, brain, condition, llm_clock, model, seed)
    info = completed_trial(folder, spec)
    reused = info is not None
    if not reused:
        info = run_trial_episode(scenario, folder, spec, trial, f'{loaded.name} {condition}', brain=brain,
                                 domain_id=domain_id, namespace=namespace, real_time_factor=real_time_factor,
                                 on_event=on_event, llm_clock=llm_clock, local_llm=local_llm)
    return score_trial(loaded, folder, info, reused, condition, trial, per_scenario=per_scenario, judge=judge,
                       judge_name=judge_name, chance=chance)


def run_trial_episode(scenario, folder: Path, spec: dict, trial: int, label: str, *, brain: str,
                      domain_id: int | None, namespace: str, real_time_factor: float | None,
                      on_event: Callable | None, llm_clock: str, local_llm) -> dict:
    """Run the episode of one trial in ``folder`` and write its ``trial.json``; return what it holds.

    ``scenario``: a name, path or loaded :class:`robot_team.contracts.config.Scenario`; ``spec``: what
    ran (:func:`trial_spec`; brain 'random': its ``seed``), recorded with the trial's number,
    outcome, wall time, namespace and ROS domain.

    Raises
    ------
    TrialInterrupted
        If the episode was interrupted (``trial.json`` says it is not complete).
    """
    start = time.monotonic()
    result = run_episode(scenario, folder, brain=brain, domain_id=domain_id, namespace=namespace,
                         real_time_factor=real_time_factor, on_event=on_event,
                         brain_options=dict(CONDITIONS[spec['condition']]), llm_clock=llm_clock, local_llm=local_llm,
                         seed=spec.get('seed') if brain == CHANCE_BRAIN else None)
    report = result.report
    interrupted = report.get('outcome') == 'interrupted'
    info = {**spec, 'trial': trial, 'complete': not interrupted, 'wall_time_s': round(time.monotonic() - start, 3),
            'outcome': report.get('outcome'), 'namespace': report.get('namespace'),
            'domain_id': report.get('domain_id')}
    write_atomically(Path(folder) / TRIAL_FILE, json.dumps(info, indent=2))
    if interrupted:
        name = report.get('interrupted_by') or 'SIGINT'
        raise TrialInterrupted(f'{label} trial {trial} interrupted by {name}', name)
    return info


def score_trial(loaded, folder: Path, info: dict, reused: bool, condition: str, trial: int, *,
                per_scenario: bool, judge: ReflectionJudge | None, judge_name: str,
                chance: bool = False) -> TrialResult:
    """Score a finished trial from its record in ``folder``, write its ``score.json``; return its result.

    ``chance``: a trial of the chance row (its run is labelled ``chance/...``).
    """
    score = score_run_dir(folder, judge=judge, judge_name=judge_name)
    score.run = (f"{f'{CHANCE_DIR}/' if chance else ''}{f'{loaded.name}/' if per_scenario else ''}"
                 f'{condition}/trial-{trial}')
    (folder / 'score.json').write_text(score.model_dump_json(indent=2))
    cases = []
    if len(loaded.cases) > 1:   # a shift: every case scored on its own, as the published rubric scores one onboarding
        events, _ = load_run(folder)
        cases = [{'patient_id': p.patient_id, **case_rubric(events, p.patient_id)} for p in loaded.cases]
        (folder / 'cases.json').write_text(json.dumps(cases, indent=2))
    return TrialResult(condition=condition, trial=trial, out_dir=str(folder), reused=reused,
                       wall_time_s=float(info.get('wall_time_s', 0.0)), score=score, scenario=loaded.name,
                       expected_outcome=loaded.expected_outcome or 'success', brain=str(info.get('brain', '')),
                       seed=info.get('seed'), chance=chance, cases=cases)
