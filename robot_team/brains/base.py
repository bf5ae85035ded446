"""The brain seam: every robot's decision-making sits behind one of two interfaces.

A :class:`RobotBrain` executes one delegated task with the robot's own tools and returns its
claim (:class:`BrainReport`); a :class:`ManagerBrain` turns observations of the team into
actions (delegate, escalate, reflect). The protocol brains (``robot_team.brains.protocol``)
implement the ED workflow deterministically; LLM brains plug in behind the same interfaces.
Brains never touch ROS: robots act through their :class:`~robot_team.tools.base.Toolbox`, the
manager through the actions it returns, which the manager node executes under the supervisor's
guards.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Annotated, Any, Callable, Literal, Union

from pydantic import BaseModel, Field

from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.names import RobotId
from robot_team.contracts.reports import IssueCode, Reflection, TaskStatus, TaskType
from robot_team.tools.base import ToolResult, Toolbox
from robot_team.rules.workflow.rules import TaskOutline

ProgressFn = Callable[[str, str, float], None]
"""Progress callback ``(stage, detail, fraction 0..1)`` published as action feedback."""


class TaskSpec(BaseModel):
    """A delegated task as the robot receives it (from ``ExecuteTask`` goals)."""

    task_id: str
    task_type: TaskType
    room: str = ''
    hcw_id: str = ''
    instructions: str = ''
    context: dict[str, Any] = Field(default_factory=dict)


class BrainReport(BaseModel):
    """A robot brain's claim about its task: status, issue, what it found.

    The robot node adds task ID, robot name and ground-truth evidence from the tool journal
    before the report leaves the robot.
    """

    status: TaskStatus
    issue: str = ''
    summary: str = ''
    data: dict[str, Any] = Field(default_factory=dict)


def failure_report(issue: str, summary: str = '', **data) -> BrainReport:
    """Return a failure report (the protocol brains' way to end a task that cannot succeed).

    ``data`` holds ``failed_tool`` (the catalog name of the call that failed), which the protocol
    manager's rules read (never the issue's text).
    """
    return BrainReport(status=TaskStatus.FAILURE, issue=issue, summary=summary or issue, data=data)


def task_caller(tools: Toolbox, task: TaskSpec) -> Callable[..., ToolResult]:
    """Return ``call(name, **args)``: :meth:`Toolbox.call <robot_team.tools.base.Toolbox.call>` for ``task``.

    The protocol brains' way to call their tools: each call is journaled under ``task.task_id``.
    """
    return lambda name, **args: tools.call(name, task_id=task.task_id, **args)


class RobotBrain(ABC):
    """Decision-making of one operational robot."""

    @abstractmethod
    def execute(self, task: TaskSpec, tools: Toolbox, progress: ProgressFn) -> BrainReport:
        """Carry out ``task`` with ``tools`` only and return the claim.

        Runs in a worker thread of the robot node; tool calls block until their ROS
        interaction ends. Must not raise for task-level problems: report ``failure`` with an
        issue instead.
        """

    def cancel(self) -> None:
        """Ask a running ``execute`` to stop early (optional; any thread)."""

    def close(self) -> None:
        """Release what the brain holds (an LLM client); called once, after the last ``execute``."""

    @property
    def decision_source(self) -> str:
        """Who decided the latest task (:class:`~robot_team.contracts.decisions.DecisionSource` value)."""
        return 'protocol'


# --- Manager ------------------------------------------------------------------------------

class PatientInfo(BaseModel):
    """The patient-arrival cue."""

    patient_id: str
    room: str
    presentation: str = ''
    esi_level: int = 0
    assigned_hcw_id: str
    required_specialty: str = 'Physician'


class TaskRecord(BaseModel):
    """What the manager knows about one delegated task."""

    task_id: str
    task_type: TaskType
    robot: RobotId
    hcw_id: str = ''
    room: str = ''
    delegated_s: float = Field(0.0, description='When the supervisor authorized it, ROS time, s.')
    state: Literal['running', 'success', 'failure'] = 'running'
    issue: str = ''
    issue_code: IssueCode = Field(IssueCode.NONE,
                                  description="'robot_lost': the supervisor closed it, the robot was lost.")
    final_failure: str = Field('', description="A failure's grounds that no later attempt changes: the ``final`` "
                                               "tool whose own failed answer is in the report's evidence "
                                               "(robot_team.catalog.final_failure), e.g. lookup_staff_by_badge; "
                                               "'' otherwise.")
    summary: str = ''
    data: dict[str, Any] = Field(default_factory=dict)


class FeedbackKind(str, Enum):
    """What a guard's feedback to the manager is about (brains act on the kind, never on the text)."""

    ROLE_MISALIGNMENT = 'role_misalignment'            # a delegation carried results; they were removed
    DELEGATION_REFUSED = 'delegation_refused'          # the supervisor's gate (or the team) refused it
    ESCALATION_REFUSED = 'escalation_refused'          # the supervisor refused an escalation
    REFLECTION_INCOMPLETE = 'reflection_incomplete'    # a reflection misses required parts
    REFLECTION_CONTRADICTS = 'reflection_contradicts'  # a reflection contradicts the record
    REFLECTION_REFUSED = 'reflection_refused'          # the gate refused the reflection now (rule 8)
    ACTION_FAILED = 'action_failed'                    # an action could not be carried out (ROS timeout...)
    ROBOT_BUSY = 'robot_busy'                          # the robot runs another case's task: the case waits for it

    @property
    def needs_decision(self) -> bool:
        """Whether the manager must decide again: False when its action went ahead, amended.

        A delegation whose results were removed (``role_misalignment``) was carried out: the brain
        is told, not asked (a 0.5B manager asked after that note, with a task running and nothing
        failed, escalated the running task). A case waiting for a busy robot (``robot_busy``) is
        asked again when the robot is free.
        """
        return self not in (FeedbackKind.ROLE_MISALIGNMENT, FeedbackKind.ROBOT_BUSY)


