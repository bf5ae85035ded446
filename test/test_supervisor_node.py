"""The supervisor on a real ROS graph: authorization, reports, deadline escalation, human decisions.

The test publishes ``/clock`` itself, so sim-time deadlines elapse in a few wall milliseconds.
"""

import json

import pytest

from ros_helpers import wait_for

rclpy = pytest.importorskip('rclpy')

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from robot_team.contracts import names  # noqa: E402
from robot_team.contracts.config import load_scenario  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.ros.messages import event_from_msg, events_qos, reliable_qos, report_to_msg  # noqa: E402


class GraphProbe(Node):
    """The rest of the team, as the test drives it: clock, manager calls, robot reports, listeners."""

    def __init__(self, context):
        super().__init__('probe', context=context)
        from rosgraph_msgs.msg import Clock

        from robot_team.msg import Escalation, HumanDecision, TaskReport, TeamEvent
        from robot_team.srv import AuthorizeTask, RequestEscalation, ResolveEscalation, SubmitReport
        self.clock_pub = self.create_publisher(Clock, '/clock', 10)
        self.submit_client = self.create_client(SubmitReport, names.SUBMIT_REPORT)
        self.recorded = []
        self.create_subscription(TaskReport, names.TASK_REPORTS, self.recorded.append, reliable_qos())
        self.authorize = self.create_client(AuthorizeTask, names.AUTHORIZE_TASK)
        self.escalate = self.create_client(RequestEscalation, names.REQUEST_ESCALATION)
        self.resolve = self.create_client(ResolveEscalation, names.RESOLVE_ESCALATION)
        self.escalations, self.decisions, self.events = [], [], []
        self.create_subscription(Escalation, names.ESCALATIONS, self.escalations.append, reliable_qos())
        self.create_subscription(HumanDecision, names.HUMAN_DECISIONS, self.decisions.append, reliable_qos())
        self.create_subscription(TeamEvent, names.TEAM_EVENTS,
                                 lambda m: self.events.append(event_from_msg(m)), events_qos())

    def call(self, client, request):
        assert client.wait_for_service(timeout_sec=10.0), f'{client.srv_name} not available'
        future = client.call_async(request)
        assert wait_for(future.done), f'no answer from {client.srv_name}'
        return future.result()

    def submit(self, msg):
        """Submit a report as a robot does; return the supervisor's answer."""
        from robot_team.srv import SubmitReport
        return self.call(self.submit_client, SubmitReport.Request(report=msg))

    def set_time(self, seconds: float, node) -> None:
        """Publish /clock in 0.5 s steps up to ``seconds`` and wait until ``node`` sees it."""
        from builtin_interfaces.msg import Time
        from rosgraph_msgs.msg import Clock
        now = node.get_clock().now().nanoseconds * 1e-9
        steps = max(1, int((seconds - now) / 0.5))
        for i in range(1, steps + 1):
            t = now + (seconds - now) * i / steps
            sec = int(t)
            self.clock_pub.publish(Clock(clock=Time(sec=sec, nanosec=int((t - sec) * 1e9))))
            assert wait_for(lambda: node.get_clock().now().nanoseconds * 1e-9 >= t - 1e-6), \
                f'{node.get_name()} never saw /clock = {t}'

    def kinds(self, actor='supervisor'):
        return [e.kind for e in self.events if e.actor == actor]

    def find(self, kind, actor='supervisor', **data):
        return [e for e in self.events if e.actor == actor and e.kind == kind
                and all(e.data.get(k) == v for k, v in data.items())]


@pytest.fixture
def graph(ros_context, executor):
    from robot_team.agents.supervisor_node import SupervisorNode
    scenario = load_scenario('onboarding')
    supervisor = SupervisorNode(scenario, context=ros_context, parameter_overrides=[
        Parameter('use_sim_time', value=True), Parameter('issue_handling_deadline_s', value=5.0)])
    probe = GraphProbe(ros_context)
    for node in (supervisor, probe):
        executor.add_node(node)
    try:
        probe.set_time(1.0, supervisor)
        yield supervisor, probe
    finally:
        for node in (probe, supervisor):
            executor.remove_node(node)
            node.destroy_node()


def authorize(probe, task_type, robot, reason='', requested_by='manager', hcw_id=None):
    from robot_team.srv import AuthorizeTask
    hcw_id = ('90' if task_type == 'navigation' else '') if hcw_id is None else hcw_id
    return probe.call(probe.authorize, AuthorizeTask.Request(task_type=task_type, robot=robot, reason=reason,
                                                             requested_by=requested_by, hcw_id=hcw_id))


