"""Each robot node against the embedded simulator, on a real ROS graph (ExecuteTask goals).

The test plays the manager: it sends ExecuteTask goals and checks the robots' reports, their
ground-truth evidence, cancellation, bad input (unknown room, staff directory that cannot be
opened) and role enforcement (a robot rejects another robot's task). The simulator runs the
follow clock (capped at 50x): sim time waits for the robots and the hospital, so a busy machine
cannot change what they see (the hospital infers a stop from seconds without a pose).
"""

import json
import threading
import time

import pytest
import rclpy
from rclpy.action import ActionClient
from rclpy.parameter import Parameter

from robot_team.action import ExecuteTask
from robot_team.agents.robot_node import RobotNode
from robot_team.contracts.config import load_scenario, load_staff_seed
from robot_team.directory import StaffDirectory
from robot_team.contracts.liveness import OPERATIONAL_ROBOTS
from robot_team.contracts.names import NAVIGATE_TO_POSE, SUBMIT_REPORT, robot_name
from robot_team.ros.messages import report_from_msg
from robot_team.srv import SubmitReport
from robot_team.sim.hospital_node import HospitalSystemsNode
from robot_team.sim.motion_node import MotionSimNode
from ros_helpers import wait_for


@pytest.fixture
def graph(ros_context, executor, tmp_path):
    """Build sim + robots for a scenario; return a function that adds them and an ExecuteTask sender."""
    created = []

    def build(scenario_name, roles, staff_db=None, hospital=True, **scenario_changes):
        """``hospital``: False leaves the hospital's systems out; ``client_node.add_hospital()`` adds them."""
        scenario = load_scenario(scenario_name).model_copy(update=scenario_changes)
        if staff_db is None:
            staff_db = str(tmp_path / 'staff.sqlite')
            StaffDirectory.create(staff_db, load_staff_seed(scenario.staff_path))
        overrides = [Parameter('use_sim_time', value=True), Parameter('staff_db', value=staff_db),
                     Parameter('floor', value=str(scenario.floor_path))]
        robots = {role: RobotNode(role, context=ros_context, parameter_overrides=overrides) for role in roles}

        def make_hospital():
            return HospitalSystemsNode(scenario, context=ros_context,
                                       parameter_overrides=[Parameter('use_sim_time', value=True)])
        sim = [*([make_hospital()] if hospital else []),
               MotionSimNode(scenario, context=ros_context,
                             parameter_overrides=[Parameter('real_time_factor', value=50.0),
                                                  Parameter('clock_mode', value='follow')])]
        client_node = rclpy.create_node('test_manager', context=ros_context)
        # the test is the supervisor too: it takes every report a robot submits (as the real one, on
        # team/supervisor/submit_report), so a robot never waits out its timeouts for a supervisor
        client_node.submitted = []

        def take_report(request, response):
            client_node.submitted.append(report_from_msg(request.report))
            response.accepted, response.explanation = True, 'recorded by the test'
            return response
        client_node.create_service(SubmitReport, SUBMIT_REPORT, take_report)
        # every action client before the node spins: one made while an executor thread iterates the
        # node's waitables can be seen half-built (rclpy: 'ActionClient' object has no attribute '_lock')
        client_node.execute_clients = {role: ActionClient(client_node, ExecuteTask, robot_name(role, 'execute_task'))
                                       for role in sorted(OPERATIONAL_ROBOTS)}
        for node in [*robots.values(), *sim, client_node]:
            executor.add_node(node)
            created.append(node)

        def add_hospital():
            node = make_hospital()
            executor.add_node(node)
            created.append(node)
        client_node.add_hospital = add_hospital
        return robots, client_node

    yield build
    for node in created:
        executor.remove_node(node)
    time.sleep(0.2)   # let callbacks already handed to executor threads finish before nodes are destroyed
    for node in created:
        node.destroy_node()


