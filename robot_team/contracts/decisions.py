"""Who made each decision: an LLM, the protocol brain, the protocol brain as a fallback, or a human.

Every decision event carries ``data['source']`` (:class:`DecisionSource`): the manager's
delegation requests, escalation requests, reflections and judgments, the robots' reports and
tool calls, the humans' decisions. The rubric's attempted view scores only what the LLM decided
(a decision of the fallback counts as the LLM not deciding); the run report and the evaluation
tables count decisions per source and the takeovers. Pure functions over the event record.
"""

from __future__ import annotations

from enum import Enum
from typing import Collection, Iterable

from robot_team.contracts.events import EventKind, TeamEventModel


class DecisionSource(str, Enum):
    """Who decided."""

    LLM = 'llm'              # an LLM brain, through its endpoint
    PROTOCOL = 'protocol'    # the protocol brain, as the configured brain (``--brain protocol``)
    FALLBACK = 'fallback'    # the protocol brain standing in for an LLM (endpoint down, or a takeover)
    HUMAN = 'human'          # a person (rqt, the console, the scripted operator of unattended runs)


DECISION_KINDS: frozenset[str] = frozenset(k.value for k in (
    EventKind.DELEGATION_REQUESTED, EventKind.ESCALATION_REQUESTED, EventKind.REFLECTION, EventKind.JUDGMENT,
    EventKind.TASK_REPORT, EventKind.HUMAN_DECISION))
"""Event kinds counted as decisions (a tool call is part of its task's decision, the report)."""


def source_of(event: TeamEventModel) -> str:
    """Return the event's decision source ('' when it carries none)."""
    return str(event.data.get('source') or '')


def count_decisions(events: Iterable[TeamEventModel]) -> dict[str, int]:
    """Return the number of decisions per source (every :class:`DecisionSource`, 0 when absent)."""
    counts = {s.value: 0 for s in DecisionSource}
    for event in events:
        source = source_of(event)
        if event.kind in DECISION_KINDS and source in counts:
            counts[source] += 1
    return counts


def count_takeovers(events: Iterable[TeamEventModel]) -> int:
    """Return how many times the protocol brain took over a role (``takeover`` events)."""
    return sum(1 for e in events if e.kind == EventKind.TAKEOVER.value)


def without_fallback(events: Iterable[TeamEventModel], actors: Collection[str] | None = None) -> list[TeamEventModel]:
    """Return ``events`` without those the fallback decided (what an LLM attempted, and the rest).

    With ``actors``, only the fallback's events of those actors (node names, e.g. ``{'manager'}``)
    are left out: the rubric's manager cells keep a robot's report written by its fallback (the
    manager's LLM still judged and handled it), and its robot cells keep the manager's.
    """
    return [e for e in events if not (source_of(e) == DecisionSource.FALLBACK.value
                                      and (actors is None or e.actor in actors))]
