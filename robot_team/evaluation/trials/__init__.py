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
minus chance's): :class:`~robot_team.evaluation.trials.results.ConditionSummary`'s ``chance_*`` and
``margin_*`` fields. An evaluation
of brain 'random' has no chance row (it is one).

Trials run one after another in this process (``jobs`` 1), or side by side on Dask distributed
(``jobs`` N > 1, or a ``scheduler``'s address; :mod:`robot_team.evaluation.parallel`): each team in
its own namespace (``/t<k>``, ``k`` the trial's position in the evaluation, from 1) and its own
ROS domain (the base domain plus the slot it runs in, so that no two teams running at once share
one). Workers run the episodes and write each trial's record and ``trial.json``; this process
scores them, so the scores are the same whatever ``jobs`` is.

The modules, all re-exported here:

- :mod:`~robot_team.evaluation.trials.spec`: the conditions, a trial's folder, spec and ``trial.json``;
- :mod:`~robot_team.evaluation.trials.results`: a trial's result, a condition's means, the summary;
- :mod:`~robot_team.evaluation.trials.trial`: run (or reuse) one trial and score it;
- :mod:`~robot_team.evaluation.trials.run`: plan and run an evaluation, one after another or on Dask;
- :mod:`~robot_team.evaluation.trials.slots`: the ROS domains and local endpoint of parallel trials;
- :mod:`~robot_team.evaluation.trials.aggregate`: the means per condition, the chance row, the margins;
- :mod:`~robot_team.evaluation.trials.tables`: the Markdown tables (cf. the published Tables III, IV);
- :mod:`~robot_team.evaluation.trials.outputs`: the files written (JSON, CSV, Markdown, PNG).
"""


from robot_team.evaluation.trials.aggregate import summarize, with_chance
from robot_team.evaluation.trials.outputs import CHANCE_SOURCE, MARGIN_SOURCE, plot, write_outputs
from robot_team.evaluation.trials.results import (
    ConditionSummary, EvalSummary, TrialInterrupted, TrialResult, TrialsFailed)
from robot_team.evaluation.trials.run import run_trials
from robot_team.evaluation.trials.slots import MAX_DOMAIN_ID, parallel_domains, shared_local_settings
from robot_team.evaluation.trials.spec import (
    CHANCE_BRAIN, CHANCE_DIR, CONDITION_LABELS, CONDITIONS, TRIAL_FILE, completed_trial, default_llm_clock, trial_dir,
    trial_spec)
from robot_team.evaluation.trials.tables import markdown
from robot_team.evaluation.trials.trial import run_trial

_trial_spec = trial_spec
"""The name :func:`~robot_team.evaluation.trials.spec.trial_spec` had when this package was one module."""

__all__ = [
    'CHANCE_BRAIN', 'CHANCE_DIR', 'CHANCE_SOURCE', 'CONDITIONS', 'CONDITION_LABELS', 'MARGIN_SOURCE', 'MAX_DOMAIN_ID',
    'TRIAL_FILE', 'ConditionSummary', 'EvalSummary', 'TrialInterrupted', 'TrialResult', 'TrialsFailed',
    'completed_trial', 'default_llm_clock', 'markdown', 'parallel_domains', 'plot', 'run_trial', 'run_trials',
    'shared_local_settings', 'summarize', 'trial_dir', 'trial_spec', 'with_chance', 'write_outputs']
