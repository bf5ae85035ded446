"""What an evaluation returns: each trial's result, the means per scenario and condition, the whole summary.

Also the errors that stop an evaluation (:class:`TrialInterrupted`, :class:`TrialsFailed`). Data
only: :mod:`robot_team.evaluation.trials.aggregate` computes the means.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from robot_team.evaluation.rubric import PUBLISHED_REFERENCE, RunScore


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
