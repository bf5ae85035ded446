"""Run an evaluation: plan every trial, run them one after another or side by side on Dask, aggregate.

:func:`run_trials` plans the trials of every (scenario, condition), and those of the chance row;
runs (or reuses) them in this process, or ``jobs`` at a time on Dask distributed
(:mod:`robot_team.evaluation.parallel`), the workers running the episodes and this process scoring
them; starts the local endpoint that brain 'local' shares; and returns the
:class:`~robot_team.evaluation.trials.results.EvalSummary`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from robot_team.contracts.config import load_scenario
from robot_team.evaluation.parallel import JobOutcome, JobsInterrupted, run_jobs
from robot_team.evaluation.rubric import ReflectionJudge
from robot_team.evaluation.trials.aggregate import summarize, with_chance
from robot_team.evaluation.trials.results import EvalSummary, TrialInterrupted, TrialResult, TrialsFailed
from robot_team.evaluation.trials.slots import parallel_domains, shared_local_settings
from robot_team.evaluation.trials.spec import (
    CHANCE_BRAIN, CHANCE_DIR, CONDITIONS, completed_trial, default_llm_clock, trial_dir, trial_spec)
from robot_team.evaluation.trials.trial import run_trial, run_trial_episode, score_trial
from robot_team.llm.factory import LLM_BRAINS
from robot_team.llm.local import LocalServer, resolve_model


@dataclass(frozen=True)
class _Planned:
    """One trial of an evaluation: what to run and where."""

    scenario: str           # as given (name or YAML path)
    name: str               # the scenario's name
    condition: str
    trial: int
    label: str              # the condition, or <scenario>/<condition> for several scenarios; 'chance ...'
    folder: Path
    spec: dict
    brain: str
    chance: bool = False    # a trial of the chance row (brain 'random', seed = trial)


def run_trials(scenario: str | list[str] | tuple[str, ...], out: Path, *,
               conditions: list[str] | tuple[str, ...] = ('baseline', 'kb'),
               trials: int = 5, brain: str = 'protocol', domain_id: int | None = None,
               real_time_factor: float | None = None, judge: ReflectionJudge | None = None,
               judge_name: str = 'structural',
               on_trial: Callable[[str, int, TrialResult | None], None] | None = None,
               on_event: Callable | None = None, llm_clock: str | None = None,
               model: str | None = None, jobs: int = 1, scheduler: str | None = None,
               chance: int = 0) -> EvalSummary:
    """Run ``trials`` trials of each (scenario, condition) (reusing finished ones), score, aggregate.

    ``scenario``: one scenario (name or YAML path; trials in ``DIR/<condition>/``) or several
    (trials in ``DIR/<scenario name>/<condition>/``). ``model`` (brain 'local'): the endpoint's
    model, a shipped model's name or alias or a ``.gguf`` path (default: the LLM settings'
    ``local.model``). ``on_trial(label, k, None)`` is called before a trial, ``on_trial(label, k,
    result)`` after it, ``label`` being the condition, or ``<scenario>/<condition>`` for several
    scenarios. Writes nothing but the trials' folders: see :func:`write_outputs`.

    ``jobs`` 1 and no ``scheduler``: one trial after another in this process (``domain_id`` for
    every one, the team in namespace '/'). Else ``jobs`` trials at a time on Dask distributed
    (:func:`robot_team.evaluation.parallel.run_jobs`): a local cluster of ``jobs`` worker
    processes, or the workers of the scheduler at ``scheduler`` (``tcp://HOST:PORT``; ``out``
    must then be a folder every worker sees). Trial ``k`` of the evaluation (from 1, in the
    order of scenarios, conditions and trials) runs its team in namespace ``/t<k>`` on the
    ROS domain of its slot (:func:`parallel_domains`); brain 'local' starts one endpoint here
    for all of them (:func:`shared_local_settings`). Results come in the same order either way.

    ``chance`` N > 0: besides, N trials of the random chooser (brain 'random', trial ``k`` with seed
    ``k``) per (scenario, condition), in ``DIR/chance/`` (laid out as ``DIR``), planned after the
    brain's trials and run the same way (resumed, side by side with ``jobs``); the summary gives
    each condition its chance row and margins (:func:`with_chance`), ``chance`` and ``chance_runs``.
    Brain 'random' itself has no chance row (``chance`` must be 0).

    Raises
    ------
    ValueError
        If a condition is unknown, ``trials`` or ``jobs`` is below 1, ``chance`` is below 0 or above 0
        with brain 'random', a scenario is named 'chance' with chance trials and several scenarios
        (its folder would be the chance folder), no scenario is given, the ROS domains are out of range,
        ``on_event`` is given with parallel trials (events stay in the workers), brain 'local' is given
        with ``scheduler`` (its endpoint listens on this machine's loopback only), or (brain 'local')
        the model is unknown (:class:`robot_team.llm.local.ModelChoiceError`).
    ConfigError
        If a scenario cannot be loaded.
    robot_team.evaluation.parallel.SchedulerError
        If no Dask scheduler answers at ``scheduler``.
    TrialInterrupted
        On SIGINT/SIGTERM; finished trials are kept.
    TrialsFailed
        Parallel trials only: trials that raised in a worker, once every other trial has
        finished and been written (a trial run one after another raises its own error at once).
    """
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown condition(s) {', '.join(unknown)}: expected {', '.join(CONDITIONS)}")
    if trials < 1:
        raise ValueError(f'trials must be at least 1, got {trials}')
    if isinstance(chance, bool) or not isinstance(chance, int) or chance < 0:
        raise ValueError(f'chance trials (--chance) must be an integer >= 0, got {chance!r}')
    if chance and brain == CHANCE_BRAIN:
        raise ValueError(f"chance trials (--chance {chance}) with brain '{CHANCE_BRAIN}': the random chooser is the "
                         'chance baseline itself; use --chance 0')
    parallel = jobs != 1 or scheduler is not None
    domains = parallel_domains(domain_id, jobs) if parallel else None
    if parallel and on_event is not None:
        raise ValueError('on_event cannot be used with parallel trials (jobs > 1 or a scheduler): the events '
                         'stay in the worker processes; read each trial\'s events.jsonl instead')
    if brain == 'local' and scheduler is not None:
        raise ValueError("--brain local with --scheduler: the local endpoint listens on this machine's loopback "
                         'only, so other hosts cannot reach it; use --jobs N (a local cluster) instead')
    scenarios = list(dict.fromkeys([scenario] if isinstance(scenario, str) else scenario))
    if not scenarios:
        raise ValueError('no scenario to evaluate')
    loaded = {s: load_scenario(s) for s in scenarios}
    per_scenario = len(scenarios) > 1
    if chance and per_scenario and CHANCE_DIR in {sc.name for sc in loaded.values()}:
        raise ValueError(f"scenario '{CHANCE_DIR}': with several scenarios its trials would share "
                         f'{Path(out) / CHANCE_DIR} with the chance trials; rename the scenario or use --chance 0')
    start = time.monotonic()
    llm_clock = llm_clock or default_llm_clock(brain)
    served = resolve_model(model).name if brain == 'local' else None
    chance_clock = llm_clock if brain in LLM_BRAINS else default_llm_clock(CHANCE_BRAIN)

    def planned(s: str, condition: str, k: int, chance_row: bool) -> _Planned:
        label = f'{loaded[s].name}/{condition}' if per_scenario else condition
        root = Path(out) / CHANCE_DIR if chance_row else Path(out)
        kind = CHANCE_BRAIN if chance_row else brain
        seed = k if kind == CHANCE_BRAIN else None
        spec = trial_spec(s, kind, condition, chance_clock if chance_row else llm_clock,
                          None if chance_row else served, seed)
        return _Planned(s, loaded[s].name, condition, k, f'{CHANCE_DIR} {label}' if chance_row else label,
                        trial_dir(root, condition, k, loaded[s].name if per_scenario else ''), spec, kind, chance_row)
    plan = [planned(s, condition, k, False)
            for s in scenarios for condition in dict.fromkeys(conditions) for k in range(1, trials + 1)]
    plan += [planned(s, condition, k, True)
             for s in scenarios for condition in dict.fromkeys(conditions) for k in range(1, chance + 1)]
    options = dict(real_time_factor=real_time_factor, model=model, judge=judge, judge_name=judge_name,
                   on_trial=on_trial, per_scenario=per_scenario)
    if parallel:
        done = _run_parallel(plan, loaded, jobs=jobs, scheduler=scheduler, domains=domains, **options)
    else:
        done = _run_sequential(plan, out, domain_id=domain_id, on_event=on_event, served=served, **options)
    results = [r for r in done if not r.chance]
    chance_results = [r for r in done if r.chance]
    summaries, chance_summaries = [], []
    for s in scenarios:
        for c in dict.fromkeys(conditions):
            name = loaded[s].name
            row = summarize(c, [r for r in chance_results if r.condition == c and r.scenario == name], name) \
                if chance else None
            if row is not None:
                chance_summaries.append(row)
            summaries.append(with_chance(
                summarize(c, [r for r in results if r.condition == c and r.scenario == name], name), row))
    return EvalSummary(scenario=', '.join(loaded[s].name for s in scenarios),
                       scenarios=[loaded[s].name for s in scenarios], model=served, brain=brain, trials=trials,
                       judge=judge_name, conditions=summaries, runs=results,
                       wall_time_s=round(time.monotonic() - start, 3), jobs=jobs, scheduler=scheduler,
                       chance_trials=chance, chance=chance_summaries, chance_runs=chance_results)


def _run_sequential(plan: list[_Planned], out: Path, *, domain_id: int | None,
                    real_time_factor: float | None, model: str | None, served: str | None,
                    judge: ReflectionJudge | None, judge_name: str, on_trial: Callable | None,
                    on_event: Callable | None, per_scenario: bool) -> list[TrialResult]:
    """Run (or reuse) the planned trials one after another in this process; return their results in order."""
    results: list[TrialResult] = []
    local = None   # brain 'local': one endpoint for every trial (started at the first trial that runs)
    try:
        for p in plan:
            if on_trial is not None:
                on_trial(p.label, p.trial, None)
            if p.brain == 'local' and local is None and completed_trial(p.folder, p.spec) is None:
                local = LocalServer(model=model).start()
            result = run_trial(p.scenario, Path(out) / CHANCE_DIR if p.chance else Path(out), p.condition, p.trial,
                               brain=p.brain, domain_id=domain_id, real_time_factor=real_time_factor, judge=judge,
                               judge_name=judge_name, on_event=on_event, llm_clock=p.spec.get('llm_clock'),
                               local_llm=local if p.brain == 'local' else None,
                               model=served if p.brain == 'local' else None, per_scenario=per_scenario,
                               seed=p.spec.get('seed'), chance=p.chance)
            results.append(result)
            if on_trial is not None:
                on_trial(p.label, p.trial, result)
    finally:
        if local is not None:
            local.stop()
    return results


def _run_parallel(plan: list[_Planned], loaded: dict, *, jobs: int, scheduler: str | None, domains: range,
                  real_time_factor: float | None, model: str | None,
                  judge: ReflectionJudge | None, judge_name: str, on_trial: Callable | None,
                  per_scenario: bool) -> list[TrialResult]:
    """Run the planned trials ``jobs`` at a time on Dask (reusing finished ones); return their results in order.

    Workers run the episodes (:func:`_trial_job`); this process scores each trial as it ends.
    """
    results: dict[int, TrialResult] = {}
    todo = []
    for index, p in enumerate(plan):
        info = completed_trial(p.folder, p.spec)
        if info is None:
            todo.append(index)
            continue
        if on_trial is not None:
            on_trial(p.label, p.trial, None)
        results[index] = score_trial(loaded[p.scenario], p.folder, info, True, p.condition, p.trial,
                                     per_scenario=per_scenario, judge=judge, judge_name=judge_name, chance=p.chance)
        if on_trial is not None:
            on_trial(p.label, p.trial, results[index])
    if not todo:
        return [results[i] for i in sorted(results)]
    local = LocalServer(settings=shared_local_settings(jobs), model=model).start() \
        if any(plan[i].brain == 'local' for i in todo) else None
    endpoint = local.endpoint() if local is not None else None
    items = [{'scenario': loaded[plan[i].scenario], 'folder': str(plan[i].folder.resolve()), 'spec': plan[i].spec,
              'trial': plan[i].trial, 'label': f'{plan[i].name} {plan[i].condition}', 'brain': plan[i].brain,
              'domains': domains, 'namespace': f'/t{i + 1}', 'real_time_factor': real_time_factor,
              'llm_clock': plan[i].spec.get('llm_clock', 'realtime'),
              'local_llm': endpoint if plan[i].brain == 'local' else None} for i in todo]
    failures: dict[str, str] = {}

    def submitted(n: int, _slot: int) -> None:
        if on_trial is not None:
            on_trial(plan[todo[n]].label, plan[todo[n]].trial, None)

    def ended(outcome: JobOutcome) -> None:
        p = plan[todo[outcome.index]]
        if outcome.error is None and not (p.folder / 'events.jsonl').is_file():
            outcome.error = FileNotFoundError(f"{p.folder / 'events.jsonl'} is not here: the worker wrote the trial "
                                              'where this machine does not see it (with --scheduler, --out must '
                                              'be a folder every worker shares)')
        if outcome.error is not None:
            failures[f'{p.label} trial {p.trial}'] = f'{type(outcome.error).__name__}: {outcome.error}'
            return
        results[todo[outcome.index]] = result = score_trial(
            loaded[p.scenario], p.folder, outcome.value, False, p.condition, p.trial, per_scenario=per_scenario,
            judge=judge, judge_name=judge_name, chance=p.chance)
        if on_trial is not None:
            on_trial(p.label, p.trial, result)
    try:
        run_jobs(_trial_job, items, jobs=jobs, scheduler=scheduler, on_submit=submitted, on_done=ended)
    except JobsInterrupted as exc:
        raise TrialInterrupted(f'{exc.signal_name} received: {len(results)} finished trial(s) kept, '
                               'the ones running were stopped', exc.signal_name) from exc
    finally:
        if local is not None:
            local.stop()
    if failures:
        raise TrialsFailed(failures)
    return [results[i] for i in sorted(results)]


def _trial_job(job: dict, slot: int) -> dict:
    """Run one trial's episode in a Dask worker (:func:`_run_parallel`); return its ``trial.json`` content.

    The team runs in namespace ``job['namespace']`` on ROS domain ``job['domains'][slot]``: no
    other trial running at the same time has that slot.

    Raises
    ------
    TrialInterrupted
        If the episode was interrupted.
    """
    return run_trial_episode(job['scenario'], Path(job['folder']), job['spec'], job['trial'], job['label'],
                             brain=job['brain'], domain_id=job['domains'][slot], namespace=job['namespace'],
                             real_time_factor=job['real_time_factor'], on_event=None, llm_clock=job['llm_clock'],
                             local_llm=job['local_llm'])
