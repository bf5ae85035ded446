"""Score one run on the published 17-point process rubric, from its event record alone.

The rubric is Table II of Bai, Ding, Taylor, *From Virtual Agents to Robot Teams: A Multi-Robot
Framework Evaluation in High-Stakes Healthcare Context*. Every cell scores 0, 0.5 or 1 (or N/A)
with a short reason:

- manager level, per task (navigation, info collection, display): delegation accuracy, task
  completion judgment, issue handling (navigation only; N/A for the other two), plus reflection
  quality once per run;
- robot level, per task: tool usage, local reasoning, report compliance.

3 tasks x 6 metrics - 2 N/A + 1 reflection = 17 points. Issue handling is also N/A when no
navigation attempt failed (nothing to handle); ``max_points`` then drops to 16. A task type that a
human's ``abort`` closed before the workflow allowed it to start (its earlier step had not
succeeded: the gate's order rule, :func:`robot_team.rules.workflow.rules.delegation_refusal`, at the decision)
was never the manager's to delegate nor its robot's to do: its cells are N/A too
(:func:`~robot_team.evaluation.rubric.published.closed_before_start`), so an escalated run is
scored on the work it could have done.

Two views of the same record:

- ``attempted``: what the brains tried, comparable with the published hand scores. Attempts the
  guards refused (``tool_refused``, ``delegation_refused``, ``workflow_violation``,
  ``false_completion``, ``reflection_rejected``, ``report_rejected``) count against the cell
  they concern. What the protocol brain decided as a fallback (the LLM's endpoint down, or a
  takeover after a stall; ``source: fallback``, :mod:`robot_team.contracts.decisions`) is left out of the
  cells of the level it stood in for: the LLM did not decide it. A manager cell keeps a robot's
  report written by that robot's fallback (the manager's LLM still had to judge and handle it),
  and a robot cell keeps a delegation the manager's fallback made.
- ``floor``: what happened on the floor after the guards (refused attempts never reached ROS).

Two criteria, each scored in both views:

- ``published``: the paper's criteria as written (the cells above), for an honest comparison with
  the published hand scores;
- ``strict``: the same cells held to the ground truth of :mod:`robot_team.evaluation.truth` (what
  the simulator, the RTLS and the staff directory show), where the paper's text allows: delegation
  accuracy also checks the room and the HCW's specialty and availability, issue handling checks
  that the chosen recovery could work, completion judgment, local reasoning, report compliance
  and reflection quality check content against the world. A strict cell starts from its published
  cell and can only lose points (:mod:`~robot_team.evaluation.rubric.strict`); each rule's docstring names the published
  definition it extends (the ``strict_*`` functions). Tool usage is the same in both.

Pure functions over :class:`~robot_team.contracts.events.TeamEventModel` lists in record order; no ROS.

The modules, all re-exported here:

- :mod:`~robot_team.evaluation.rubric.scores`: the metrics, cells, view and run scores (data);
- :mod:`~robot_team.evaluation.rubric.record`: the record indexed by task, and each view's records;
- :mod:`~robot_team.evaluation.rubric.evidence`: a report's data items and what grounds them;
- :mod:`~robot_team.evaluation.rubric.published`: the seven metrics under the published criteria;
- :mod:`~robot_team.evaluation.rubric.strict`: the strict rules (the ground truth);
- :mod:`~robot_team.evaluation.rubric.usage`: LLM requests, tokens and cost;
- :mod:`~robot_team.evaluation.rubric.reference`: the published figures (the reference row);
- :mod:`~robot_team.evaluation.rubric.run`: :func:`~robot_team.evaluation.rubric.run.score_run` and
  :func:`~robot_team.evaluation.rubric.run.score_run_dir`.
"""


from robot_team.catalog import KEY_TOOLS
from robot_team.evaluation.rubric.evidence import ALIASES
from robot_team.evaluation.rubric.published import (
    PLACEHOLDER_FRAGMENTS, PLACEHOLDERS, PREFETCH_KEYS, closed_before_start, completion_judgment, delegation_accuracy,
    issue_handling, local_reasoning, reflection_quality, report_compliance, score_view, tool_usage)
from robot_team.evaluation.rubric.record import MANAGER, TASK_PREFIX
from robot_team.evaluation.rubric.reference import PUBLISHED_REFERENCE
from robot_team.evaluation.rubric.run import score_run, score_run_dir
from robot_team.evaluation.rubric.scores import (
    CRITERIA, CRITERIA_LABELS, MANAGER_METRICS, METRIC_LABELS, ROBOT_METRICS, RUBRIC_POINTS, VIEWS, Cell, Criteria,
    Metric, ReflectionJudge, RunScore, View, ViewScore)
from robot_team.evaluation.rubric.strict import (
    STRICT_RULES, StrictRule, score_strict_view, strict_completion_judgment, strict_delegation_accuracy,
    strict_issue_handling, strict_local_reasoning, strict_reflection_quality, strict_report_compliance)
from robot_team.evaluation.rubric.usage import LLMUsage, llm_usage

__all__ = [
    'ALIASES', 'CRITERIA', 'CRITERIA_LABELS', 'KEY_TOOLS', 'MANAGER', 'MANAGER_METRICS', 'METRIC_LABELS',
    'PLACEHOLDERS', 'PLACEHOLDER_FRAGMENTS', 'PREFETCH_KEYS', 'PUBLISHED_REFERENCE', 'ROBOT_METRICS', 'RUBRIC_POINTS',
    'STRICT_RULES', 'TASK_PREFIX', 'VIEWS', 'Cell', 'Criteria', 'LLMUsage', 'Metric', 'ReflectionJudge', 'RunScore',
    'StrictRule', 'View', 'ViewScore', 'closed_before_start', 'completion_judgment', 'delegation_accuracy',
    'issue_handling', 'llm_usage', 'local_reasoning', 'reflection_quality', 'report_compliance', 'score_run',
    'score_run_dir', 'score_strict_view', 'score_view', 'strict_completion_judgment', 'strict_delegation_accuracy',
    'strict_issue_handling', 'strict_local_reasoning', 'strict_reflection_quality', 'strict_report_compliance',
    'tool_usage']