def send_task(node, robot, task_type, room='ER-12', hcw_id='', cancel_when=None, timeout=120.0):
    """Send an ExecuteTask goal; return (accepted, status, report or None, feedback stages).

    ``cancel_when`` (a ``threading.Event``) cancels the goal once it is set.
    """
    client = node.execute_clients[robot]
    assert client.wait_for_server(timeout_sec=10.0)
    stages = []
    done = threading.Event()
    outcome = {}

    def on_feedback(msg):
        stages.append(msg.feedback.stage)

    def on_result(future):
        wrapped = future.result()
        outcome['status'] = wrapped.status
        outcome['report'] = report_from_msg(wrapped.result.report)
        done.set()

    def on_goal(future):
        handle = future.result()
        outcome['accepted'] = handle.accepted
        if not handle.accepted:
            done.set()
            return
        outcome['handle'] = handle
        handle.get_result_async().add_done_callback(on_result)
        if cancel_when is not None:
            threading.Thread(target=lambda: cancel_when.wait(timeout) and handle.cancel_goal_async(),
                             daemon=True).start()

    goal = ExecuteTask.Goal(task_id=f'{task_type}-t', task_type=task_type, room=room, hcw_id=hcw_id,
                            context_json=json.dumps({'patient_id': 'P-T'}))
    client.send_goal_async(goal, feedback_callback=on_feedback).add_done_callback(on_goal)
    assert done.wait(timeout), f'no result from {robot} within {timeout} s'
    report = outcome.get('report')
    if report is not None:   # submitted to the supervisor before the manager got it, the same report
        assert [(r.task_id, r.status, r.issue) for r in node.submitted][-1:] == [(report.task_id, report.status,
                                                                                 report.issue)]
    return outcome.get('accepted'), outcome.get('status'), report, stages


def test_navigation_escorts_available_hcw_with_nav2_evidence(graph):
    robots, client = graph('all_available', ['navigation_robot'])
    accepted, _, report, stages = send_task(client, 'navigation_robot', 'navigation', hcw_id='90')
    assert accepted and report.status.value == 'success' and report.issue == ''
    assert 'escorting' in stages
    goals = [r for r in report.evidence['tool_journal'] if r['tool'] == 'navigate_to_pose']
    assert [g['output']['outcome'] for g in goals] == ['succeeded', 'succeeded']
    assert goals[-1]['output']['error_code'] == 0
    assert goals[-1]['output']['initial_distance_m'] > goals[-1]['output']['final_distance_remaining_m']
    assert report.data['hcw_location']['area'] == 'Staff lounge'
    # the acknowledged page says where to pick the HCW up: where the RTLS sees them, as locate_staff did
    [page] = [r['output'] for r in report.evidence['tool_journal'] if r['tool'] == 'page_staff']
    assert page['meet_at']['area'] == 'Staff lounge'
    where = report.data['hcw_location']
    assert (page['meet_at']['x'], page['meet_at']['y']) == (where['x'], where['y'])


def test_navigation_busy_hcw_is_a_failure_with_alternatives(graph):
    robots, client = graph('onboarding', ['navigation_robot'])
    _, _, report, _ = send_task(client, 'navigation_robot', 'navigation', hcw_id='80')
    assert report.status.value == 'failure'
    assert report.issue.startswith('HCW #80 unavailable: on an urgent call')
    assert report.data['alternatives'][0]['hcw_id'] == '90'
    assert not any(r['tool'] == 'navigate_to_pose' for r in report.evidence['tool_journal'])


def test_navigation_goal_abort_is_reported_with_the_nav2_error(graph):
    robots, client = graph('no_path', ['navigation_robot'])
    _, _, report, _ = send_task(client, 'navigation_robot', 'navigation', hcw_id='90')
    assert report.status.value == 'failure' and 'NO_VALID_PATH' in report.issue
    # The closed door is on the map the planner server plans on: compute_path_to_pose fails with
    # Nav2's NO_VALID_PATH before any goal is sent; its result is the ground truth.
    last = [r for r in report.evidence['tool_journal'] if r['tool'] == 'plan_path'][-1]
    assert last['ok'] is False and last['output']['error_code'] == 208
    assert last['output']['error_name'] == 'NO_VALID_PATH'
    assert not any(r['tool'] == 'navigate_to_pose' and r['ok'] for r in report.evidence['tool_journal'])


def test_navigation_cancel_stops_the_nav2_goal(graph):
    robots, client = graph('all_available', ['navigation_robot'])
    # Cancel only once the Nav2 goal is executing: its feedback flows on the action's feedback topic.
    from nav2_msgs.action import NavigateToPose
    nav2_feedback = threading.Event()
    client.create_subscription(NavigateToPose.Impl.FeedbackMessage,
                               robot_name('navigation_robot', NAVIGATE_TO_POSE) + '/_action/feedback',
                               lambda _msg: nav2_feedback.set(), 10)
    _, status, report, _ = send_task(client, 'navigation_robot', 'navigation', hcw_id='90',
                                     cancel_when=nav2_feedback)
    from action_msgs.msg import GoalStatus
    assert status == GoalStatus.STATUS_CANCELED
    assert report.status.value == 'failure'
    nav = [r for r in report.evidence['tool_journal'] if r['tool'] == 'navigate_to_pose']
    assert nav and nav[-1]['output']['outcome'] == 'canceled'


