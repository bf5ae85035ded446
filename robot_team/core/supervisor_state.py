"""What the supervisor keeps of its cases: a patient's arrival, and the state a restarted supervisor takes up.

:class:`CaseArrival` is a patient's arrival as the supervisor keeps it while their case waits or
is open; :class:`AnsweredRequests` the answers it gave to requests that carry a caller's ID;
:class:`SupervisorState` is everything a restarted supervisor takes up besides the escalations'
lifecycle (stored as JSON by the escalation desk).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

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


ANSWERS_KEPT = 32
"""Most answers :class:`AnsweredRequests` keeps (the latest). A request is sent again within its
caller's wait (``service_timeout_s``, wall s) of the first send, and a team makes a few requests a
minute: the answer is kept long after any repeat could come."""


class AnsweredRequest(BaseModel):
    """The answer the supervisor gave to one request with a caller's ID (kept for a restart)."""

    service: str = Field(description="The service's name relative to the team's namespace (e.g. "
                                     "'supervisor/authorize_task').")
    request_id: str = Field(min_length=1, description="The caller's ID of the request.")
    answer: dict[str, Any] = Field(description="The response's fields as they were sent.")


class AnsweredRequests:
    """The latest :data:`ANSWERS_KEPT` answers to requests that carry a caller's ID, per service.

    A caller sends a request again to each server that appears while it waits
    (:func:`robot_team.ros.util.call_service`): a supervisor restarted after serving the request,
    but before its answer reached the caller, hears it again. Served again, an approval would be
    refused (its task now runs) and an escalation opened twice. Keeping the answer with the
    workflow (:class:`SupervisorState`) lets the restarted supervisor answer it again instead. Not
    thread-safe: the supervisor calls it from one mutually exclusive callback group.
    """

    def __init__(self, kept: list[AnsweredRequest] | None = None):
        self._kept: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
        self._items: list[AnsweredRequest] | None = None   # items(), made again after a change
        for item in kept or []:
            self.keep(item.service, item.request_id, item.answer)

    def find(self, service: str, request_id: str) -> dict[str, Any] | None:
        """Return a copy of the answer kept for ``request_id`` on ``service``, or None ('' is never kept)."""
        answer = self._kept.get((service, request_id)) if request_id else None
        return dict(answer) if answer is not None else None

    def keep(self, service: str, request_id: str, answer: dict[str, Any]) -> None:
        """Keep ``answer`` (the response's fields) for ``request_id`` on ``service``; '' keeps nothing."""
        if not request_id:
            return
        self._kept[(service, request_id)] = dict(answer)
        self._kept.move_to_end((service, request_id))
        while len(self._kept) > ANSWERS_KEPT:
            self._kept.popitem(last=False)
        self._items = None

    def items(self) -> list[AnsweredRequest]:
        """Return the answers kept, oldest first (what :class:`SupervisorState` stores; a new list each call)."""
        if self._items is None:   # the state is made after every callback, the answers change at a few
            self._items = [AnsweredRequest(service=service, request_id=request_id, answer=dict(answer))
                           for (service, request_id), answer in self._kept.items()]
        return list(self._items)


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
    answered: list[AnsweredRequest] = Field(default_factory=list,
                                            description='The latest answers to requests with a caller\'s ID '
                                                        '(:class:`AnsweredRequests`), oldest first.')
