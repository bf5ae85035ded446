"""Escalations on a real ROS graph: every bad input, deadline expiry and the hold, a supervisor restart.

The test publishes ``/clock`` itself (escalation deadlines run on sim time), serves a stand-in
RTLS (``ed/rtls/locate_staff``) and a navigation robot's ``execute_task`` action server whose
goal runs until it is cancelled, so the hold's cancellation is seen at a real action server.
"""

import threading
import time

import pytest

from ros_helpers import wait_for

rclpy = pytest.importorskip('rclpy')

from rclpy.action import ActionServer, CancelResponse  # noqa: E402
from rclpy.callback_groups import ReentrantCallbackGroup  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from robot_team.contracts import names  # noqa: E402
from robot_team.contracts.config import load_scenario, load_staff_seed, share_dir  # noqa: E402
from robot_team.core.escalations import EscalationPolicy, EscalationStore  # noqa: E402
from robot_team.directory import StaffDirectory  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.ros.messages import event_from_msg, events_qos, reliable_qos, report_to_msg  # noqa: E402

POLICY = EscalationPolicy(operators=['charge_nurse'], renotify_s=4.0,
                          deadlines_s={'critical': 20.0, 'high': 10.0, 'normal': 30.0})


class Team(Node):
    """The rest of the team as the test drives it: clock, RTLS, a navigation robot, people's calls."""

    def __init__(self, context):
        super().__init__('probe', context=context)
        from rosgraph_msgs.msg import Clock

        from robot_team.action import ExecuteTask
        from robot_team.msg import Escalation, HumanDecision, Instruction, StaffLocation, TeamEvent, TeamHold
        from robot_team.srv import (
            AcknowledgeEscalation, AuthorizeTask, LocateStaff, RaiseEscalation, RequestEscalation,
            ResolveEscalation, SendInstruction, SubmitReport)
        group = ReentrantCallbackGroup()
        self.clock_pub = self.create_publisher(Clock, '/clock', 10)
        self.services_ = {name: self.create_client(srv, service, callback_group=group) for name, srv, service in (
            ('authorize', AuthorizeTask, names.AUTHORIZE_TASK), ('submit', SubmitReport, names.SUBMIT_REPORT),
            ('escalate', RequestEscalation, names.REQUEST_ESCALATION),
            ('resolve', ResolveEscalation, names.RESOLVE_ESCALATION),
            ('ack', AcknowledgeEscalation, names.ACKNOWLEDGE_ESCALATION),
            ('raise', RaiseEscalation, names.RAISE_ESCALATION), ('instruct', SendInstruction, names.SEND_INSTRUCTION))}
        self.escalations, self.decisions, self.events, self.holds, self.instructions = [], [], [], [], []
        self.create_subscription(Escalation, names.ESCALATIONS, self.escalations.append, reliable_qos())
        self.create_subscription(HumanDecision, names.HUMAN_DECISIONS, self.decisions.append, reliable_qos())
        self.create_subscription(TeamHold, names.TEAM_HOLD, self.holds.append, reliable_qos(depth=1))
        self.create_subscription(Instruction, names.INSTRUCTIONS, self.instructions.append, reliable_qos())
        self.create_subscription(TeamEvent, names.TEAM_EVENTS,
                                 lambda m: self.events.append(event_from_msg(m)), events_qos())

        def locate(request, response):
            response.staff = [StaffLocation(hcw_id=h, availability=a, area=area, detail=d) for h, a, area, d in (
                ('80', 'busy', 'ER-3', 'on an urgent call'), ('90', 'available', 'Staff lounge', ''),
                ('91', 'busy', 'Triage', 'running triage'))]
            return response
        self.create_service(LocateStaff, names.LOCATE_STAFF, locate, callback_group=group)
        self.goal_cancelled = threading.Event()

        def execute(goal_handle):   # runs until cancelled, as a robot escorting an HCW does
            while not goal_handle.is_cancel_requested:
                time.sleep(0.02)
            self.goal_cancelled.set()
            goal_handle.canceled()
            return ExecuteTask.Result()
        self.robot = ActionServer(self, ExecuteTask, names.robot_name(names.Role.NAVIGATION, names.EXECUTE_TASK),
                                  execute_callback=execute, cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                  callback_group=group)
        from rclpy.action import ActionClient
        self.robot_client = ActionClient(self, ExecuteTask,
                                         names.robot_name(names.Role.NAVIGATION, names.EXECUTE_TASK),
                                         callback_group=group)

    def call(self, name, **fields):
        client = self.services_[name]
        assert client.wait_for_service(timeout_sec=10.0), f'{client.srv_name} not available'
        future = client.call_async(client.srv_type.Request(**fields))
        assert wait_for(future.done), f'no answer from {client.srv_name}'
        return future.result()

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
            assert wait_for(lambda: node.get_clock().now().nanoseconds * 1e-9 >= t - 1e-6)
            time.sleep(0.01)

    def latest(self, escalation_id):
        found = [m for m in self.escalations if m.escalation_id == escalation_id]
        return found[-1] if found else None

    def find(self, kind, **data):
        return [e for e in self.events if e.actor == 'supervisor' and e.kind == kind
                and all(e.data.get(k) == v for k, v in data.items())]

    def escort_with_concern(self, reason):
        """Start a navigation goal at the robot (it runs until cancelled) and raise a concern on it."""
        from robot_team.action import ExecuteTask
        auth = self.call('authorize', task_type='navigation', robot='navigation_robot', requested_by='manager',
                         hcw_id='80')
        assert self.robot_client.wait_for_server(timeout_sec=10.0)
        sent = self.robot_client.send_goal_async(ExecuteTask.Goal(task_id=auth.task_id, task_type='navigation'))
        assert wait_for(sent.done) and sent.result().accepted
        esc = self.call('raise', operator_id='triage_nurse', kind='concern', task_id=auth.task_id, reason=reason,
                        severity='high')
        assert esc.accepted
        return auth, esc

    def failed_navigation(self, supervisor):
        auth = self.call('authorize', task_type='navigation', robot='navigation_robot', requested_by='manager',
                         hcw_id='80')
        assert auth.approved
        report = TaskReportModel(task_id=auth.task_id, task_type='navigation', robot='navigation_robot',
                                 status='failure', issue='HCW #80 unavailable: on an urgent call')
        assert self.call('submit', report=report_to_msg(report)).accepted
        return auth.task_id


