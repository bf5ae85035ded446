"""Run the published evaluation as trials over scenarios and conditions, score them, aggregate and write the tables.

Layout of an evaluation folder ``DIR``::

    DIR/<condition>/trial-<k>/   one episode (report.json, events.jsonl, ...) plus trial.json
                                 (what ran) and score.json (its rubric score): one scenario
    DIR/<scenario>/<condition>/trial-<k>/   the same, when several scenarios are evaluated
    DIR/chance/<condition>/trial-<k>/        the chance baseline's trials (brain 'random', seed k),
    DIR/chance/<scenario>/<condition>/trial-<k>/   beside every (scenario, condition) evaluated
    DIR/eval.json                everything: per-run scores with every cell, means, the reference
    DIR/runs.csv                 one row per run; DIR/cells.csv one row per cell, view and criteria
    DIR/metrics.csv              metric means per scenario, condition, view and criteria, with the published means
    DIR/summary.md               tables shaped like the published Tables III and IV
    DIR/summary.png              success rate and metric means per condition vs. the published

Trials run per (scenario, condition); each run's outcome is compared with its scenario's expected
outcome (``success`` when the scenario names none), as ``robot-team run``'s exit code does.
A trial whose ``trial.json`` matches what is asked (scenario, brain, condition, and the model for
brain 'local', the seed for brain 'random') is reused, not rerun, so an interrupted evaluation
resumes where it stopped. Reused trials are rescored from their record (events.jsonl, with
staff.sqlite and scenario.json for the ground truth: the record is the only input of scoring).

Every run is scored under two criteria (:mod:`robot_team.evaluation.rubric`): ``published`` (the
paper's, comparable with the reference row) and ``strict`` (the same cells held to the run's ground
truth, :mod:`robot_team.evaluation.truth`), each in both views, with the run's false successes
(successes the team claimed that the world contradicts). Columns added to a CSV file are appended,
so positional readers of the earlier columns are unaffected.

The chance row (``chance`` N > 0; ``robot-team eval --chance``, 2 by default there): N trials of the
random chooser (brain 'random', :mod:`robot_team.llm.chance`; trial ``k`` with seed ``k``) per
(scenario, condition), run and resumed like the others, and per (scenario, condition) and rubric
view the brain's mean points and success rate, the chance trials', and the margin (the brain's
minus chance's): :class:`ConditionSummary`'s ``chance_*`` and ``margin_*`` fields. An evaluation
of brain 'random' has no chance row (it is one).

Trials run one after another in this process (``jobs`` 1), or side by side on Dask distributed
(``jobs`` N > 1, or a ``scheduler``'s address; :mod:`robot_team.evaluation.parallel`): each team in
its own namespace (``/t<k>``, ``k`` the trial's position in the evaluation, from 1) and its own
ROS domain (the base domain plus the slot it runs in, so that no two teams running at once share
one). Workers run the episodes and write each trial's record and ``trial.json``; this process
scores them, so the scores are the same whatever ``jobs`` is.
"""

from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from robot_team.evaluation.rubric import (
    CRITERIA,
    METRIC_LABELS,
    PUBLISHED_REFERENCE,
    VIEWS,
    Metric,
    ReflectionJudge,
    RunScore,
    ViewScore,
    score_run_dir,
)
from robot_team.evaluation.parallel import JobOutcome, JobsInterrupted, run_jobs
from robot_team.config import load_scenario
from robot_team.llm.chance import chance_model_name, check_seed
from robot_team.llm.factory import LLM_BRAINS
from robot_team.llm.local import LocalServer, resolve_model
from robot_team.llm.settings import LLMSettings, LocalServerSettings
from robot_team.evaluation.shift_run import case_rubric
from robot_team.evaluation.truth import load_run
from robot_team.runner import run_episode

CONDITIONS: dict[str, dict] = {'baseline': {'kb': False}, 'kb': {'kb': True},
                               'baseline-free': {'kb': False, 'llm_decoding': 'free'},
                               'kb-free': {'kb': True, 'llm_decoding': 'free'}}
