"""The supervisor console's ROS side: feeds the presenter from the team's topics, calls the supervisor.

:class:`ConsoleClient` uses a node it is given (rqt's, or the standalone console's) and reaches
the team by absolute names in the team's namespace, so the node itself may live anywhere:

- subscriptions (reliable, transient local: a console that starts late still gets the state):
  ``team/escalations``, ``team/hold``, ``team/staff``, ``team/task_reports`` and ``team/events``
  (authorized tasks, task deadlines missed; every event for the floor map's scene);
- the floor map's feed (:class:`~robot_team.ros.scene.SceneFeed`): each robot's ``amcl_pose``
  and the RTLS stream ``ed/rtls/locations``, into the presenter's ``scene``;
- service clients: ``team/supervisor/{acknowledge,resolve,raise}_escalation`` and
  ``team/supervisor/send_instruction``, called with ``call_async`` and a done callback (never
  blocking the executor or the GUI).
"""

from __future__ import annotations

import json

from robot_team.contracts import names
from robot_team.console.presenter import ConsolePresenter, Done
from robot_team.contracts.events import EventKind
from robot_team.human import escalation_dict
from robot_team.msg import Escalation, NodeLiveness, StaffBoard, TaskReport, TeamEvent, TeamHold
from robot_team.ros.messages import event_from_msg, events_qos, reliable_qos
from robot_team.ros.scene import SceneFeed
from robot_team.srv import AcknowledgeEscalation, RaiseEscalation, ResolveEscalation, SendInstruction


