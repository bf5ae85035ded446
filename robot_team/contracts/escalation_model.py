"""The one escalation model: an escalation to a human, its lifecycle and its decision (no ROS).

:class:`EscalationRecord` is the only declaration of an escalation's fields. Three owners keep
records of this one model, each filling the fields it knows:

- the workflow (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`): who raised it, about which task,
  the reason and options, when it opened; on a person's decision: ``state``, ``decision``,
  ``hcw_id``, ``note``, ``decided_by``, ``closed_s``;
- the escalation desk (``robot_team.core.escalations``): all of the above plus the lifecycle
  (kind, severity, deadline, acknowledgement, expiry, team hold);
- the manager (:class:`~robot_team.brains.base.ManagerObservation`): what the manager node hears on
  ``team/escalations`` and ``team/human_decisions`` (ID, task, raiser, reason, the decision).

An escalation goes **open -> acknowledged -> resolved | expired**; :data:`TRANSITIONS` is the one
table of allowed state changes and :func:`transition` the one function that changes ``state``.

All times are ROS times in s (sim time in runs) unless named ``*_wall`` (s since the Unix epoch).
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Severity(str, Enum):
    """How urgent an escalation is; sets its deadline (``EscalationPolicy.deadlines_s``)."""

    NORMAL = 'normal'
    HIGH = 'high'
    CRITICAL = 'critical'


class EscalationKind(str, Enum):
    """What an escalation is about (``Escalation.msg`` ``KIND_*``)."""

    ISSUE = 'issue'        # the team could not handle a task (manager or supervisor)
    CONCERN = 'concern'    # a person's concern
    HOLD = 'hold'          # the team is held until it is resolved
    PATIENT = 'patient'    # a patient the team does not serve: a person must take them


class LifecycleState(str, Enum):
    """Where an escalation stands (``Escalation.msg`` ``STATE_*``)."""

    OPEN = 'open'
    ACKNOWLEDGED = 'acknowledged'
    RESOLVED = 'resolved'
    EXPIRED = 'expired'


class LifecycleAction(str, Enum):
    """What may happen to an escalation: a person acknowledges or resolves it, or its deadline passes."""

    ACKNOWLEDGE = 'acknowledge'
    RESOLVE = 'resolve'
    EXPIRE = 'expire'


TRANSITIONS: dict[tuple[LifecycleState, LifecycleAction], LifecycleState] = {
    (LifecycleState.OPEN, LifecycleAction.ACKNOWLEDGE): LifecycleState.ACKNOWLEDGED,
    (LifecycleState.OPEN, LifecycleAction.RESOLVE): LifecycleState.RESOLVED,
    (LifecycleState.OPEN, LifecycleAction.EXPIRE): LifecycleState.EXPIRED,
    (LifecycleState.ACKNOWLEDGED, LifecycleAction.RESOLVE): LifecycleState.RESOLVED,
    (LifecycleState.ACKNOWLEDGED, LifecycleAction.EXPIRE): LifecycleState.EXPIRED,
}
"""The allowed state changes: ``(state, action) -> new state``. Resolved and expired are final."""

OPEN_STATES = frozenset({LifecycleState.OPEN, LifecycleState.ACKNOWLEDGED})
"""States in which a person may still acknowledge or resolve an escalation."""


class LifecycleError(ValueError):
    """An action the transition table does not allow from the escalation's state."""


class EscalationRecord(BaseModel):
    """One escalation: who raised it, what was offered, who did what and when, the decision.

    Only ``escalation_id`` is required: each owner fills what it knows (see the module's notes).
    Change ``state`` only through :func:`transition`.
    """

    model_config = ConfigDict(extra='forbid')
    escalation_id: str
    task_id: str = ''
    task_type: str = ''
    raised_by: str = ''
    reason: str = ''
    options: list[str] = Field(default_factory=list)
    kind: EscalationKind = EscalationKind.ISSUE
    severity: Severity = Severity.HIGH
    state: LifecycleState = LifecycleState.OPEN
    proposal: str = Field('', description="The manager's proposal (its first option), '' if none.")
    opened_s: float = 0.0
    opened_wall: float = 0.0
    due_s: float | None = Field(None, description='ROS time it expires unless resolved; None: never (holds).')
    notifications: int = 1
    last_notified_s: float = 0.0
    acknowledged_by: str = ''
    acknowledged_s: float | None = None
    acknowledged_wall: float | None = None
    decision: str = ''
    hcw_id: str = ''
    decided_by: str = Field('', description="Who decided: the operator's ID, or the supervisor for a safe "
                            "default.")
    note: str = ''
    closed_s: float | None = Field(None, description='ROS time it was resolved or expired, s.')
    closed_wall: float | None = None
    holds_team: bool = False
    safe_default: str = Field('', description="What the supervisor did when it expired ('hold', 'abort', "
                              "'takeover': already in force, nothing more; 'none': its case had closed).")
    covered_by: str = Field('', description="A safe default already in force for it ('takeover': the protocol "
                            "brain has the manager's role), so its expiry holds nothing.")
    followed_by: str = Field('', description='The hold escalation opened when this one expired.')
    patient_id: str = Field('', description="The case's patient (kind 'patient': the patient a person must take).")

    @property
    def is_open(self) -> bool:
        """Whether a person may still acknowledge or resolve it."""
        return self.state in OPEN_STATES

    @property
    def resolved(self) -> bool:
        """Whether a decision was taken on it (a person's, or an expired escalation's safe default)."""
        return bool(self.decision)

    @property
    def status(self) -> str:
        """The workflow's two-state view of ``state``: ``'open'`` while :attr:`is_open`, else ``'resolved'``."""
        return 'open' if self.is_open else 'resolved'

    @property
    def operator_id(self) -> str:
        """Who decided (``decided_by``), by the name ``HumanDecision.msg`` gives it."""
        return self.decided_by

    @property
    def resolved_s(self) -> float | None:
        """When it was closed (``closed_s``), ROS time, s; ``None`` while open."""
        return self.closed_s


def closing_abort(escalations) -> str:
    """Return the ID of the escalation whose human decision ``abort`` closed the episode, else ``''``.

    ``escalations``: :class:`EscalationRecord` s. Once closed, only the reflection may start (rule 4
    of ``robot_team.rules.workflow.policy.WorkflowPolicy``) and the manager escalates nothing more: the human
    has decided (``WorkflowPolicy.open_escalation``; seen from a 0.5B model, which escalated the
    aborted task again and paged the human a second time). Shared by the gate, the manager's LLM
    offer and outcome, and the protocol manager brain.
    """
    return next((e.escalation_id for e in escalations if e.decision == 'abort'), '')


def transition(record: EscalationRecord, action: LifecycleAction | str) -> LifecycleState:
    """Move ``record`` to the state :data:`TRANSITIONS` gives for ``action``; return the new state.

    Every change of an escalation's ``state`` goes through here.

    Raises
    ------
    LifecycleError
        If the table has no transition for ``(record.state, action)`` (the message names the
        escalation, its state, the attempted action and what is allowed from that state).
    ValueError
        If ``action`` is not a :class:`LifecycleAction` value.
    """
    action = LifecycleAction(action)
    new = TRANSITIONS.get((record.state, action))
    if new is None:
        allowed = [a.value for (s, a) in TRANSITIONS if s is record.state]
        raise LifecycleError(f'escalation {record.escalation_id} is {record.state.value}: cannot {action.value} it '
                             f"(allowed from {record.state.value}: {', '.join(allowed) or 'nothing, it is closed'})")
    record.state = new
    return new
