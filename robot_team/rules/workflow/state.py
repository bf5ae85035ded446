"""What the workflow gate answers and keeps: the rules' names, authorizations, tasks and the policy's snapshot.

Pydantic models and enums, no logic beyond lookups; the deadlines' models are in
:mod:`robot_team.rules.workflow.deadlines`.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.names import Role
from robot_team.contracts.reports import IssueCode, TaskType
from robot_team.rules.workflow.deadlines import Deadline

MANAGER = Role.MANAGER.value

TASK_ID_PREFIX: dict[TaskType, str] = {
    TaskType.NAVIGATION: 'nav',
    TaskType.INFO_COLLECTION: 'info',
    TaskType.DISPLAY: 'display',
    TaskType.REFLECTION: 'reflection',
}
"""Task IDs are ``<prefix>-<n>``, numbered per task type from 1 (``nav-1``, ``info-2``...)."""

DECISIONS = ('reassign', 'retry', 'abort')
"""Decisions a human may take on an escalation."""


class WorkflowRule(str, Enum):
    """The rule an authorization was decided by; the values are ``AuthorizeTask``'s ``RULE_*`` constants.

    Numbers refer to the rules of :class:`~robot_team.rules.workflow.policy.WorkflowPolicy`; ``OK`` means approved.
    """

    OK = 'ok'
    REQUESTER = 'requester'                  # 1
    UNKNOWN_TASK_TYPE = 'unknown_task_type'  # 2
    ROLE = 'role'                            # 3
    CLOSED = 'closed'                        # 4
    ORDER = 'order'                          # 5
    RUNNING = 'running'                      # 6
    REPEAT_REASON = 'repeat_reason'          # 7
    REFLECTION = 'reflection'                # 8
    HCW = 'hcw'                              # 9
    HELD = 'held'                            # the team is held (robot_team.core.escalations.TeamHold)
    CASE = 'case'                            # another case is in progress (robot_team.contracts.cases)
    ROBOT_BUSY = 'robot_busy'                # the robot runs another case's task (one task at a time)


WORKFLOW_RULES: frozenset[WorkflowRule] = frozenset(
    {WorkflowRule.CLOSED, WorkflowRule.ORDER, WorkflowRule.RUNNING, WorkflowRule.REFLECTION})
"""Rules whose breach is a workflow violation (the others are refused delegations)."""


class Authorization(BaseModel):
    """The supervisor's answer to a delegation request."""

    approved: bool
    task_id: str = Field('', description="The new task's ID when approved, else ''.")
    explanation: str = Field(description='Why, in words the manager can act on.')
    rule: WorkflowRule = Field(WorkflowRule.OK, description='The rule that decided (see WORKFLOW_RULES).')
    task_type: str = ''
    robot: str = ''
    hcw_id: str = Field('', description="The HCW the approved task is about (rule 9): the one named for a "
                                        "navigation, the one the latest navigation escorted for the later steps.")
    case_id: str = Field('', description="The case the team serves now (its patient's ID; '' before any arrival).")

    @property
    def violation(self) -> bool:
        """Whether the refusal breaches the workflow itself (order, running task, closed, reflection)."""
        return not self.approved and self.rule in WORKFLOW_RULES


class TaskState(BaseModel):
    """One authorized task and what became of it."""

    task_id: str
    task_type: TaskType
    robot: str
    requested_by: str = MANAGER
    reason: str = ''
    status: Literal['running', 'success', 'failure'] = 'running'
    issue: str = ''
    issue_code: IssueCode = IssueCode.NONE
    summary: str = ''
    hcw_id: str = Field('', description='The HCW the task is about (rule 9; empty for the reflection).')
    started_s: float
    finished_s: float | None = None


class WorkflowState(BaseModel):
    """A read-only snapshot of the policy (a copy: changing it changes nothing)."""

    tasks: list[TaskState]
    escalations: list[EscalationRecord]
    deadlines: list[Deadline]
    patient_id: str = Field('', description='The patient whose arrival started the onboarding deadlines.')
    id_prefix: str = Field('', description="Before every task and escalation ID of the case ('' for the first "
                                           "case of a run, the patient's ID and '/' for later ones).")
    assigned_hcw_id: str = Field('', description="The HCW the hospital assigned to the patient (a person's choice).")
    required_specialty: str = Field('', description="The specialty the patient needs, e.g. 'Physician'.")
    closed: bool = Field(description="Whether a human closed the episode with an 'abort' decision.")
    closed_by: str = Field('', description="The escalation whose 'abort' closed the episode.")

    def task(self, task_id: str) -> TaskState | None:
        """Return the task ``task_id``, if any."""
        return next((t for t in self.tasks if t.task_id == task_id), None)

    def escalation(self, escalation_id: str) -> EscalationRecord | None:
        """Return the escalation ``escalation_id``, if any."""
        return next((e for e in self.escalations if e.escalation_id == escalation_id), None)