"""Conditions and the brain options each passes: the published comparison (knowledge base off/on), with
constrained decoding (LLM settings default, ``robot_team.llm.decoding``), and the same with ``free``
decoding (the full schemas, as the published free-running team had)."""

CONDITION_LABELS = {'baseline': 'Baseline (no KB)', 'kb': 'With KB',
                    'baseline-free': 'Baseline (no KB), free decoding', 'kb-free': 'With KB, free decoding'}
TRIAL_FILE = 'trial.json'
CHANCE_DIR = 'chance'
"""The folder of an evaluation's chance trials (``DIR/chance/...``)."""
CHANCE_BRAIN = 'random'
"""The brain of the chance trials: the random chooser."""
CHANCE_SOURCE = 'chance (random chooser)'
MARGIN_SOURCE = 'margin over chance'
"""``metrics.csv`` sources of the chance row and of the margins (this evaluation's value minus chance's)."""


class TrialInterrupted(RuntimeError):
    """A trial was interrupted (SIGINT/SIGTERM): the evaluation stops; finished trials are kept."""

    def __init__(self, message: str, signal_name: str):
        super().__init__(message)
        self.signal_name = signal_name

    def __reduce__(self):
        """Pickle with both arguments (it may come back from a Dask worker)."""
        return type(self), (str(self), self.signal_name)


class TrialsFailed(RuntimeError):
    """Trials that raised in a Dask worker (``jobs`` > 1); the others finished and were written.

    Attributes
    ----------
    failures : dict[str, str]
        ``'<label> trial <k>'`` -> the error (type and message).
    """

    def __init__(self, failures: dict[str, str]):
        lines = '; '.join(f'{name}: {error}' for name, error in failures.items())
        super().__init__(f'{len(failures)} trial(s) failed: {lines}')
        self.failures = failures

    def __reduce__(self):
        """Pickle with its failures."""
        return type(self), (self.failures,)


class TrialResult(BaseModel):
    """One trial: its scenario, where it ran, whether it was reused, its score and expected outcome."""

    condition: str
    trial: int
    out_dir: str
    reused: bool
    wall_time_s: float
    score: RunScore
    scenario: str = Field('', description="The scenario's name.")
    expected_outcome: str = Field('success', description="The scenario's expected outcome ('success' if it "
                                  'names none).')
    brain: str = Field('', description='The brain of the trial.')
    seed: int | None = Field(None, description="Brain 'random': the random chooser's seed.")
    chance: bool = Field(False, description="A trial of the evaluation's chance row (the random chooser).")
    cases: list[dict] = Field(default_factory=list, description='With several patients (a shift): each case '
                              'scored on its own events as one onboarding: patient_id, attempted, floor, rubric_max '
                              '(robot_team.evaluation.shift_run.case_rubric).')

    @property
    def as_expected(self) -> bool:
        """Whether the run's outcome is its scenario's expected one."""
        return self.score.outcome == self.expected_outcome


