"""A human operator's console access to escalations (what rqt's Service Caller also does).

:func:`list_escalations` reads ``/team/escalations`` (transient local, so past escalations of a
running team arrive) and ``/team/human_decisions``; :func:`resolve_escalation` calls
``/team/supervisor/resolve_escalation``. Both create a short-lived node in their own context.
"""

from __future__ import annotations

import time

from robot_team import names
from robot_team.events import reliable_qos


def _context(domain_id: int | None):
    import rclpy
    context = rclpy.Context()
    if domain_id is None:
        rclpy.init(context=context)
    else:
        rclpy.init(context=context, domain_id=domain_id)
    return context


def list_escalations(domain_id: int | None = None, listen_s: float = 2.0, namespace: str = '/') -> list[dict]:
    """Return the escalations a running team has published, each with its decision if any.

    Listens ``listen_s`` wall seconds (up to 5 s more until the supervisor is discovered). Each item:
    ``escalation_id, task_id, task_type, raised_by, reason, options, decision`` (``''`` while
    open), ``hcw_id``, ``operator_id``. ``namespace``: the team's namespace (``robot-team run --namespace``).

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from robot_team.msg import Escalation, HumanDecision
    namespace = names.validate_namespace(namespace, 'team namespace')
    context = _context(domain_id)
    found: dict[str, dict] = {}
    try:
        node = rclpy.create_node('escalation_console', namespace=namespace, context=context)
        node.create_subscription(Escalation, names.ESCALATIONS, lambda m: found.setdefault(m.escalation_id, {
            'escalation_id': m.escalation_id, 'task_id': m.task_id, 'task_type': m.task_type,
            'raised_by': m.raised_by, 'reason': m.reason, 'options': list(m.options), 'decision': '',
            'hcw_id': '', 'operator_id': ''}), reliable_qos())

        def decided(m):
            entry = found.setdefault(m.escalation_id, {'escalation_id': m.escalation_id})
            entry.update(decision=m.decision, hcw_id=m.hcw_id, operator_id=m.operator_id)
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
            # Listen at least listen_s; past it, wait (up to 5 s more) until the supervisor's
            # publishers are discovered and their transient-local history had 0.5 s to arrive.
            settled = matched_at is not None and now - matched_at >= 0.5
            if now - start >= listen_s and settled or now - start >= listen_s + 5.0:
                break
        node.destroy_node()
    finally:
        context.try_shutdown()
    return sorted(found.values(), key=lambda e: e['escalation_id'])


def resolve_escalation(escalation_id: str, decision: str, *, hcw_id: str = '', note: str = '',
                       operator_id: str = 'console', domain_id: int | None = None,
                       timeout_s: float = 10.0, namespace: str = '/') -> tuple[bool, str]:
    """Answer an escalation through the supervisor's service (in the team's ``namespace``); return (accepted, message).

    Raises
    ------
    ValueError
        If ``namespace`` is not a valid ROS namespace.
    TimeoutError
        If the supervisor's service is not available or does not answer within ``timeout_s``.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from robot_team.srv import ResolveEscalation
    namespace = names.validate_namespace(namespace, 'team namespace')
    context = _context(domain_id)
    try:
        node = rclpy.create_node('escalation_console', namespace=namespace, context=context)
        client = node.create_client(ResolveEscalation, names.RESOLVE_ESCALATION)
        if not client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f'service {names.RESOLVE_ESCALATION} is not available (is the team running, '
                               f'on this ROS_DOMAIN_ID?)')
        future = client.call_async(ResolveEscalation.Request(
            escalation_id=escalation_id, decision=decision, hcw_id=hcw_id, note=note, operator_id=operator_id))
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        if not future.done():
            raise TimeoutError(f'no answer from {names.RESOLVE_ESCALATION} within {timeout_s:.0f} s')
        response = future.result()
        node.destroy_node()
        return response.accepted, response.message
    finally:
        context.try_shutdown()