def resolve(probe, escalation_id, decision, hcw_id='', operator_id='charge_nurse'):
    from robot_team.srv import ResolveEscalation
    return probe.call(probe.resolve, ResolveEscalation.Request(escalation_id=escalation_id, decision=decision,
                                                               hcw_id=hcw_id, note='test',
                                                               operator_id=operator_id))


def test_gate_failure_deadline_escalation_and_decision(graph):
    supervisor, probe = graph
    assert wait_for(lambda: probe.find('node_started'))     # transient local: delivered late too
    [started] = probe.find('node_started')
    assert (started.data['issue_handling_deadline_s'], started.data['task_deadline_s']) == (5.0, 600.0)

    out_of_order = authorize(probe, 'info_collection', 'info_collection_robot')
    assert not out_of_order.approved and out_of_order.task_id == ''
    assert out_of_order.rule == out_of_order.RULE_ORDER
    assert 'navigation has not been delegated' in out_of_order.explanation
    wrong_robot = authorize(probe, 'navigation', 'display_robot')
    assert not wrong_robot.approved and 'navigation_robot' in wrong_robot.explanation
    assert wrong_robot.rule == wrong_robot.RULE_ROLE
    nav = authorize(probe, 'navigation', 'navigation_robot')
    assert nav.approved and nav.task_id == 'nav-1' and nav.rule == nav.RULE_OK
    assert wait_for(lambda: probe.find('workflow_violation', task_type='info_collection')
                    and probe.find('delegation_refused', robot='display_robot')
                    and probe.find('delegation_authorized', task_id='nav-1'))

    failure = TaskReportModel(task_id='nav-1', task_type='navigation', robot='navigation_robot',
                              status='failure', issue='HCW #80 did not answer the page', stamp_s=1.0)
    answer = probe.submit(report_to_msg(failure))
    assert answer.accepted, answer.explanation
    assert wait_for(lambda: probe.find('deadline_started', task_id='nav-1', deadline='issue_handling'))
    assert supervisor.snapshot().task('nav-1').status == 'failure'
    assert wait_for(lambda: [r.task_id for r in probe.recorded] == ['nav-1'])   # republished once recorded
    assert probe.find('deadline_met', task_id='nav-1', deadline='task')

    probe.set_time(5.5, supervisor)            # deadline due at 1 + 5 = 6 s of sim time
    assert probe.escalations == [] and not probe.find('deadline_missed')
    probe.set_time(7.0, supervisor)
    assert wait_for(lambda: probe.escalations)
    [escalation] = probe.escalations
    assert (escalation.escalation_id, escalation.task_id, escalation.task_type, escalation.raised_by) == (
        'esc-1', 'nav-1', 'navigation', 'supervisor')
    assert escalation.reason == 'manager did not handle the failure of nav-1 within 5 s'
    [missed] = probe.find('deadline_missed', task_id='nav-1')
    assert missed.data['deadline'] == 'issue_handling'
    assert wait_for(lambda: probe.find('escalation', escalation_id='esc-1', raised_by='supervisor'))

    bad_id = resolve(probe, 'esc-42', 'retry')
    assert not bad_id.accepted and "no escalation 'esc-42'" in bad_id.message and 'esc-1' in bad_id.message
    no_hcw = resolve(probe, 'esc-1', 'reassign')
    assert not no_hcw.accepted and 'needs hcw_id' in no_hcw.message
    assert wait_for(lambda: len(probe.find('input_error')) == 2)
    assert probe.decisions == []
    good = resolve(probe, 'esc-1', 'reassign', hcw_id='90')
    assert good.accepted, good.message
    assert wait_for(lambda: probe.decisions)
    [decision] = probe.decisions
    assert (decision.escalation_id, decision.decision, decision.hcw_id, decision.operator_id) == (
        'esc-1', 'reassign', '90', 'charge_nurse')
    assert wait_for(lambda: probe.find('human_decision', escalation_id='esc-1', hcw_id='90'))
    assert not resolve(probe, 'esc-1', 'abort').accepted      # once only

    retry = authorize(probe, 'navigation', 'navigation_robot')
    assert retry.approved and retry.task_id == 'nav-2'
    assert supervisor.snapshot().escalation('esc-1').status == 'resolved'