def start_supervisor(context, executor, tmp_path, staff_db=True):
    from robot_team.agents.supervisor_node import SupervisorNode
    params = [Parameter('use_sim_time', value=True), Parameter('issue_handling_deadline_s', value=100.0),
              Parameter('escalation_db', value=str(tmp_path / 'escalations.sqlite'))]
    if staff_db:
        db = tmp_path / 'staff.sqlite'
        if not db.exists():
            StaffDirectory.create(db, load_staff_seed(share_dir() / 'config' / 'staff.yaml'))
        params.append(Parameter('staff_db', value=str(db)))
    supervisor = SupervisorNode(load_scenario('onboarding'), escalation_policy=POLICY, context=context,
                                parameter_overrides=params)
    executor.add_node(supervisor)
    return supervisor


@pytest.fixture
def graph(ros_context, executor, tmp_path):
    team = Team(ros_context)
    executor.add_node(team)
    supervisor = start_supervisor(ros_context, executor, tmp_path)
    nodes = {'supervisor': supervisor}
    try:
        team.set_time(1.0, supervisor)
        yield nodes, team
    finally:
        for node in (nodes['supervisor'], team):
            executor.remove_node(node)
            node.destroy_node()


def test_every_bad_input_is_refused_with_a_reason_and_recorded(graph):
    nodes, team = graph
    supervisor = nodes['supervisor']
    task = team.failed_navigation(supervisor)
    esc = team.call('escalate', task_id=task, reason='HCW #80 unavailable', options=['reassign:90', 'retry'])
    assert esc.accepted and esc.escalation_id == 'esc-1'
    assert wait_for(lambda: supervisor.desk.staff.located_s is not None, timeout=10.0)   # RTLS asked

    R = team.services_['resolve'].srv_type.Response
    cases = [
        (team.call('resolve', escalation_id='esc-7', decision='retry', operator_id='charge_nurse'),
         R.REFUSAL_UNKNOWN_ESCALATION, "no escalation 'esc-7'; open escalations: esc-1"),
        (team.call('resolve', escalation_id='esc-1', decision='retry', operator_id='porter'),
         R.REFUSAL_UNAUTHORISED, "operator 'porter' is not authorised to resolve escalations"),
        (team.call('ack', escalation_id='esc-1', operator_id=''),
         R.REFUSAL_UNAUTHORISED, 'needs an operator_id'),
        (team.call('resolve', escalation_id='esc-1', decision='reassign', hcw_id='', operator_id='charge_nurse'),
         R.REFUSAL_HCW_MISSING, 'needs hcw_id'),
        (team.call('resolve', escalation_id='esc-1', decision='reassign', hcw_id='12', operator_id='charge_nurse'),
         R.REFUSAL_HCW_NOT_IN_DIRECTORY, 'HCW #12 is not in the staff directory'),
        (team.call('resolve', escalation_id='esc-1', decision='reassign', hcw_id='91', operator_id='charge_nurse'),
         R.REFUSAL_HCW_UNAVAILABLE, 'HCW #91 (Dr. Mei Tanaka) is not available (busy: running triage'),
        (team.call('resolve', escalation_id='esc-1', decision='maybe', operator_id='charge_nurse'),
         R.REFUSAL_BAD_DECISION, "unknown decision 'maybe'"),
        (team.call('instruct', operator_id='charge_nurse', text='  '), 'empty', 'instruction needs text'),
        (team.call('instruct', operator_id='porter', text='hurry'), 'unauthorised', 'not authorised to instruct'),
        (team.call('raise', operator_id='porter', kind='concern', task_id='', reason=''), 'empty', 'needs a reason'),
        (team.call('raise', operator_id='porter', kind='concern', task_id='nav-9', reason='x'), 'unknown_task',
         "unknown task ID 'nav-9'"),
    ]
    for answer, refusal, words in cases:
        assert not answer.accepted and answer.refusal == refusal and words in answer.message, answer
    assert wait_for(lambda: len(team.find('input_error')) == len(cases))
    steps = supervisor.desk.store.steps('esc-1')
    refused = [(s.step, s.refusal.value) for s in steps if not s.accepted]
    assert refused == [('refused', refusal) for _, refusal, _ in cases[1:7]]
    assert len([i for i in supervisor.desk.store.instructions() if not i.accepted]) == 2
    time.sleep(0.2)
    assert team.decisions == [] and team.instructions == [] and team.latest('esc-1').state == 'open'

    assert team.call('ack', escalation_id='esc-1', operator_id='charge_nurse').accepted
    good = team.call('resolve', escalation_id='esc-1', decision='accept', operator_id='charge_nurse')
    assert good.accepted and good.refusal == '' and 'Dr. Lucas Brennan' in good.message, good.message
    assert wait_for(lambda: team.decisions)
    assert (team.decisions[0].decision, team.decisions[0].hcw_id) == ('reassign', '90')
    closed = team.call('resolve', escalation_id='esc-1', decision='abort', operator_id='charge_nurse')
    assert not closed.accepted and closed.refusal == R.REFUSAL_CLOSED
    instruction = team.call('instruct', operator_id='charge_nurse', task_id=task, text='Page #90 early next time')
    assert instruction.accepted and instruction.instruction_id == 'instr-1'
    assert wait_for(lambda: team.instructions and team.instructions[0].text == 'Page #90 early next time')
    assert wait_for(lambda: [m.state for m in team.escalations if m.escalation_id == 'esc-1'][-2:]
                    == ['acknowledged', 'resolved'])