class GuardFeedback(BaseModel):
    """One guard refusal or explanation for the manager: typed, with the words for the model."""

    kind: FeedbackKind
    text: str = Field(description='What happened and what to do next, for the manager (an LLM reads it).')
    rule: str = Field('', description="The supervisor's WorkflowRule, for gate refusals.")


class SupervisorInstruction(BaseModel):
    """A person's free-text instruction to the team: advisory data, never a command past the guards."""

    instruction_id: str
    operator_id: str
    task_id: str = ''
    text: str


class StaffInfo(BaseModel):
    """One HCW as the manager knows them (``team/staff``): the directory's specialty, the RTLS's availability."""

    hcw_id: str
    specialty: str = ''
    availability: str = Field('unknown', description='available | busy | off_shift | unknown (no RTLS answer yet).')


class ManagerObservation(BaseModel):
    """Everything the manager knows, plus what is new since its last decision."""

    patient: PatientInfo | None = None
    tasks: list[TaskRecord] = Field(default_factory=list)
    escalations: list[EscalationRecord] = Field(default_factory=list)
    feedback: list[GuardFeedback] = Field(default_factory=list,
                                          description='Guard refusals and explanations since last time.')
    new: list[str] = Field(default_factory=list, description='Cues since last time, in words.')
    reflection_done: bool = False
    instructions: list[SupervisorInstruction] = Field(
        default_factory=list, description="People's instructions (advisory; the gate and guards still apply).")
    handled_failures: list[str] = Field(
        default_factory=list, description='IDs of failed tasks the manager already acted upon.')
    staff_ids: list[str] = Field(
        default_factory=list, description="The staff directory's HCW IDs (team/staff; empty until known).")
    staff: list[StaffInfo] = Field(
        default_factory=list, description='What team/staff says of each HCW, in the order of staff_ids.')
    lost_robots: list[str] = Field(
        default_factory=list, description='Team nodes the supervisor noticed lost and not back yet (team/liveness).')
    robots: list[RobotId] = Field(
        default_factory=list, description="The team's operational robots (a fleet's are <role>_<n>); empty: one "
                                          'per role, named after it.')
    engaged_hcws: dict[str, str] = Field(
        default_factory=dict, description='HCWs other open cases have (HCW ID -> that case): being escorted or '
                                          'escorted to their patient (robot_team.rules.workflow.rules.engaged_hcws).')
    lessons: list[str] = Field(
        default_factory=list, description="Lessons learned in this run's earlier cases (their reflections), oldest "
                                          "first, at most robot_team.core.manager_reflection.MAX_LESSONS.")

    def outlines(self) -> list[TaskOutline]:
        """Return the tasks as the gate's rules see them, in order.

        Each one a :class:`~robot_team.rules.workflow.rules.TaskOutline`.
        """
        return [TaskOutline(t.task_id, t.task_type, t.state, t.issue, t.robot, t.hcw_id) for t in self.tasks]

    def latest(self, task_type: TaskType) -> TaskRecord | None:
        """Return the most recent task of ``task_type``, if any."""
        for record in reversed(self.tasks):
            if record.task_type == task_type:
                return record
        return None


class Delegate(BaseModel):
    """Delegate a task to a robot."""

    action: Literal['delegate'] = 'delegate'
    task_type: TaskType
    robot: RobotId
    room: str
    hcw_id: str = ''
    instructions: str = ''
    reason: str = ''
    context: dict[str, Any] = Field(default_factory=dict)
    handles_task_id: str = Field('', description='Failed task this delegation recovers from, if any.')


class Escalate(BaseModel):
    """Ask the supervisor to escalate a problem to a human."""

    action: Literal['escalate'] = 'escalate'
    task_id: str
    reason: str
    options: list[str] = Field(default_factory=list)


class Reflect(BaseModel):
    """Write the episode's reflection (the manager's own task)."""

    action: Literal['reflect'] = 'reflect'
    reflection: Reflection


class Finish(BaseModel):
    """End the episode."""

    action: Literal['finish'] = 'finish'
    outcome: Literal['success', 'failure', 'escalated'] = 'success'
    reason: str = ''


ManagerAction = Annotated[Union[Delegate, Escalate, Reflect, Finish], Field(discriminator='action')]


class ManagerBrain(ABC):
    """Decision-making of the manager robot: it delegates and judges, never operates."""

    @abstractmethod
    def decide(self, observation: ManagerObservation) -> list[ManagerAction]:
        """Return the actions to take now (possibly none: wait for the next cue)."""

    def new_case(self) -> None:
        """Forget what was said about the previous case: the next observation is another case's (optional).

        Called by the manager before a later case of the run starts; what holds for the run (a
        fallback that took over) stays.
        """

    def cancel(self) -> None:
        """Ask a running ``decide`` to return early (optional; any thread)."""

    def close(self) -> None:
        """Release what the brain holds (an LLM client); called once, after the last ``decide``."""

    @property
    def decision_source(self) -> str:
        """Who made the latest decision (:class:`~robot_team.contracts.decisions.DecisionSource` value)."""
        return 'protocol'

    def judge(self, record: TaskRecord) -> tuple[TaskStatus, str]:
        """Judge a finished task's report: return the status the manager accepts and why.

        The default accepts the robot's explicit status.
        """
        status = TaskStatus.SUCCESS if record.state == 'success' else TaskStatus.FAILURE
        why = record.issue or record.summary or 'report states no issue'
        return status, why
