"""The manager node on a real ROS graph, against a stand-in supervisor and robot.

When a robot's ExecuteTask result never reaches the manager (a result request lost on its way to
a restarted robot: rclpy's ActionClient asks only once), the supervisor's recorded copy of the
report on ``team/task_reports`` is taken, and the result that comes later is not judged again.
A goal response a lost robot never sent holds the follow clock's jumps only until the supervisor
closes that task. A robot's ExecuteTask server that DDS has not discovered yet is waited for with
sim time held (``team/clock_holds``), and the goal goes once it is found.
"""

import json
import threading
import time
from contextlib import contextmanager

import rclpy
from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup

from robot_team.contracts import names
from robot_team.action import ExecuteTask
from robot_team.agents.manager_node import RESULT_GRACE_S, ManagerNode
from robot_team.llm.lockstep import SERVER_DISCOVERY, clock_holds_qos
from robot_team.msg import ClockHold, PatientArrival, TaskReport, TeamEvent
from robot_team.contracts.reports import TaskStatus, TaskReportModel
from robot_team.ros.messages import reliable_qos, report_to_msg
from robot_team.ros.util import SERVER_WAIT_S
from robot_team.srv import AuthorizeTask, RequestEscalation
from ros_helpers import wait_for


@contextmanager
def _manager_beside_stand_ins(ros_context, executor, release: threading.Event, **action_server):
    """A real ManagerNode beside a stand-in supervisor (it approves every delegation, accepts every
    escalation) and a stand-in navigation robot (``action_server``: its ExecuteTask callbacks; none:
    no ExecuteTask server yet).

    Yields ``(stand_in, manager, reports, arrivals)``: the stand-in node, the manager, and publishers
    on ``team/task_reports`` and ``ed/patient_arrivals`` the manager has matched. ``release`` is set
    at the end, so that a callback that holds its answer back returns.
    """
    group = ReentrantCallbackGroup()
    stand_in = rclpy.create_node('stand_in', context=ros_context)

    def authorize(request, response):
        response.approved, response.rule = True, AuthorizeTask.Response.RULE_OK
        response.task_id = f'{request.task_type}-1'
        return response
    stand_in.create_service(AuthorizeTask, names.AUTHORIZE_TASK, authorize, callback_group=group)

    def escalate(request, response):   # where the manager takes a failure next
        response.accepted, response.escalation_id = True, 'esc-1'
        return response
    stand_in.create_service(RequestEscalation, names.REQUEST_ESCALATION, escalate, callback_group=group)
    if action_server:
        ActionServer(stand_in, ExecuteTask, names.robot_name('navigation_robot', names.EXECUTE_TASK),
                     callback_group=group, **action_server)
    reports = stand_in.create_publisher(TaskReport, names.TASK_REPORTS, reliable_qos())
    arrivals = stand_in.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
    manager = ManagerNode(context=ros_context)
    executor.add_node(stand_in)
    executor.add_node(manager)
    try:
        assert wait_for(lambda: arrivals.get_subscription_count() and reports.get_subscription_count())
        yield stand_in, manager, reports, arrivals
    finally:
        release.set()
        manager.stop()
        executor.remove_node(manager)
        executor.remove_node(stand_in)
        manager.destroy_node()
        stand_in.destroy_node()


def test_a_result_that_never_comes_is_taken_from_the_supervisors_record(ros_context, executor):
    release = threading.Event()   # the robot's result is held back until the test ends
    goals = []
    events = []
    report = TaskReportModel(task_id='navigation-1', task_type='navigation', robot='navigation_robot',
                             status=TaskStatus.FAILURE, issue='HCW #80 did not answer the page within 30 s',
                             summary='HCW #80 did not answer the page')

    def execute(goal_handle):
        goals.append(goal_handle.request.task_id)
        release.wait(30.0)
        goal_handle.succeed()
        result = ExecuteTask.Result()
        result.report = report_to_msg(report)
        return result
    with _manager_beside_stand_ins(ros_context, executor, release, execute_callback=execute) as (
            stand_in, _, reports, arrivals):
        stand_in.create_subscription(TeamEvent, names.TEAM_EVENTS, events.append, reliable_qos(depth=100))
        arrivals.publish(PatientArrival(patient_id='P-7', room='ER-4', presentation='chest pain', esi_level=2,
                                        assigned_hcw_id='80', required_specialty='Physician'))
        assert wait_for(lambda: goals, timeout=20.0), 'the manager sent no ExecuteTask goal'
        assert goals == ['navigation-1']

        def judged():
            return [e for e in events if e.kind == 'judgment' and e.target == 'navigation-1']
        assert not wait_for(judged, timeout=2 * RESULT_GRACE_S), 'judged with no report at all'
        reports.publish(report_to_msg(report))   # the supervisor's copy of the report it recorded
        assert wait_for(judged, timeout=10.0 + RESULT_GRACE_S), 'the recorded report was not taken'
        taken = [e for e in events if e.kind == 'observation' and e.target == 'navigation-1']
        assert any('supervisor' in e.summary for e in taken), [e.summary for e in taken]
        release.set()   # the lost result comes after all: not judged a second time
        wait_for(lambda: len(judged()) > 1, timeout=2.0)
        assert len(judged()) == 1


