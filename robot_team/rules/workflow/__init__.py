"""The ED workflow and its deadlines, enforced as pure logic (no ROS): the supervisor's rulebook.

:class:`~robot_team.rules.workflow.policy.WorkflowPolicy` decides whether a delegation may start
(:meth:`~robot_team.rules.workflow.policy.WorkflowPolicy.authorize`), records robots' reports, runs the
deadlines (the manager's: first step after the patient cue, next step after a report or a human
decision, issue handling after a failure, the whole onboarding; the robots': longest task
duration) and keeps the escalations and the humans' decisions. Every refusal carries an
explanation the manager (possibly an LLM) can act on: what rule, what state, what to do next.

All times are ROS times in seconds (sim time in runs); the caller passes ``now_s``.

The modules (every name importers used from the one module before is re-exported here):

- :mod:`~robot_team.rules.workflow.state`: the rules' names, authorizations, tasks and the policy's
  snapshot (pydantic models and enums);
- :mod:`~robot_team.rules.workflow.rules`: the rules over task outlines, shared by the gate and the
  manager's LLM bridge (order, repeat, reflection, the HCW rule, engaged HCWs, escalations);
- :mod:`~robot_team.rules.workflow.deadlines`: the deadlines and their bookkeeping
  (:class:`~robot_team.rules.workflow.deadlines.DeadlineBook`);
- :mod:`~robot_team.rules.workflow.tasks`: a case's tasks and their numbering
  (:class:`~robot_team.rules.workflow.tasks.TaskBook`);
- :mod:`~robot_team.rules.workflow.escalations`: a case's escalations, their numbering and the humans'
  decisions on them (:class:`~robot_team.rules.workflow.escalations.EscalationBook`);
- :mod:`~robot_team.rules.workflow.policy`: :class:`~robot_team.rules.workflow.policy.WorkflowPolicy`, the gate.
"""

from robot_team.rules.workflow.deadlines import MANAGER_DEADLINES, Deadline, DeadlineChange, DeadlineKind
from robot_team.rules.workflow.policy import DuplicateReport, WorkflowPolicy
from robot_team.rules.workflow.rules import (
    StaffFacts, TaskOutline, delegation_refusal, engaged_hcws, escorted_hcw, failed_since_success,
    manager_may_escalate, open_escalation_of, people_chose, reflection_wait, task_hcw, task_hcw_refusal)
from robot_team.rules.workflow.state import (
    DECISIONS, MANAGER, TASK_ID_PREFIX, WORKFLOW_RULES, Authorization, TaskState, WorkflowRule, WorkflowState)

__all__ = [
    'DECISIONS', 'MANAGER', 'MANAGER_DEADLINES', 'TASK_ID_PREFIX', 'WORKFLOW_RULES', 'Authorization', 'Deadline',
    'DeadlineChange', 'DeadlineKind', 'DuplicateReport', 'StaffFacts', 'TaskOutline', 'TaskState', 'WorkflowPolicy',
    'WorkflowRule', 'WorkflowState', 'delegation_refusal', 'engaged_hcws', 'escorted_hcw', 'failed_since_success',
    'manager_may_escalate', 'open_escalation_of', 'people_chose', 'reflection_wait', 'task_hcw', 'task_hcw_refusal']
