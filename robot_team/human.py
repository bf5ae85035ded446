"""A person's console access to escalations (what rqt's topic monitor and Service Caller also do).

:func:`list_escalations` and :func:`watch_escalations` read ``team/escalations`` (reliable,
transient local, so past escalations of a running team arrive; the latest message per
escalation is its state) and ``team/human_decisions``; :func:`resolve_escalation`,
:func:`acknowledge_escalation`, :func:`raise_escalation` and :func:`send_instruction` call the
supervisor's services. Each creates a short-lived node in its own context, in the team's
namespace.
"""

from __future__ import annotations

import time
from typing import Callable

import rclpy
from rclpy.executors import SingleThreadedExecutor

from robot_team.contracts import names
from robot_team.msg import Escalation, HumanDecision
from robot_team.ros.messages import reliable_qos
from robot_team.ros.stamps import stamp_to_s
from robot_team.srv import AcknowledgeEscalation, RaiseEscalation, ResolveEscalation, SendInstruction


def _context(domain_id: int | None):
    context = rclpy.Context()
    if domain_id is None:
        rclpy.init(context=context)
    else:
        rclpy.init(context=context, domain_id=domain_id)
    return context


def escalation_dict(msg) -> dict:
    """Return an ``Escalation`` message as a dict (times in s; ``due_s`` None when it never expires)."""
    return {'escalation_id': msg.escalation_id, 'task_id': msg.task_id, 'task_type': msg.task_type,
            'raised_by': msg.raised_by, 'reason': msg.reason, 'options': list(msg.options), 'kind': msg.kind,
            'severity': msg.severity, 'state': msg.state, 'proposal': msg.proposal,
            'opened_s': stamp_to_s(msg.opened), 'opened_wall': msg.opened_wall,
            'due_s': stamp_to_s(msg.due) or None, 'notifications': msg.notifications,
            'acknowledged_by': msg.acknowledged_by, 'decision': msg.decision, 'hcw_id': msg.hcw_id,
            'operator_id': msg.decided_by, 'note': msg.note, 'holds_team': msg.holds_team,
            'patient_id': msg.patient_id,
            'stamp_s': stamp_to_s(msg.stamp)}


def _listen(domain_id: int | None, namespace: str, until: Callable[[float, bool], bool],
            on_escalation: Callable[[dict], None]) -> None:
    """Spin a console node on ``team/escalations`` and ``team/human_decisions`` until ``until(elapsed, settled)``."""
    namespace = names.validate_namespace(namespace, 'team namespace')
    context = _context(domain_id)
    try:
        node = rclpy.create_node('escalation_console', namespace=namespace, context=context)
        node.create_subscription(Escalation, names.ESCALATIONS, lambda m: on_escalation(escalation_dict(m)),
                                 reliable_qos())

        def decided(m):   # older supervisors publish decisions only here
            on_escalation({'escalation_id': m.escalation_id, 'decision': m.decision, 'hcw_id': m.hcw_id,
                           'operator_id': m.operator_id, 'note': m.note, '_decision_only': True})
        node.create_subscription(HumanDecision, names.HUMAN_DECISIONS, decided, reliable_qos())
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        start = time.monotonic()
        matched_at = None
        while True:
            executor.spin_once(timeout_sec=0.05)
            now = time.monotonic()
            topics = (names.ESCALATIONS, names.HUMAN_DECISIONS)
            if matched_at is None and all(node.count_publishers(t) for t in topics):
                matched_at = now
            # Settled: the supervisor's publishers are discovered and their transient-local
            # history had 0.5 s to arrive.
            if until(now - start, matched_at is not None and now - matched_at >= 0.5):
                break
        node.destroy_node()
    finally:
        context.try_shutdown()


def list_escalations(domain_id: int | None = None, listen_s: float = 2.0, namespace: str = '/') -> list[dict]:
    """Return the escalations a running team has published, each in its latest state.

    Listens ``listen_s`` wall seconds (up to 5 s more until the supervisor is discovered). Each item
    is :func:`escalation_dict`'s (``decision`` ``''`` while open, ``operator_id`` who decided).
    ``namespace``: the team's namespace (``robot-team run --namespace``).

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    """
    found: dict[str, dict] = {}

    def take(item: dict) -> None:
        entry = found.setdefault(item['escalation_id'], {'escalation_id': item['escalation_id']})
        if item.pop('_decision_only', False):
            entry.update({k: v for k, v in item.items() if v or k not in entry})
        else:
            entry.update(item)
    _listen(domain_id, namespace, lambda elapsed, settled: elapsed >= listen_s and settled or
            elapsed >= listen_s + 5.0, take)
    return sorted(found.values(), key=lambda e: _number(e['escalation_id']))