def test_unknown_room_is_a_failure_not_a_crash(graph):
    robots, client = graph('all_available', ['navigation_robot'])
    _, _, report, _ = send_task(client, 'navigation_robot', 'navigation', room='ER-99', hcw_id='90')
    assert report.status.value == 'failure' and "unknown room 'ER-99'" in report.issue


def test_robot_rejects_another_robots_task(graph):
    robots, client = graph('all_available', ['display_robot'])
    accepted, _, report, _ = send_task(client, 'display_robot', 'navigation', hcw_id='90')
    assert accepted is False and report is None
    refused = [e for e in robots['display_robot'].events.history if e.kind == 'delegation_refused']
    assert refused and 'executes only display tasks' in refused[0].reason


def test_info_collection_without_scan_and_display_of_care_team(graph):
    robots, client = graph('all_available', ['info_collection_robot', 'display_robot'])
    _, _, info, _ = send_task(client, 'info_collection_robot', 'info_collection', hcw_id='90')
    assert info.status.value == 'failure' and 'no badge scan at ER-12' in info.issue
    _, _, shown, _ = send_task(client, 'display_robot', 'display')
    assert shown.status.value == 'success'
    reply = [r for r in shown.evidence['tool_journal'] if r['tool'] == 'show_display'][0]['output']
    assert reply['success'] is True and any('Sofia Alvarez' in line for line in reply['rendered_lines'])


def test_staff_directory_that_cannot_be_opened_is_a_task_failure(graph, tmp_path):
    broken = tmp_path / 'broken.sqlite'
    broken.write_text('this is not a database')
    robots, client = graph('all_available', ['display_robot'], staff_db=str(broken))
    _, _, report, _ = send_task(client, 'display_robot', 'display')
    assert report.status.value == 'failure'
    assert 'staff directory unavailable' in report.issue and str(broken) in report.issue
    assert wait_for(lambda: any(e.kind == 'task_report' for e in robots['display_robot'].events.history))


def test_a_robot_holds_sim_time_while_a_server_it_calls_is_not_discovered_yet(graph):
    """The display robot's ``show_display`` finds no display service (the hospital's systems are not up
    yet): DDS discovery is wall time, so the robot holds the team's sim time (``team/clock_holds``,
    reason ``server_discovery``) and the real clock source stands still until the service appears;
    then the call goes through."""
    from rosgraph_msgs.msg import Clock

    from robot_team.contracts.names import CLOCK_HOLDS
    from robot_team.llm.lockstep import SERVER_DISCOVERY, clock_holds_qos
    from robot_team.msg import ClockHold
    from robot_team.ros.stamps import stamp_to_s

    robots, client = graph('all_available', ['display_robot'], hospital=False)
    holds, clock = [], []
    client.create_subscription(ClockHold, CLOCK_HOLDS, holds.append, clock_holds_qos())
    client.create_subscription(Clock, '/clock', lambda msg: clock.append(stamp_to_s(msg.clock)), 10)

    def active():
        released = {h.hold_id for h in holds if not h.active}
        return [(h.holder, h.reason) for h in holds if h.active and h.hold_id not in released]
    result = {}
    sender = threading.Thread(target=lambda: result.update(report=send_task(client, 'display_robot', 'display')[2]),
                              daemon=True)
    sender.start()
    assert wait_for(active, timeout=30.0), 'the robot held nothing while the display service was missing'
    assert active() == [('display_robot', SERVER_DISCOVERY)]
    time.sleep(1.0)   # a step the clock source published before the hold reached it may still come
    held_at = max(clock)
    time.sleep(2.0)
    assert max(clock) == held_at, 'sim time ran on while the robot waited for discovery'
    client.add_hospital()
    sender.join(60.0)
    # the call went through once the service was found (whether the screen's content then reached the
    # robot in its observation window is discovery of a publisher started late: not this test's point)
    [shown] = [r for r in result['report'].evidence['tool_journal'] if r['tool'] == 'show_display']
    assert shown['output']['success'] is True, shown
    # the robot's discovery hold ended; the hospital, started late, may still hold sim time until the
    # robot has the screen's content (a delivery hold, at most DELIVERY_WAIT_S: a rehearsal saw it)
    assert ('display_robot', SERVER_DISCOVERY) not in active()
    assert wait_for(lambda: not active(), timeout=15.0), active()
    assert wait_for(lambda: max(clock) > held_at, timeout=10.0)
    waits = [e.data for e in robots['display_robot'].events.history
             if e.kind == 'observation' and e.data.get('cue') == 'server_discovery']
    assert [(w['server'], w['found']) for w in waits] == [('service ed/display/show', True)], waits
    assert waits[0]['waited_wall_s'] >= 2.0
