"""What the supervisor keeps of its cases: a patient's arrival, and the state a restarted supervisor takes up.

:class:`CaseArrival` is a patient's arrival as the supervisor keeps it while their case waits or
is open; :class:`SupervisorState` is everything a restarted supervisor takes up besides the
escalations' lifecycle (stored as JSON by the escalation desk).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from robot_team.rules.workflow.state import WorkflowState


class CaseArrival(BaseModel):
    """A patient's arrival as the supervisor keeps it while their case waits (ROS time, s)."""

    patient_id: str
    room: str = ''
    esi_level: int = Field(0, ge=0, le=5, description='ESI 1 (most urgent) to 5; 0 not triaged.')
    assigned_hcw_id: str = ''
    required_specialty: str = ''
    arrived_s: float = 0.0


class SupervisorState(BaseModel):
    """Everything a restarted supervisor takes up besides the escalations' lifecycle (stored as JSON).

    :meth:`SupervisorCore.state <robot_team.core.supervisor.SupervisorCore.state>` makes it,
    :meth:`SupervisorCore.restore <robot_team.core.supervisor.SupervisorCore.restore>` takes it back; the
    escalation desk stores it beside the escalations (:meth:`EscalationDesk.save_state
    <robot_team.core.escalations.EscalationDesk.save_state>`).
    """

    workflow: WorkflowState = Field(description='Tasks, escalations, deadlines (ROS time, s), patient, closed.')
    directives: int = Field(0, ge=0, description='Directives sent so far (the next is directive-<n+1>).')
    took_over: bool = Field(False, description="Whether the protocol brain has the manager's role (safe default).")
    others: list[WorkflowState] = Field(default_factory=list,
                                        description='The other cases kept: the open ones, and closed ones with an '
                                                    'escalation open (``workflow`` is the latest opened).')
    waiting: list[CaseArrival] = Field(default_factory=list, description='Cases waiting for a free place.')
    opened: list[CaseArrival] = Field(default_factory=list, description='The open cases\' arrivals.')
    served: list[str] = Field(default_factory=list, description='Patients whose case was opened, in order.')
    asked: list[str] = Field(default_factory=list,
                             description='Waiting patients a person was asked to take (patient_unserved).')