def test_a_persons_abort_cancels_the_task_a_robot_is_still_running(graph):
    """After the human's abort a navigation robot went on paging an HCW for 35 s: the abort stops it."""
    nodes, team = graph
    _, esc = team.escort_with_concern('the badge office must reissue the badge')
    time.sleep(0.5)
    assert not team.goal_cancelled.is_set()    # an open escalation alone does not stop the robots
    closed = team.call('resolve', escalation_id=esc.escalation_id, decision='abort', operator_id='charge_nurse')
    assert closed.accepted and 'the episode is closed' in closed.message, closed.message
    assert wait_for(team.goal_cancelled.is_set, timeout=10.0), 'the running task was not cancelled'
    assert wait_for(lambda: team.find('goals_cancelled', action='navigation_robot/execute_task')
                    and team.find('goals_cancelled', action='navigation_robot/execute_task')[0].data['goals'])
    [cancel] = team.find('goals_cancelled', action='navigation_robot/execute_task')
    assert f'abort on {esc.escalation_id}' in cancel.reason


def test_deadline_expiry_holds_the_team_and_cancels_the_robots_goals(graph):
    nodes, team = graph
    supervisor = nodes['supervisor']
    auth, esc = team.escort_with_concern('the escort takes long')
    assert esc.escalation_id == 'esc-1'
    team.set_time(6.0, supervisor)                          # re-notified after 4 s, unacknowledged
    assert wait_for(lambda: team.latest('esc-1').notifications == 2)
    assert wait_for(lambda: team.find('escalation_renotified', escalation_id='esc-1'))
    assert not team.goal_cancelled.is_set()
    team.set_time(12.0, supervisor)                         # due at 1 + 10 s: expired, safe default: hold
    assert wait_for(lambda: team.latest('esc-1').state == 'expired')
    assert team.latest('esc-1').decided_by == 'supervisor' and team.latest('esc-1').decision == 'hold'
    assert wait_for(lambda: team.latest('esc-2') is not None)
    hold = team.latest('esc-2')
    assert (hold.kind, hold.severity, hold.holds_team, hold.task_id) == ('hold', 'critical', True, auth.task_id)
    assert wait_for(team.goal_cancelled.is_set, timeout=10.0), 'the robot goal was not cancelled'
    assert wait_for(lambda: team.holds and team.holds[-1].active and list(team.holds[-1].escalation_ids) == ['esc-2'])
    assert wait_for(lambda: team.find('goals_cancelled', action='navigation_robot/execute_task')
                    and team.find('goals_cancelled', action='navigation_robot/execute_task')[0].data['goals'])
    [expired] = team.find('escalation_expired', escalation_id='esc-1')
    assert expired.data['safe_default'] == 'hold' and 'within 10 s (high)' in expired.reason
    refused = team.call('authorize', task_type='info_collection', robot='info_collection_robot',
                        requested_by='manager')
    assert not refused.approved and refused.rule == refused.RULE_HELD

    late = team.call('resolve', escalation_id='esc-1', decision='retry', operator_id='charge_nurse')
    assert not late.accepted and 'resolve esc-2 instead' in late.message
    team.set_time(60.0, supervisor)                         # a hold escalation never expires
    assert team.latest('esc-2').state == 'open' and team.holds[-1].active
    released = team.call('resolve', escalation_id='esc-2', decision='retry', operator_id='charge_nurse')
    assert released.accepted and 'hold is released' in released.message
    assert wait_for(lambda: not team.holds[-1].active)
    assert wait_for(lambda: team.find('team_released', escalation_id='esc-2', team_free=True))


