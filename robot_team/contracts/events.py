"""The team's event record: every decision, tool call, report and escalation, timestamped.

This module holds the events as data (:class:`TeamEventModel`, :class:`EventKind`) and imports
no rclpy: the core uses it. Each node owns one :class:`~robot_team.ros.emitter.EventEmitter`; it
stamps events with ROS time (sim time under ``use_sim_time``) and wall time, numbers them per
actor (``seq`` from 1, so a lost event shows as a gap) and publishes them on ``/team/events``
(:mod:`robot_team.ros.messages` converts them to and from ``robot_team/msg/TeamEvent``). The recorder
writes them with the run (``events.jsonl`` and ``events.mcap``); the evaluation scores runs
from this record alone.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Callable

from pydantic import BaseModel, Field, ValidationError


class EventKind(str, Enum):
    """Kinds of team events. Payload conventions are documented per kind."""

    NODE_STARTED = 'node_started'
    NODE_STOPPED = 'node_stopped'
    NODE_CRASHED = 'node_crashed'            # data: returncode, stderr_tail
    NODE_RESTARTED = 'node_restarted'        # the runner (or launch's respawn) started it again; data: attempt
    NODE_RETURNED = 'node_returned'          # a node that left the graph is in it again, not restarted
    #                                          (its host was cut off the network); data: node, gone_for_s
    ROBOT_LOST = 'robot_lost'                # supervisor: a team node's liveliness lost; data: node, task_id, how
    ROBOT_BACK = 'robot_back'                # supervisor: it is alive again; data: node, restarted, lost_for_s
    BACK_NOTICE_WITHDRAWN = 'back_notice_withdrawn'  # supervisor: a robot back was lost again before the team
    #                                          heard it was back, so it never does; data: node, instance_id, restarted
    ROBOT_SEEN = 'robot_seen'                # supervisor: it heard a team node it did not know; data: node, instance_id
    OBSERVATION = 'observation'              # the manager saw an environment cue; data: cue, ...
    DELEGATION_REQUESTED = 'delegation_requested'  # data: task_type, robot, hcw_id, room, reason
    DELEGATION_REFUSED = 'delegation_refused'      # data: task_type, robot; reason: why refused
    DELEGATION_AUTHORIZED = 'delegation_authorized'  # supervisor approved; data: task_id, task_type, robot
    DELEGATION = 'delegation'                # goal sent; target: robot; data: task_id, task_type, hcw_id, room
    TASK_STARTED = 'task_started'            # actor: robot; data: task_id, task_type
    TOOL_CALL = 'tool_call'                  # actor: caller; target: tool; data: task_id, args
    TOOL_RESULT = 'tool_result'              # data: task_id, ok, result | error
    TOOL_REFUSED = 'tool_refused'            # the caller does not own the tool; never reached ROS
    TASK_REPORT = 'task_report'              # actor: robot; data: the TaskReportModel as dict
    REPORT_REJECTED = 'report_rejected'      # a report that did not validate; data: error, raw
    JUDGMENT = 'judgment'                    # manager judged a report; data: task_id, task_type, judged_status
    ALTERNATIVE_PROPOSED = 'alternative_proposed'  # manager's issue handling; data: task_id, hcw_id
    ESCALATION_REQUESTED = 'escalation_requested'
    ESCALATION = 'escalation'                # supervisor published one; data: escalation_id, task_id, raised_by
    ESCALATION_AWAITS_HUMAN = 'escalation_awaits_human'  # no scripted answer: a person must decide
    OPERATOR_DECISION = 'operator_decision'  # scripted operator; data: stage planned|sent, decision
    OPERATOR_DECISION_RESULT = 'operator_decision_result'  # the supervisor's answer to the operator
    HUMAN_DECISION = 'human_decision'        # data: escalation_id, decision, hcw_id, operator_id
    ESCALATION_ACKNOWLEDGED = 'escalation_acknowledged'  # data: escalation_id, operator_id, due_s
    ESCALATION_RENOTIFIED = 'escalation_renotified'      # still unanswered; data: escalation_id, notifications
    ESCALATION_EXPIRED = 'escalation_expired'            # nobody resolved it in time; data: safe_default
    ESCALATION_RESTORED = 'escalation_restored'          # taken up by a restarted supervisor; data: state
    WORKFLOW_RESTORED = 'workflow_restored'  # a restarted supervisor took up its workflow; data: restored_tasks, ...
    TEAM_HELD = 'team_held'                  # robots stopped, delegations refused; data: escalation_id, held_by
    TEAM_RELEASED = 'team_released'          # a hold escalation was resolved; data: team_free, held_for_s
    INSTRUCTION = 'instruction'              # a person's free-text instruction; data: operator_id, text
    GOALS_CANCELLED = 'goals_cancelled'      # a hold cancelled an action's goals; data: action, goals
    DEADLINE_STARTED = 'deadline_started'    # data: task_id, deadline_s
    DEADLINE_MET = 'deadline_met'
    DEADLINE_MISSED = 'deadline_missed'
    DEADLINES_POSTPONED = 'deadlines_postponed'  # nobody could act for a while; data: paused_for_s, why (list)
    WORKFLOW_VIOLATION = 'workflow_violation'
    FALSE_COMPLETION = 'false_completion'    # a success claim contradicting ground truth
    REFLECTION = 'reflection'                # data: the Reflection as dict
    REFLECTION_REJECTED = 'reflection_rejected'
    EPISODE_FINISHED = 'episode_finished'    # data: outcome (success, failure, escalated, timeout, interrupted)
    PATIENT_UNSERVED = 'patient_unserved'    # supervisor: a waiting case's patient waited the onboarding
    #                                          deadline and a person is asked to take them; data: patient_id,
    #                                          room, esi_level, assigned_hcw_id, required_specialty, serving
    #                                          (the case in progress), waited_s
    CASE_OPENED = 'case_opened'              # supervisor: a case starts (the gate serves it); data: case_id,
    #                                          patient_id, room, esi_level, arrived_s, waited_s, id_prefix
    CASE_WAITING = 'case_waiting'            # supervisor: an arrival waits for the case in progress; data:
    #                                          case_id, serving, room, esi_level, arrived_s
    CASE_CLOSED = 'case_closed'              # supervisor: a case's reflection was recorded; manager: a case
    #                                          ended (data outcome); data: case_id
    SAFE_DEFAULT = 'safe_default'            # supervisor: a missed manager deadline's safe default; data: directive
    TAKEOVER = 'takeover'                    # manager: the protocol brain took over its role; data: escalation_id
    SIM = 'sim'                              # ground truth from the simulator; data: what, ...
    INPUT_ERROR = 'input_error'              # bad input (scenario, world, directory, message, FHIR request:
    #                                          data http_status, issue_code, field, expected, found, refusal)
    FHIR_NOTIFICATION = 'fhir_notification'  # fhir_gateway: a FHIR notification acted on or answered; data:
    #                                          bundle_type, notification_type, subscription, encounters
    #                                          [{encounter, status, change, case_id, result}], http_status
    CASE_ENDED_BY_RECORD = 'case_ended_by_record'  # supervisor: the hospital's record ended a case (an Encounter
    #                                          finished or cancelled); data: case_id, status, reference,
    #                                          requested_by, result, escalation_id
    BRAIN_ERROR = 'brain_error'              # a brain raised or replied garbage; data: error
    LLM_REQUEST = 'llm_request'
    LLM_REPLY = 'llm_reply'
    LLM_ERROR = 'llm_error'
    INVALID_CALL = 'invalid_call'            # a call not acted on; data: caller, tool, category, error, raw
    REQUEST_ANSWERED_AGAIN = 'request_answered_again'  # supervisor: a request whose caller's ID it answered
    #                                          before (a resend to a restarted supervisor) got that answer
    #                                          again, not a second serving; data: service, request_id, answer
    RESPONSE_LOST = 'response_lost'          # a service's response the middleware never delivered (the request
    #                                          was served); data: service, attempts, waited_s


class TeamEventModel(BaseModel):
    """One team event (the Python side of ``robot_team/msg/TeamEvent``)."""

    stamp_s: float = Field(description='ROS time at the emitter (sim time under use_sim_time), s.')
    wall_time: float = Field(description='Wall-clock time, s since the Unix epoch.')
    seq: int = Field(ge=1, description='Per-actor sequence number, from 1.')
    actor: str
    kind: str
    target: str = ''
    summary: str = ''
    reason: str = ''
    data: dict[str, Any] = Field(default_factory=dict)


RAW_CHARS = 2000
"""Most characters of a raw reply or raw arguments kept in an ``invalid_call`` event."""

INVALID_CATEGORIES = ('unparsable_arguments', 'invalid_arguments', 'closed_set', 'invalid_reply',
                      'unresolved_reference', 'repeated_call', 'missing_prerequisite', 'outside_task')
"""``invalid_call`` categories: arguments that are not a JSON object; arguments that do not validate;
a value outside a closed set (an enum); a reply that is not the tool calls asked for; a ``$N``
reference to a call that did not succeed or a missing field; a call that already succeeded in the
same task with the same arguments; a call whose prerequisite tools (catalog ``requires``) have not
succeeded yet in the task; a call naming another room or HCW than its task's (catalog ``closed``)."""