class ConditionSummary(BaseModel):
    """Means of one condition of one scenario over its trials."""

    condition: str
    runs: int
    scenario: str = ''
    expected_outcome: str = 'success'
    as_expected: int = Field(0, description="Runs whose outcome is the scenario's expected one.")
    success_rate: dict[str, float] = Field(description='Per view: total points / total applicable points.')
    points_mean: dict[str, float]
    max_points_mean: float
    cost_per_run_usd: float
    prompt_tokens_per_run: float
    cached_prompt_tokens_per_run: float = Field(0.0, description="Of those, taken from the endpoint's prompt cache.")
    completion_tokens_per_run: float
    llm_requests_per_run: float
    metric_means: dict[str, dict[str, float | None]] = Field(
        description='Per view, per metric: mean over the applicable cells of every run.')
    outcomes: dict[str, int]
    wall_time_per_run_s: float
    llm_decisions_per_run: float = 0.0
    fallback_decisions_per_run: float = Field(0.0, description='Decisions the protocol brain made in the '
                                              "LLM's place (endpoint down, takeover), per run.")
    takeovers_per_run: float = 0.0
    choices_per_decision: float | None = None
    chance_runs: int = Field(0, description="The chance row's trials of this scenario and condition (0: none).")
    chance_points_mean: dict[str, float] | None = Field(
        None, description='Per view: the mean points of the chance trials (the random chooser).')
    chance_success_rate: dict[str, float] | None = Field(
        None, description='Per view: total points / total applicable points of the chance trials.')
    margin_points: dict[str, float] | None = Field(
        None, description="Per view: mean points minus the chance trials' (the margin over chance).")
    margin_success_rate: dict[str, float] | None = Field(
        None, description="Per view: success rate minus the chance trials'.")
    strict_success_rate: dict[str, float] = Field(default_factory=dict, description='Per view, under the strict '
                                                  'criteria (empty: no run had its ground truth).')
    strict_points_mean: dict[str, float] = Field(default_factory=dict)
    strict_metric_means: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    false_successes: int = Field(0, description='Successes claimed that the world contradicts, over all runs.')
    false_successes_per_run: float = 0.0
    world_successes: int = Field(0, description='Runs in which the world shows the onboarding done.')


class EvalSummary(BaseModel):
    """An evaluation: what ran, every trial, the means per scenario and condition, the published reference."""

    scenario: str = Field(description="The scenarios' names, comma-separated.")
    scenarios: list[str] = Field(default_factory=list)
    model: str | None = Field(None, description="Brain 'local': the model the endpoint served.")
    brain: str
    trials: int
    judge: str
    conditions: list[ConditionSummary]
    runs: list[TrialResult]
    reference: dict = Field(default_factory=lambda: dict(PUBLISHED_REFERENCE))
    wall_time_s: float = 0.0
    jobs: int = Field(1, description='Trials at a time (1: one after another in one process).')
    scheduler: str | None = Field(None, description='The Dask scheduler whose workers ran the trials (None: '
                                  'this machine).')
    chance_trials: int = Field(0, description="Chance trials per scenario and condition (brain 'random', seed = "
                               'trial number); 0: no chance row.')
    chance: list[ConditionSummary] = Field(default_factory=list, description='The chance trials per scenario and '
                                           'condition.')
    chance_runs: list[TrialResult] = Field(default_factory=list, description='Every chance trial.')


def default_llm_clock(brain: str) -> str:
    """Return the LLM clock of trials of ``brain``: 'lockstep' for LLM brains (decisions, not latency).

    Other brains: 'realtime'.
    """
    return 'lockstep' if brain in LLM_BRAINS else 'realtime'


def trial_dir(out: Path, condition: str, trial: int, scenario: str = '') -> Path:
    """Return the folder of trial ``trial`` (from 1) of ``condition``, under ``scenario`` when given.

    ``DIR/<condition>/trial-<k>`` for an evaluation of one scenario (``scenario`` ''),
    ``DIR/<scenario>/<condition>/trial-<k>`` for several.
    """
    return Path(out) / scenario / condition / f'trial-{trial}'


def _trial_spec(scenario: str, brain: str, condition: str, llm_clock: str = 'realtime',
                model: str | None = None, seed: int | None = None) -> dict:
    spec = {'scenario': scenario, 'brain': brain, 'condition': condition, 'brain_options': CONDITIONS[condition]}
    if brain in LLM_BRAINS:
        spec['llm_clock'] = llm_clock
    if brain == 'local' and model:
        spec['model'] = model
    if brain == CHANCE_BRAIN:
        spec['seed'] = check_seed(seed, 'the chance seed')
        spec['model'] = chance_model_name(seed)
    return spec