def test_a_restarted_supervisor_takes_up_open_escalations_and_holds(graph, ros_context, executor, tmp_path):
    nodes, team = graph
    first = nodes['supervisor']
    task = team.failed_navigation(first)
    assert team.call('escalate', task_id=task, reason='HCW #80 unavailable', options=['reassign:90']).accepted
    stop = team.call('raise', operator_id='security', kind='stop_and_hold', reason='fire door alarm')
    assert stop.accepted and stop.escalation_id == 'esc-2'
    assert wait_for(lambda: team.holds and team.holds[-1].active)
    executor.remove_node(first)
    first.destroy_node()
    team.escalations.clear()
    team.holds.clear()

    second = start_supervisor(ros_context, executor, tmp_path)
    nodes['supervisor'] = second
    # A new node: discovery, then the transient-local history (slow on a loaded 2-core machine).
    assert wait_for(lambda: team.latest('esc-1') is not None and team.latest('esc-2') is not None, timeout=30.0)
    assert team.latest('esc-1').state == 'open' and team.latest('esc-1').proposal == 'reassign:90'
    assert wait_for(lambda: team.holds and team.holds[-1].active, timeout=30.0)
    assert wait_for(lambda: len(team.find('escalation_restored')) >= 2, timeout=30.0)
    started = wait_for(lambda: [e for e in team.find('node_started') if e.data.get('restored_escalations')])
    assert started and started[-1].data['restored_escalations'] == ['esc-1', 'esc-2']
    refused = team.call('authorize', task_type='navigation', robot='navigation_robot', requested_by='manager',
                        hcw_id='80')
    assert not refused.approved and refused.rule == refused.RULE_HELD

    assert team.call('resolve', escalation_id='esc-1', decision='accept', operator_id='charge_nurse').accepted
    assert team.call('resolve', escalation_id='esc-2', decision='retry', operator_id='charge_nurse').accepted
    assert wait_for(lambda: not team.holds[-1].active)
    third = team.call('raise', operator_id='security', kind='concern', reason='check ER-12 door')
    assert third.accepted and third.escalation_id == 'esc-3'
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    assert [(r.escalation_id, r.state.value) for r in store.escalations()] == [
        ('esc-1', 'resolved'), ('esc-2', 'resolved'), ('esc-3', 'open')]
    assert [s.step for s in store.steps('esc-1')] == ['opened', 'restored', 'resolved']