def watch_escalations(on_change: Callable[[dict], None], domain_id: int | None = None, namespace: str = '/',
                      duration_s: float | None = None) -> None:
    """Call ``on_change`` with every escalation step a running team publishes, until ``duration_s`` (or Ctrl-C).

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    """
    def take(item: dict) -> None:
        if not item.pop('_decision_only', False):
            on_change(item)
    try:
        _listen(domain_id, namespace, lambda elapsed, _settled: duration_s is not None and elapsed >= duration_s,
                take)
    except KeyboardInterrupt:
        pass


def _number(identifier: str) -> int:
    tail = identifier.rsplit('-', 1)[-1]
    return int(tail) if tail.isdigit() else 0


def call_supervisor(srv_type, service: str, request, *, domain_id: int | None = None, namespace: str = '/',
                    timeout_s: float = 10.0):
    """Call one of the supervisor's services (``service`` relative to the team ``namespace``); return the response.

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    TimeoutError
        If the service is not available or does not answer within ``timeout_s`` (wall s).
    """
    namespace = names.validate_namespace(namespace, 'team namespace')
    context = _context(domain_id)
    try:
        node = rclpy.create_node('escalation_console', namespace=namespace, context=context)
        client = node.create_client(srv_type, service)
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f'service {names.join(namespace, service)} is not available (is the team running, '
                               f'on this ROS_DOMAIN_ID and namespace?)')
        future = client.call_async(request)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        if not future.done():
            raise TimeoutError(f'no answer from {names.join(namespace, service)} within {timeout_s:.0f} s')
        response = future.result()
        node.destroy_node()
        return response
    finally:
        context.try_shutdown()


def resolve_escalation(escalation_id: str, decision: str, *, hcw_id: str = '', note: str = '',
                       operator_id: str = '', domain_id: int | None = None,
                       timeout_s: float = 10.0, namespace: str = '/') -> tuple[bool, str]:
    """Answer an escalation through the supervisor's service; return ``(accepted, message)``.

    ``decision``: ``accept`` (the manager's proposal), ``reassign`` (with ``hcw_id``), ``retry``
    or ``abort``; ``operator_id`` must be an authorised operator.

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    TimeoutError
        If the supervisor's service is not available or does not answer within ``timeout_s``.
    """
    response = call_supervisor(ResolveEscalation, names.RESOLVE_ESCALATION, ResolveEscalation.Request(
        escalation_id=escalation_id, decision=decision, hcw_id=hcw_id, note=note, operator_id=operator_id),
        domain_id=domain_id, namespace=namespace, timeout_s=timeout_s)
    return response.accepted, response.message


def acknowledge_escalation(escalation_id: str, *, operator_id: str, note: str = '', domain_id: int | None = None,
                           timeout_s: float = 10.0, namespace: str = '/') -> tuple[bool, str]:
    """Acknowledge an escalation ("I have it"); return ``(accepted, message)`` (errors as :func:`call_supervisor`)."""
    response = call_supervisor(AcknowledgeEscalation, names.ACKNOWLEDGE_ESCALATION, AcknowledgeEscalation.Request(
        escalation_id=escalation_id, operator_id=operator_id, note=note), domain_id=domain_id, namespace=namespace,
        timeout_s=timeout_s)
    return response.accepted, response.message


def raise_escalation(reason: str, *, operator_id: str, kind: str = 'concern', task_id: str = '',
                     severity: str = '', domain_id: int | None = None, timeout_s: float = 10.0,
                     namespace: str = '/') -> tuple[bool, str, str]:
    """Raise a concern or a stop-and-hold; return ``(accepted, escalation_id, message)`` (errors as above)."""
    response = call_supervisor(RaiseEscalation, names.RAISE_ESCALATION, RaiseEscalation.Request(
        operator_id=operator_id, kind=kind, task_id=task_id, reason=reason, severity=severity),
        domain_id=domain_id, namespace=namespace, timeout_s=timeout_s)
    return response.accepted, response.escalation_id, response.message


def send_instruction(text: str, *, operator_id: str, task_id: str = '', domain_id: int | None = None,
                     timeout_s: float = 10.0, namespace: str = '/') -> tuple[bool, str, str]:
    """Send a free-text instruction to the team; return ``(accepted, instruction_id, message)`` (errors as above)."""
    response = call_supervisor(SendInstruction, names.SEND_INSTRUCTION, SendInstruction.Request(
        operator_id=operator_id, task_id=task_id, text=text), domain_id=domain_id, namespace=namespace,
        timeout_s=timeout_s)
    return response.accepted, response.instruction_id, response.message