def test_manager_escalation_meets_the_deadline(graph):
    from robot_team.srv import RequestEscalation
    supervisor, probe = graph
    assert authorize(probe, 'navigation', 'navigation_robot').approved
    unknown = probe.call(probe.escalate, RequestEscalation.Request(task_id='nav-9', reason='help'))
    assert not unknown.accepted and "unknown task ID 'nav-9'" in unknown.message
    failure = TaskReportModel(task_id='nav-1', task_type='navigation', robot='navigation_robot',
                              status='failure', issue='door closed')
    probe.submit(report_to_msg(failure))
    assert wait_for(lambda: probe.find('deadline_started', task_id='nav-1', deadline='issue_handling'))
    answer = probe.call(probe.escalate, RequestEscalation.Request(task_id='nav-1', reason='ER-12 unreachable',
                                                                  options=['abort']))
    assert answer.accepted and answer.escalation_id == 'esc-1'
    assert wait_for(lambda: probe.find('deadline_met', task_id='nav-1', met_by='escalation esc-1'))
    assert wait_for(lambda: probe.escalations)
    assert probe.escalations[0].raised_by == 'manager' and list(probe.escalations[0].options) == ['abort']
    probe.set_time(10.0, supervisor)
    assert len(probe.escalations) == 1 and not probe.find('deadline_missed')
    assert resolve(probe, 'esc-1', 'abort').accepted   # the human closed the episode: nothing left to escalate
    again = probe.call(probe.escalate, RequestEscalation.Request(task_id='nav-1', reason='still unreachable'))
    assert not again.accepted and "closed the episode with 'abort' on esc-1" in again.message


def test_bad_reports_are_recorded_as_rejected(graph):
    supervisor, probe = graph
    assert authorize(probe, 'navigation', 'navigation_robot').approved
    malformed = report_to_msg(TaskReportModel(task_id='nav-1', task_type='navigation', robot='navigation_robot',
                                              status='success'))
    malformed.status = 'done'
    assert not probe.submit(malformed).accepted
    unknown = report_to_msg(TaskReportModel(task_id='nav-5', task_type='navigation', robot='navigation_robot',
                                            status='success'))
    assert not probe.submit(unknown).accepted
    impostor = report_to_msg(TaskReportModel(task_id='nav-1', task_type='navigation', robot='display_robot',
                                             status='success'))
    impostor.evidence_json = json.dumps({'claimed': True})
    assert not probe.submit(impostor).accepted
    assert probe.recorded == []
    assert wait_for(lambda: len(probe.find('report_rejected')) == 3)
    first, second, third = probe.find('report_rejected')
    assert 'status' in first.data['error'] and first.data['raw']['status'] == 'done'
    assert "unknown task ID 'nav-5'" in second.reason and second.data['raw']['task_id'] == 'nav-5'
    assert "comes from 'display_robot'" in third.reason
    assert json.loads(third.data['raw']['evidence_json']) == {'claimed': True}
    assert supervisor.snapshot().task('nav-1').status == 'running'


def test_a_robot_lost_again_while_its_back_notice_waits_is_never_announced_back_last(graph, monkeypatch):
    """The team hears the robot's changes in the order they happened: lost, then lost, no stale "back" after."""
    import time

    from robot_team.agents import supervisor_node
    from robot_team.contracts.liveness import LivenessChange
    from robot_team.msg import NodeLiveness
    supervisor, probe = graph
    monkeypatch.setattr(supervisor_node, 'BACK_NOTICE_WAIT_S', 1.0)   # no robot's cancel server: it waits that long
    heard = []
    probe.create_subscription(NodeLiveness, names.LIVENESS, lambda m: heard.append((m.node, m.state)), reliable_qos())
    assert wait_for(lambda: supervisor.count_subscribers(names.LIVENESS) >= 1)
    nav, display = names.Role.NAVIGATION.value, names.Role.DISPLAY.value

    def change(node, state, instance):
        supervisor.liveness_callback(LivenessChange(node=node, state=state, instance_id=instance, restarted=True,
                                                    noticed_by='liveliness' if state == 'lost' else ''))
    change(display, 'lost', 'd1')
    change(display, 'back', 'd2')                 # announced once its cancels are answered (here: their wait ends)
    change(nav, 'lost', 'n1')
    change(nav, 'back', 'n2')
    change(nav, 'lost', 'n2')                     # lost again while its back notice waits
    assert wait_for(lambda: (display, 'back') in heard)
    time.sleep(1.5)                               # beyond the navigation robot's back notice's wait
    assert [s for n, s in heard if n == display] == ['lost', 'back']
    assert [s for n, s in heard if n == nav] == ['lost', 'lost'], heard
    (withdrawn,) = probe.find('back_notice_withdrawn')
    assert withdrawn.target == nav and withdrawn.data['instance_id'] == 'n2'
    assert not supervisor.desk.deadlines_paused   # each notice's pause ended, the withdrawn one's too
    change(nav, 'back', 'n3')                     # back for good: announced
    assert wait_for(lambda: [s for n, s in heard if n == nav] == ['lost', 'lost', 'back'], timeout=5.0), heard
