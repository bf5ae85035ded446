"""The supervisor's directives: the safe default applied when the manager stalls (no rclpy).

When the manager misses one of its deadlines, the supervisor escalates and then applies the
configured safe default (:attr:`~robot_team.contracts.config.Deadlines.safe_default`): the protocol brain
takes over the manager's role (a :data:`TAKEOVER` directive), the team holds (a :data:`HOLD`
directive, with the team hold), or nothing beyond the escalation (``escalate``).
:class:`Directives` sends them (each a :class:`Directive`, published as ``SupervisorDirective``),
numbered for the run, and remembers a takeover.
"""

from __future__ import annotations

from typing import Callable

from pydantic import BaseModel

from robot_team.core.supervisor_deadlines import deadline_data
from robot_team.contracts.events import EventKind
from robot_team.contracts.names import Role
from robot_team.rules.workflow.deadlines import Deadline

TAKEOVER = 'takeover'
HOLD = 'hold'
"""Directives (``robot_team/msg/SupervisorDirective``'s constants)."""


class Directive(BaseModel):
    """A safe default the supervisor applies to a role (published as ``SupervisorDirective``)."""

    directive_id: str
    directive: str
    target: str
    escalation_id: str
    deadline: str
    reason: str


class Directives:
    """Sends the supervisor's directives and applies the safe default of a manager's stall.

    Parameters
    ----------
    emit
        The supervisor's event sink (its case's events).
    publish
        Called with each :class:`Directive` (the node publishes it on ``team/supervisor/directives``).

    Attributes
    ----------
    sent : int
        Directives sent so far (the next is ``directive-<sent + 1>``).
    took_over : bool
        Whether the protocol brain has the manager's role (a :data:`TAKEOVER` was applied).
    """

    def __init__(self, emit: Callable[..., object], publish: Callable[[Directive], None]):
        self._emit = emit
        self._publish = publish
        self.sent = 0
        self.took_over = False

    def apply_safe_default(self, safe_default: str, deadline: Deadline, escalation_id: str, reason: str, *,
                           hold_team: Callable[[str, str, Deadline], object],
                           on_takeover: Callable[[str], None] | None) -> None:
        """Apply ``safe_default`` for a stall of the manager (``deadline`` missed, after escalation ``escalation_id``).

        ``escalate`` (or a :data:`TAKEOVER` once the protocol brain has the role) records the
        escalation as the only step; :data:`HOLD` calls ``hold_team`` (escalation ID, reason,
        deadline); :data:`TAKEOVER` calls ``on_takeover`` (escalation ID) and sends the directive.
        """
        policy = safe_default
        if policy == TAKEOVER and self.took_over:
            policy = 'escalate'   # the protocol brain already has the role; the human is paged
        if policy == 'escalate':
            self._emit(EventKind.SAFE_DEFAULT, f'{deadline.kind} deadline missed: escalation {escalation_id} only',
                       target=Role.MANAGER.value, reason=reason, directive='escalate', escalation_id=escalation_id,
                       **deadline_data(deadline))
            return
        if policy == HOLD:
            hold_team(escalation_id, reason, deadline)
            return
        self.took_over = True
        if on_takeover is not None:
            on_takeover(escalation_id)
        self.direct(TAKEOVER, Role.MANAGER.value, escalation_id, deadline, reason)

    def direct(self, directive: str, target: str, escalation_id: str, deadline: Deadline | None,
               reason: str) -> Directive:
        """Send ``directive`` to role ``target`` for ``escalation_id`` (of missed ``deadline``, if any); return it.

        Recorded as ``safe_default`` and published.
        """
        self.sent += 1
        sent = Directive(directive_id=f'directive-{self.sent}', directive=directive, target=target,
                         escalation_id=escalation_id, deadline=deadline.kind if deadline else '', reason=reason)
        self._emit(EventKind.SAFE_DEFAULT, f'{sent.directive_id}: {directive} of the {target} ({escalation_id})',
                   target=target, reason=reason, role=target,
                   **sent.model_dump(exclude={'reason', 'deadline', 'target'}),
                   **(deadline_data(deadline) if deadline else {}))
        self._publish(sent)
        return sent
