"""The desk's side of an escalation's lifecycle: refusals, steps, instructions, the hold's state, answers.

The states, the one transition table (open -> acknowledged -> resolved | expired) and the one
function that changes an escalation's state live with the one escalation model in
:mod:`robot_team.contracts.escalation_model` (the workflow changes state too, and must not import
``robot_team.core``); they are re-exported here. This module adds what only the desk needs:
why a person's request was refused (:class:`Refusal`), the decisions and raises a person may
send, the stored steps (:class:`EscalationStep`), instructions, the hold's state and the desk's
answers.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, Literal

from pydantic import BaseModel, Field

from robot_team.contracts.escalation_model import (  # noqa: F401  (re-exported: the lifecycle's states and table)
    OPEN_STATES, TRANSITIONS, EscalationKind, EscalationRecord, LifecycleAction, LifecycleError, LifecycleState,
    Severity, transition)

Emit = Callable[..., object]
"""``emit(kind, summary, *, target='', reason='', **data)``, as :meth:`EventEmitter.emit`."""


class Refusal(str, Enum):
    """Why a person's request was refused (the services' ``REFUSAL_*`` values; NONE: accepted)."""

    NONE = ''
    UNKNOWN_ESCALATION = 'unknown_escalation'
    CLOSED = 'closed'
    UNAUTHORISED = 'unauthorised'
    BAD_DECISION = 'bad_decision'
    HCW_MISSING = 'hcw_missing'
    HCW_NOT_IN_DIRECTORY = 'hcw_not_in_directory'
    HCW_UNAVAILABLE = 'hcw_unavailable'
    EMPTY = 'empty'
    BAD_VALUE = 'bad_value'
    UNKNOWN_TASK = 'unknown_task'


RESOLVE_DECISIONS = ('accept', 'reassign', 'retry', 'abort')
"""Decisions a person may send: ``accept`` takes the manager's proposal (published as that decision)."""

RAISE_KINDS = ('concern', 'stop_and_hold')
"""Escalations a person may raise (``RaiseEscalation.srv`` ``KIND_*``)."""

HOLD_OPTIONS = ['retry', 'abort']
"""Options of a hold escalation with no others: ``retry`` releases and carries on, ``abort`` ends the episode."""


class EscalationStep(BaseModel):
    """One step of an escalation (or a refused attempt at one), as stored and as an event."""

    escalation_id: str
    step: Literal['opened', 'renotified', 'acknowledged', 'resolved', 'expired', 'restored', 'refused']
    actor: str
    sim_s: float
    wall_s: float
    accepted: bool = True
    refusal: Refusal = Refusal.NONE
    message: str = ''
    data: dict = Field(default_factory=dict)


class InstructionRecord(BaseModel):
    """A person's free-text instruction to the team (or a refused attempt at one)."""

    instruction_id: str = ''
    operator_id: str
    task_id: str = ''
    text: str
    sim_s: float
    wall_s: float
    accepted: bool = True
    refusal: Refusal = Refusal.NONE
    message: str = ''


class HoldState(BaseModel):
    """Whether the team is held, by which hold escalations, since when."""

    active: bool = False
    escalation_ids: list[str] = Field(default_factory=list)
    reason: str = ''
    held_by: str = ''
    since_s: float | None = None


class Answer(BaseModel):
    """The desk's answer to a person's request (mapped onto the services' responses)."""

    accepted: bool
    refusal: Refusal = Refusal.NONE
    message: str
    escalation_id: str = ''
    instruction_id: str = ''


def id_number(identifier: str) -> int:
    """Return the number an ID ends with (``esc-10`` -> 10; 0 if none), to sort IDs by number."""
    tail = identifier.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else 0