def completed_trial(folder: Path, spec: dict) -> dict | None:
    """Return the ``trial.json`` of a finished trial in ``folder`` that ran ``spec``, else None."""
    try:
        info = json.loads((Path(folder) / TRIAL_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not (Path(folder) / 'events.jsonl').is_file() or not info.get('complete'):
        return None
    return info if all(info.get(k) == v for k, v in spec.items()) else None


def run_trial(scenario: str, out: Path, condition: str, trial: int, *, brain: str = 'protocol',
              domain_id: int | None = None, real_time_factor: float | None = None,
              judge: ReflectionJudge | None = None, judge_name: str = 'structural',
              on_event: Callable | None = None, llm_clock: str | None = None, local_llm=None,
              model: str | None = None, per_scenario: bool = False, namespace: str = '/',
              seed: int | None = None, chance: bool = False) -> TrialResult:
    """Run (or reuse) one trial and score it.

    ``llm_clock`` defaults to :func:`default_llm_clock`; ``local_llm``: a started local endpoint
    shared by the trials of ``brain`` 'local' (see :func:`robot_team.runner.run_episode`);
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
    spec = _trial_spec(scenario, brain, condition, llm_clock, model, seed)
    info = completed_trial(folder, spec)
    reused = info is not None
    if not reused:
        info = _run_trial_episode(scenario, folder, spec, trial, f'{loaded.name} {condition}', brain=brain,
                                  domain_id=domain_id, namespace=namespace, real_time_factor=real_time_factor,
                                  on_event=on_event, llm_clock=llm_clock, local_llm=local_llm)
    return _score_trial(loaded, folder, info, reused, condition, trial, per_scenario=per_scenario, judge=judge,
                        judge_name=judge_name, chance=chance)


def _run_trial_episode(scenario, folder: Path, spec: dict, trial: int, label: str, *, brain: str,
                       domain_id: int | None, namespace: str, real_time_factor: float | None,
                       on_event: Callable | None, llm_clock: str, local_llm) -> dict:
    """Run the episode of one trial in ``folder`` and write its ``trial.json``; return what it holds.

    ``scenario``: a name, path or loaded :class:`robot_team.config.Scenario`; ``spec``: what
    ran (:func:`_trial_spec`; brain 'random': its ``seed``), recorded with the trial's number,
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
    (Path(folder) / TRIAL_FILE).write_text(json.dumps(info, indent=2))
    if interrupted:
        name = report.get('interrupted_by') or 'SIGINT'
        raise TrialInterrupted(f'{label} trial {trial} interrupted by {name}', name)
    return info


def _score_trial(loaded, folder: Path, info: dict, reused: bool, condition: str, trial: int, *,
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


def _pooled(scores: list[ViewScore], n: int) -> tuple[float, float, dict[str, float | None]]:
    """Return the success rate (points / applicable points), mean points and metric means of ``scores``."""
    total_max = sum(s.max_points for s in scores)
    means = {}
    for metric in Metric:
        cells = [c.score for s in scores for c in s.cells if c.metric is metric and c.score is not None]
        means[metric.value] = sum(cells) / len(cells) if cells else None
    return (sum(s.points for s in scores) / total_max if total_max else 0.0), sum(s.points for s in scores) / n, means


def summarize(condition: str, runs: list[TrialResult], scenario: str = '') -> ConditionSummary:
    """Return the means of ``condition`` (of ``scenario``) over ``runs`` (cells pooled across runs for metric means).

    The strict figures pool the runs scored with their ground truth (every run of an evaluation).
    """
    n = max(len(runs), 1)
    rates, points, means = {}, {}, {}
    strict_rates, strict_points, strict_means = {}, {}, {}
    truthful = [r for r in runs if r.score.false_successes is not None]
    for view in VIEWS:
        rates[view], points[view], means[view] = _pooled([r.score.view(view) for r in runs], n)
        if truthful:
            strict_rates[view], strict_points[view], strict_means[view] = _pooled(
                [r.score.view(view, 'strict') for r in truthful], len(truthful))
    outcomes: dict[str, int] = {}
    for r in runs:
        outcomes[r.score.outcome] = outcomes.get(r.score.outcome, 0) + 1
    return ConditionSummary(
        condition=condition, runs=len(runs), scenario=scenario,
        expected_outcome=runs[0].expected_outcome if runs else 'success',
        as_expected=sum(r.as_expected for r in runs), success_rate=rates, points_mean=points,
        max_points_mean=sum(r.score.attempted.max_points for r in runs) / n,
        cost_per_run_usd=sum(r.score.usage.cost_usd for r in runs) / n,
        prompt_tokens_per_run=sum(r.score.usage.prompt_tokens for r in runs) / n,
        cached_prompt_tokens_per_run=sum(r.score.usage.cached_prompt_tokens for r in runs) / n,
        completion_tokens_per_run=sum(r.score.usage.completion_tokens for r in runs) / n,
        llm_requests_per_run=sum(r.score.usage.requests for r in runs) / n,
        metric_means=means, outcomes=outcomes, wall_time_per_run_s=sum(r.wall_time_s for r in runs) / n,
        llm_decisions_per_run=sum(r.score.decisions.get('llm', 0) for r in runs) / n,
        fallback_decisions_per_run=sum(r.score.decisions.get('fallback', 0) for r in runs) / n,
        takeovers_per_run=sum(r.score.takeovers for r in runs) / n,
        choices_per_decision=_mean([r.score.usage.choices_per_decision for r in runs]),
        strict_success_rate=strict_rates, strict_points_mean=strict_points, strict_metric_means=strict_means,
        false_successes=sum(len(r.score.false_successes or []) for r in runs),
        false_successes_per_run=sum(len(r.score.false_successes or []) for r in runs) / n,
        world_successes=sum(bool(r.score.world_success) for r in runs))


def with_chance(summary: ConditionSummary, chance: ConditionSummary | None) -> ConditionSummary:
    """Return ``summary`` with its chance row: the chance trials' means and the margins over them, per view.

    ``chance``: the summary of the chance trials of the same scenario and condition (None, or no
    runs: ``summary`` unchanged, its chance fields None). Margin: ``summary``'s value minus chance's.
    """
    if chance is None or not chance.runs:
        return summary
    return summary.model_copy(update={
        'chance_runs': chance.runs, 'chance_points_mean': dict(chance.points_mean),
        'chance_success_rate': dict(chance.success_rate),
        'margin_points': {view: summary.points_mean[view] - chance.points_mean[view] for view in VIEWS},
        'margin_success_rate': {view: summary.success_rate[view] - chance.success_rate[view] for view in VIEWS}})


MAX_DOMAIN_ID = 232
"""The largest ROS domain ID (on Linux; DDS ports overflow above it)."""


def parallel_domains(domain_id: int | None, jobs: int) -> range:
    """Return the ROS domain IDs of trials running side by side: the base domain plus each slot (0 to ``jobs - 1``).

    The base is ``domain_id``, else ``$ROS_DOMAIN_ID``, else 0.

    Raises
    ------
    ValueError
        If ``jobs`` is below 1, ``$ROS_DOMAIN_ID`` is not an integer, or a domain ID falls outside
        0 to :data:`MAX_DOMAIN_ID` (the message names the option and the range it needs).
    """
    if jobs < 1:
        raise ValueError(f'--jobs must be at least 1, got {jobs}')
    if domain_id is None:
        text = os.environ.get('ROS_DOMAIN_ID', '') or '0'
        try:
            domain_id = int(text)
        except ValueError:
            raise ValueError(f"ROS_DOMAIN_ID '{text}' is not an integer (expected 0 to {MAX_DOMAIN_ID})") from None
    domains = range(domain_id, domain_id + jobs)
    if domain_id < 0 or domains[-1] > MAX_DOMAIN_ID:
        raise ValueError(f'--domain-id {domain_id} with --jobs {jobs} needs ROS domain IDs {domain_id} to '
                         f'{domains[-1]}: expected them within 0 to {MAX_DOMAIN_ID}')
    return domains


def shared_local_settings(jobs: int, settings: LocalServerSettings | None = None) -> LocalServerSettings:
    """Return the local endpoint's settings for ``jobs`` teams at once: ``jobs`` times the slots and the context.

    One slot per robot of every team running, each with the context a slot has for one team
    (``ctx_size / parallel``), so no team waits for another's slot; llama.cpp decodes the slots
    in one batch on the same ``threads``, so requests are slower as more run at once.
    """
    settings = settings or LLMSettings().local
    return settings.model_copy(update={'parallel': settings.parallel * jobs, 'ctx_size': settings.ctx_size * jobs})


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
        spec = _trial_spec(s, kind, condition, chance_clock if chance_row else llm_clock,
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
        results[index] = _score_trial(loaded[p.scenario], p.folder, info, True, p.condition, p.trial,
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
        results[todo[outcome.index]] = result = _score_trial(
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
    return _run_trial_episode(job['scenario'], Path(job['folder']), job['spec'], job['trial'], job['label'],
                              brain=job['brain'], domain_id=job['domains'][slot], namespace=job['namespace'],
                              real_time_factor=job['real_time_factor'], on_event=None, llm_clock=job['llm_clock'],
                              local_llm=job['local_llm'])


# --- Outputs -----------------------------------------------------------------------------------

def _pct(value: float | None) -> str:
    return '-' if value is None else f'{100 * value:.2f}%'


def _mean(values: list[float | None]) -> float | None:
    """Return the mean of the values that are not None (None if none is)."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _cached(c: ConditionSummary) -> str:
    """Return ' (N cached)' for a condition whose endpoint took prompt tokens from its cache ('' otherwise)."""
    return f' ({c.cached_prompt_tokens_per_run:.0f} cached)' if c.cached_prompt_tokens_per_run else ''


def _num(value: float | None, digits: int = 3) -> str:
    return '-' if value is None else f'{value:.{digits}f}'


def _label(summary: EvalSummary, c: ConditionSummary) -> str:
    """Return a condition's label, prefixed with its scenario when the evaluation has several."""
    label = CONDITION_LABELS.get(c.condition, c.condition)
    return f'{c.scenario}: {label}' if len(summary.scenarios) > 1 else label


def _strict_cells(score) -> tuple[str, str]:
    """Return a run's strict points (attempted / floor of max) and its false successes as table cells ('-': none)."""
    strict = '-' if score.strict_attempted is None or score.strict_floor is None else \
        f'{score.strict_attempted.points:g} / {score.strict_floor.points:g} of {score.strict_attempted.max_points:g}'
    return strict, '-' if score.false_successes is None else str(len(score.false_successes))


def markdown(summary: EvalSummary) -> str:
    """Return the evaluation as Markdown tables shaped like the published Tables III and IV (a row per scenario)."""
    ref = summary.reference
    model = ref['model']
    served = f', model {summary.model}' if summary.model else ''
    lines = [f'# Evaluation: {summary.scenario}, brain {summary.brain}{served}, {summary.trials} trial(s) per '
             'condition', '', f'Reflection judge: {summary.judge}. Attempted: what the brains tried (refused attempts '
             "count against); floor: what happened after the guards. As expected: runs whose outcome is the scenario's "
             'expected one. Two criteria: published (the paper\'s, comparable with the published rows) and strict '
             '(the same cells held to the ground truth of the simulator, the RTLS and the staff directory: '
             'docs/evaluation.md). False successes: successes the team claimed (a manager\'s judgment, the '
             'episode\'s outcome) that the world contradicts.', '',
             '## Success rate and cost per run (cf. Table III)', '',
             '| Scenario | Condition | Runs | As expected | Success rate (attempted) | Success rate (floor) '
             '| Strict success rate (attempted) | Strict success rate (floor) | False successes '
             '| Points (attempted/floor) | Cost per run (USD) | Prompt tokens per run | Completion tokens per run '
             '| Fallback decisions per run | Takeovers per run | Choices per decision | Wall s per run |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    for c in summary.conditions:
        label = CONDITION_LABELS.get(c.condition, c.condition)
        lines.append(f"| {c.scenario} | {label} | {c.runs} | {c.as_expected}/{c.runs} ({c.expected_outcome}) "
                     f"| {_pct(c.success_rate['attempted'])} | {_pct(c.success_rate['floor'])} "
                     f"| {_pct(c.strict_success_rate.get('attempted'))} | {_pct(c.strict_success_rate.get('floor'))} "
                     f'| {c.false_successes} '
                     f"| {c.points_mean['attempted']:.2f} / {c.points_mean['floor']:.2f} of {c.max_points_mean:g} "
                     f'| {c.cost_per_run_usd:.4f} | {c.prompt_tokens_per_run:.0f}{_cached(c)} '
                     f'| {c.completion_tokens_per_run:.0f} | {c.fallback_decisions_per_run:.1f} '
                     f'| {c.takeovers_per_run:.1f} | {_num(c.choices_per_decision, 1)} | {c.wall_time_per_run_s:.0f} |')
    for condition in ('baseline', 'kb'):
        lines.append(f"| - | Published, {CONDITION_LABELS[condition]} ({model}) | {ref['runs_per_condition']} | - "
                     f"| {_pct(ref['success_rate'][condition])} | - | - | - | - | - "
                     f"| {ref['cost_per_run_usd'][condition]:.4f} | - | - | - | - | - | - |")
    lines += _chance_markdown(summary)
    header = ['Metric']
    for c in summary.conditions:
        label = _label(summary, c)
        header += [f'{label} (attempted)', f'{label} (floor)', f'{label} (strict, attempted)',
                   f'{label} (strict, floor)']
    header += [f'Published, {CONDITION_LABELS["baseline"]}', f'Published, {CONDITION_LABELS["kb"]}']
    lines += ['', '## Metric means (cf. Table IV)', '', '| ' + ' | '.join(header) + ' |',
              '|' + '---|' * len(header)]
    for metric in Metric:
        row = [METRIC_LABELS[metric]]
        for c in summary.conditions:
            row += [_num(c.metric_means['attempted'][metric.value]), _num(c.metric_means['floor'][metric.value])]
            row += [_num(c.strict_metric_means.get(view, {}).get(metric.value)) for view in VIEWS]
        row += [_num(ref['metric_means']['baseline'][metric.value]), _num(ref['metric_means']['kb'][metric.value])]
        lines.append('| ' + ' | '.join(row) + ' |')
    lines += ['', '## Runs', '', 'Decisions by source: llm (the LLM), fallback (the protocol brain in its place: '
              'endpoint down, or a takeover after a stall; the attempted view leaves these out), human.', '',
              '| Scenario | Run | Outcome | Expected | Points (attempted/floor) | Strict points (attempted/floor) '
              '| False successes | LLM decisions | Fallback decisions | Takeovers | Human decisions |',
              '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in summary.runs:
        s, d = r.score, r.score.decisions
        strict, false = _strict_cells(s)
        lines.append(f'| {r.scenario} | {r.condition}/trial-{r.trial} | {s.outcome} | {r.expected_outcome} '
                     f'| {s.attempted.points:g} / {s.floor.points:g} of {s.attempted.max_points:g} | {strict} '
                     f"| {false} | {d.get('llm', 0)} | {d.get('fallback', 0)} | {s.takeovers} | {d.get('human', 0)} |")
    if summary.chance_runs:
        lines += ['', '## Chance runs', '', '| Scenario | Run | Seed | Outcome | Expected | Points (attempted/floor) '
                  '| Strict points (attempted/floor) | False successes | LLM decisions | Fallback decisions '
                  '| Takeovers | Human decisions | Wall s |',
                  '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
        for r in summary.chance_runs:
            s, d = r.score, r.score.decisions
            strict, false = _strict_cells(s)
            lines.append(f'| {r.scenario} | {CHANCE_DIR}/{r.condition}/trial-{r.trial} | {r.seed} | {s.outcome} '
                         f'| {r.expected_outcome} | {s.attempted.points:g} / {s.floor.points:g} of '
                         f"{s.attempted.max_points:g} | {strict} | {false} | {d.get('llm', 0)} "
                         f"| {d.get('fallback', 0)} | {s.takeovers} | {d.get('human', 0)} | {r.wall_time_s:.0f} |")
    found = [(r, f) for r in [*summary.runs, *summary.chance_runs] for f in r.score.false_successes or []]
    lines += ['', '## False successes', '']
    lines += [f"- {r.scenario} {CHANCE_DIR + '/' if r.chance else ''}{r.condition}/trial-{r.trial}: "
              f"{f.task_id or 'the episode'} "
              f"({'judged a success' if f.claim == 'judgment' else 'finished as a success'}): {f.reason}"
              for r, f in found] or ['None: every success the team claimed is one the world shows.']
    lines += ['', f"Reference: {ref['source']}; {model}, {ref['runs_per_condition']} hand-scored runs per "
              'condition, 17 points per run (published criteria).', '']
    return '\n'.join(lines)


def _chance_markdown(summary: EvalSummary) -> list[str]:
    """Return the chance section: per scenario and condition, the brain's mean points, chance's, the margin."""
    if summary.brain == CHANCE_BRAIN:
        return ['', f"This evaluation is the chance baseline (brain {CHANCE_BRAIN}, trial k with seed k): no chance "
                'row beside it.']
    if not summary.chance_trials:
        return ['', 'No chance row (--chance 0).']
    lines = ['', '## Margin over chance (the random chooser)', '',
             f'Chance: {summary.chance_trials} trial(s) per scenario and condition of the random chooser (brain '
             f"{CHANCE_BRAIN}, trial k with seed k: every reply drawn at random within its request's schema; "
             "docs/chance.md). Margin: this evaluation's mean minus chance's.", '',
             '| Scenario | Condition | Runs | Chance runs | Attempted (mean points) | Chance attempted | Margin '
             '(attempted) | Floor (mean points) | Chance floor | Margin (floor) | Success rate margin (attempted / '
             'floor) | Chance outcomes |', '|---|---|---|---|---|---|---|---|---|---|---|---|']
    chance = {(c.scenario, c.condition): c for c in summary.chance}
    for c in summary.conditions:
        row = chance.get((c.scenario, c.condition))
        label = CONDITION_LABELS.get(c.condition, c.condition)
        if row is None or c.margin_points is None:
            lines.append(f'| {c.scenario} | {label} | {c.runs} | 0 | {c.points_mean["attempted"]:.2f} | - | - '
                         f'| {c.points_mean["floor"]:.2f} | - | - | - | - |')
            continue
        outcomes = ', '.join(f'{k} {v}' for k, v in sorted(row.outcomes.items()))
        lines.append(f'| {c.scenario} | {label} | {c.runs} | {row.runs} | {c.points_mean["attempted"]:.2f} '
                     f'| {row.points_mean["attempted"]:.2f} | **{c.margin_points["attempted"]:+.2f}** '
                     f'| {c.points_mean["floor"]:.2f} | {row.points_mean["floor"]:.2f} '
                     f'| {c.margin_points["floor"]:+.2f} | {100 * c.margin_success_rate["attempted"]:+.2f} / '
                     f'{100 * c.margin_success_rate["floor"]:+.2f} pp | {outcomes} |')
    return lines


def plot(summary: EvalSummary, path: Path) -> None:
    """Draw success rates and metric means per condition next to the published figures (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ref = summary.reference
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={'width_ratios': [1, 2.4]})
    labels, attempted, floor, chance = [], [], [], []
    for c in summary.conditions:
        labels.append(_label(summary, c).replace(': ', '\n'))
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
    series = [(f'{_label(summary, c)} (attempted)', c.metric_means['attempted'])
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
                                         _num(means[view][metric.value], 4), c.scenario, criteria])
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
                                     _num(row.metric_means[view][metric.value], 4), row.scenario, 'published'])
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