def category_of(exc: Exception) -> str:
    """Return ``'closed_set'`` for a validation error about an enum or literal value, else ``'invalid_arguments'``."""
    if isinstance(exc, ValidationError) and any(e.get('type') in ('enum', 'literal_error') for e in exc.errors()):
        return 'closed_set'
    return 'invalid_arguments'


def invalid_call(emit: Callable[..., Any] | None, caller: str, tool: str, category: str, error: str,
                 raw: str = '', **data) -> None:
    """Record one invalid call as an ``invalid_call`` event (nothing if ``emit`` is None).

    Parameters
    ----------
    emit
        The caller's event emitter (``emit(kind, summary, *, target, reason, **data)``).
    caller, tool
        Who called, and the tool name as the model gave it ('' if none).
    category
        One of :data:`INVALID_CATEGORIES`.
    error
        The validation error, for people and for the model.
    raw
        The arguments or reply as received (cut to :data:`RAW_CHARS`).
    """
    if emit is None:
        return
    emit(EventKind.INVALID_CALL, f'{caller}: invalid {tool or "reply"} ({category})', target=tool or 'reply',
         reason=error, caller=caller, tool=tool, category=category, error=error, raw=(raw or '')[:RAW_CHARS], **data)


def case_emitter(emit: Callable[..., Any], current_case: Callable[[], str]) -> Callable[..., Any]:
    """Return ``emit`` that adds ``case_id=current_case()`` to an event's data unless it names its case.

    ``current_case()`` returns the case in progress ('' none: nothing is added). Used by the
    manager's and the supervisor's cores, whose every event belongs to the case they serve.
    """
    def emit_for_case(kind, summary: str, /, **data) -> Any:
        case = current_case()
        if case and 'case_id' not in data:
            data['case_id'] = case
        return emit(kind, summary, **data)
    return emit_for_case


def sequence_gaps(events: list[TeamEventModel]) -> dict[str, list[int]]:
    """Return, per actor, the sequence numbers missing from ``events`` (empty: record complete).

    A restarted node numbers its events from 1 again: in wall-time order, an actor's event numbered
    1 after others starts its next incarnation, whose gaps are reported under ``<actor>#<k>``
    (k = 2, 3...; the first incarnation keeps the actor's name).
    """
    runs: dict[str, list[set[int]]] = {}
    for event in sorted(events, key=lambda e: e.wall_time):
        incarnations = runs.setdefault(event.actor, [set()])
        if event.seq == 1 and incarnations[-1]:
            incarnations.append(set())
        incarnations[-1].add(event.seq)
    gaps = {}
    for actor, incarnations in runs.items():
        for k, got in enumerate(incarnations, 1):
            missing = sorted(set(range(1, max(got) + 1)) - got)
            if missing:
                gaps[actor if k == 1 else f'{actor}#{k}'] = missing
    return gaps
