"""The manager node on a real ROS graph, against a stand-in supervisor and robot.

When a robot's ExecuteTask result never reaches the manager (a result request lost on its way to
a restarted robot: rclpy's ActionClient asks only once), the supervisor's recorded copy of the
report on ``team/task_reports`` is taken, and the result that comes later is not judged again.
"""

import threading

import rclpy
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup

from robot_team.contracts import names
from robot_team.action import ExecuteTask
from robot_team.agents.manager_node import RESULT_GRACE_S, ManagerNode
from robot_team.msg import PatientArrival, TaskReport, TeamEvent
from robot_team.contracts.reports import TaskStatus, TaskReportModel
from robot_team.ros.messages import reliable_qos, report_to_msg
from robot_team.srv import AuthorizeTask, RequestEscalation
from ros_helpers import wait_for


def test_a_result_that_never_comes_is_taken_from_the_supervisors_record(ros_context, executor):
    group = ReentrantCallbackGroup()
    stand_in = rclpy.create_node('stand_in', context=ros_context)
    release = threading.Event()   # the robot's result is held back until the test ends
    goals = []
    events = []
    stand_in.create_subscription(TeamEvent, names.TEAM_EVENTS, events.append, reliable_qos(depth=100))

    def authorize(request, response):
        response.approved, response.rule = True, AuthorizeTask.Response.RULE_OK
        response.task_id = f'{request.task_type}-1'
        return response
    stand_in.create_service(AuthorizeTask, names.AUTHORIZE_TASK, authorize, callback_group=group)

    def escalate(request, response):   # where the manager takes the failure next
        response.accepted, response.escalation_id = True, 'esc-1'
        return response
    stand_in.create_service(RequestEscalation, names.REQUEST_ESCALATION, escalate, callback_group=group)

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
    ActionServer(stand_in, ExecuteTask, names.robot_name('navigation_robot', names.EXECUTE_TASK), execute,
                 callback_group=group)
    reports = stand_in.create_publisher(TaskReport, names.TASK_REPORTS, reliable_qos())
    arrivals = stand_in.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
    manager = ManagerNode(context=ros_context)
    executor.add_node(stand_in)
    executor.add_node(manager)
    try:
        assert wait_for(lambda: arrivals.get_subscription_count() and reports.get_subscription_count())
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
    finally:
        release.set()
        manager.stop()
        executor.remove_node(manager)
        executor.remove_node(stand_in)
        manager.destroy_node()
        stand_in.destroy_node()