class ConsoleClient:
    """The console's :class:`~robot_team.console.presenter.ConsolePort` on a ROS node.

    Parameters
    ----------
    node
        The rclpy node to create subscriptions and clients on; it must be spun by the caller's
        executor.
    presenter
        Fed with what the team publishes; set its ``port`` to this client.
    team_namespace
        The team's namespace (``/`` by default; ``robot-team run --namespace``).

    Raises
    ------
    ValueError
        If ``team_namespace`` is not a valid ROS namespace.
    """

    def __init__(self, node, presenter: ConsolePresenter, team_namespace: str = '/'):
        self.node = node
        self.presenter = presenter
        self.namespace = names.validate_namespace(team_namespace, 'team namespace')
        self._name = lambda relative: names.join(self.namespace, relative)
        self._subscriptions = [
            node.create_subscription(Escalation, self._name(names.ESCALATIONS), self._escalation, reliable_qos()),
            node.create_subscription(TeamHold, self._name(names.TEAM_HOLD), self._hold, reliable_qos(depth=1)),
            node.create_subscription(StaffBoard, self._name(names.STAFF_BOARD), self._staff, reliable_qos(depth=1)),
            node.create_subscription(TaskReport, self._name(names.TASK_REPORTS), self._report, reliable_qos()),
            node.create_subscription(TeamEvent, self._name(names.TEAM_EVENTS), self._event, events_qos()),
            node.create_subscription(NodeLiveness, self._name(names.LIVENESS), self._liveness, reliable_qos()),
        ]
        self._clients = {
            'acknowledge': (node.create_client(AcknowledgeEscalation, self._name(names.ACKNOWLEDGE_ESCALATION)),
                            AcknowledgeEscalation),
            'resolve': (node.create_client(ResolveEscalation, self._name(names.RESOLVE_ESCALATION)),
                        ResolveEscalation),
            'raise': (node.create_client(RaiseEscalation, self._name(names.RAISE_ESCALATION)), RaiseEscalation),
            'instruct': (node.create_client(SendInstruction, self._name(names.SEND_INSTRUCTION)), SendInstruction),
        }
        self.feed = SceneFeed(node, presenter.scene, self.namespace)
        presenter.port = self

    def connected(self) -> bool:
        """Return whether the supervisor's hold and escalation publishers are discovered."""
        return all(self.node.count_publishers(self._name(t)) for t in (names.TEAM_HOLD, names.ESCALATIONS))

    def destroy(self) -> None:
        """Remove the console's subscriptions and clients from the node."""
        self.feed.destroy()
        for sub in self._subscriptions:
            self.node.destroy_subscription(sub)
        for client, _ in self._clients.values():
            self.node.destroy_client(client)

    # --- ConsolePort --------------------------------------------------------------------------

    def acknowledge(self, escalation_id: str, operator_id: str, note: str, done: Done) -> None:
        """Call ``acknowledge_escalation``; ``done(accepted, message)`` when it answers."""
        self._call('acknowledge', done, escalation_id=escalation_id, operator_id=operator_id, note=note)

    def resolve(self, escalation_id: str, decision: str, hcw_id: str, note: str, operator_id: str,
                done: Done) -> None:
        """Call ``resolve_escalation``; ``done(accepted, message)`` when it answers."""
        self._call('resolve', done, escalation_id=escalation_id, decision=decision, hcw_id=hcw_id, note=note,
                   operator_id=operator_id)

    def raise_escalation(self, kind: str, task_id: str, reason: str, severity: str, operator_id: str,
                         done: Done) -> None:
        """Call ``raise_escalation``; ``done(accepted, message)`` when it answers."""
        self._call('raise', done, kind=kind, task_id=task_id, reason=reason, severity=severity,
                   operator_id=operator_id)

    def instruct(self, text: str, task_id: str, operator_id: str, done: Done) -> None:
        """Call ``send_instruction``; ``done(accepted, message)`` when it answers."""
        self._call('instruct', done, text=text, task_id=task_id, operator_id=operator_id)

    def _call(self, which: str, done: Done, **fields) -> None:
        client, srv_type = self._clients[which]
        if not client.service_is_ready():
            done(False, f'service {client.srv_name} is not available (is the team running, on this domain and '
                        f'namespace?)')
            return

        def answered(future) -> None:
            exc = future.exception()
            if exc is not None:
                done(False, f'{client.srv_name} failed: {exc}')
            else:
                response = future.result()
                done(bool(response.accepted), response.message)
        client.call_async(srv_type.Request(**fields)).add_done_callback(answered)

    # --- Subscriptions ------------------------------------------------------------------------

    def _escalation(self, msg) -> None:
        self.presenter.on_escalation(escalation_dict(msg))

    def _hold(self, msg) -> None:
        self.presenter.on_hold(msg.active, list(msg.escalation_ids), msg.reason, msg.held_by)

    def _staff(self, msg) -> None:
        self.presenter.on_staff([{'hcw_id': s.hcw_id, 'name': s.name, 'specialty': s.specialty, 'role': s.role,
                                  'area': s.area, 'availability': s.availability, 'detail': s.detail}
                                 for s in msg.staff])

    def _report(self, msg) -> None:
        try:
            evidence = json.loads(msg.evidence_json) if msg.evidence_json else {}
        except json.JSONDecodeError:
            evidence = {}
        self.presenter.on_task_report(msg.task_id, msg.task_type, msg.robot, msg.status, msg.issue,
                                      evidence if isinstance(evidence, dict) else {})

    def _liveness(self, msg) -> None:
        self.presenter.on_liveness(msg.node, msg.state, msg.restarted, msg.task_id, msg.noticed_by)

    def _event(self, msg) -> None:
        event = event_from_msg(msg)   # its data parsed once, for the floor map and the task board
        self.feed.on_event(event)
        wanted = (EventKind.DELEGATION_AUTHORIZED.value, EventKind.DEADLINE_MISSED.value)
        if msg.actor != names.SUPERVISOR or msg.kind not in wanted or 'parse_error' in event.data:
            return
        data = event.data
        if msg.kind == EventKind.DELEGATION_AUTHORIZED.value:
            self.presenter.on_task_authorized(data.get('task_id', ''), data.get('task_type', ''),
                                              data.get('robot', ''))
        elif data.get('deadline') == 'task':
            self.presenter.on_task_failed(data.get('task_id', ''), msg.reason)