def test_a_goal_response_a_lost_robot_never_sent_no_longer_holds_the_clock(ros_context, executor):
    """The robot was lost before it answered the ExecuteTask goal (its process died in between), and the
    supervisor closed the task (``robot_lost``): the manager owes that exchange nothing more, and no
    longer tells the follow clock it has work now (it did for the rest of the run: no jump ahead again)."""
    from robot_team.contracts.clock_sync import BUSY, NOTHING_SCHEDULED
    from robot_team.contracts.reports import IssueCode

    release = threading.Event()   # the goal's response is held back: the robot died before it answered
    goals = []

    def on_goal(request):
        goals.append(request.task_id)
        release.wait(30.0)
        return GoalResponse.REJECT
    with _manager_beside_stand_ins(ros_context, executor, release, execute_callback=lambda h: ExecuteTask.Result(),
                                   goal_callback=on_goal) as (_, manager, reports, arrivals):
        arrivals.publish(PatientArrival(patient_id='P-8', room='ER-6', presentation='fall', esi_level=3,
                                        assigned_hcw_id='80', required_specialty='Physician'))
        assert wait_for(lambda: goals, timeout=20.0), 'the manager sent no ExecuteTask goal'
        assert wait_for(lambda: manager.core.idle, timeout=5.0)
        assert manager._next_event() == BUSY            # the goal's response is owed: a message in flight
        reports.publish(report_to_msg(TaskReportModel(
            task_id=goals[0], task_type='navigation', robot='navigation_robot', status=TaskStatus.FAILURE,
            issue='navigation_robot was lost while it ran the task', issue_code=IssueCode.ROBOT_LOST,
            summary='navigation_robot was lost')))
        assert wait_for(lambda: manager._next_event() == NOTHING_SCHEDULED, timeout=10.0)


def test_a_robot_server_not_discovered_yet_is_waited_for_with_sim_time_held(ros_context, executor):
    """Finding a server is DDS discovery, wall time that grows with the machine's load: the manager
    holds sim time while it waits (no deadline passes meanwhile), sends the goal once the server is
    found, releases the hold and records how long it waited."""
    release = threading.Event()
    holds, events, goals, late = [], [], [], []

    def execute(goal_handle):
        goals.append(goal_handle.request.task_id)
        release.wait(30.0)
        goal_handle.abort()
        return ExecuteTask.Result()
    try:
        _found_late(ros_context, executor, release, holds, events, goals, late, execute)
    finally:
        for node in late:
            executor.remove_node(node)
            node.destroy_node()


def _found_late(ros_context, executor, release, holds, events, goals, late, execute):
    with _manager_beside_stand_ins(ros_context, executor, release) as (stand_in, _, _reports, arrivals):
        stand_in.create_subscription(ClockHold, names.CLOCK_HOLDS, holds.append, clock_holds_qos())
        stand_in.create_subscription(TeamEvent, names.TEAM_EVENTS, events.append, reliable_qos(depth=100))
        arrivals.publish(PatientArrival(patient_id='P-9', room='ER-2', presentation='syncope', esi_level=3,
                                        assigned_hcw_id='80', required_specialty='Physician'))

        def active():   # the holds started and not released
            released = {h.hold_id for h in holds if not h.active}
            return [h for h in holds if h.active and h.hold_id not in released]
        assert wait_for(active, timeout=20.0), 'the manager waited for no server, or held nothing'
        time.sleep(2.0)
        assert [(h.holder, h.reason) for h in active()] == [('manager', SERVER_DISCOVERY)]
        assert not goals, 'a goal went with no server found'
        # The robot's server comes up on a node of its own, added to the executor once made, as a robot
        # process starts. Made on the stand-in, a node the executor already spun, it once (a rehearsal,
        # 2026-12-01) ran no goal in 30 s although the manager's wait had ended with it found; why is not known.
        late.append(rclpy.create_node('late_robot', context=ros_context))
        ActionServer(late[0], ExecuteTask, names.robot_name('navigation_robot', names.EXECUTE_TASK),
                     execute_callback=execute, callback_group=ReentrantCallbackGroup())
        executor.add_node(late[0])
        assert wait_for(lambda: goals, timeout=SERVER_WAIT_S), 'the goal never went to the server found late'
        assert wait_for(lambda: not active(), timeout=10.0), 'the hold was not released'

        def waits():
            return [data for data in (json.loads(e.data_json) for e in events if e.kind == 'observation')
                    if data.get('cue') == 'server_discovery' and data['server'] == 'action server of navigation_robot']
        assert wait_for(waits, timeout=5.0), 'the wait is not on the record'
        [wait] = waits()
        assert wait['found'] is True and wait['waited_wall_s'] >= 2.0, wait
