"""The scripted operator answers escalations through the supervisor's real service, after its sim delay."""

import pytest

from ros_helpers import wait_for

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402

from robot_team.contracts.config import OperatorAnswer  # noqa: E402
from robot_team.contracts.reports import TaskReportModel  # noqa: E402
from robot_team.ros.messages import report_to_msg  # noqa: E402
from test_supervisor_node import GraphProbe, authorize  # noqa: E402

SIM_TIME = [Parameter('use_sim_time', value=True)]


@pytest.fixture
def graph(ros_context, executor):
    from robot_team.agents.operator_node import ScriptedOperatorNode
    from robot_team.agents.supervisor_node import SupervisorNode
    supervisor = SupervisorNode(None, context=ros_context, parameter_overrides=SIM_TIME + [
        Parameter('scenario', value='onboarding')])
    script = [OperatorAnswer(task_type='display', decision='retry', delay_s=1.0),
              OperatorAnswer(task_type='navigation', decision='retry', note='ER-12 door jammed', delay_s=3.0)]
    operator = ScriptedOperatorNode(script=script, context=ros_context, parameter_overrides=SIM_TIME)
    probe = GraphProbe(ros_context)
    nodes = (supervisor, operator, probe)
    for node in nodes:
        executor.add_node(node)
    try:
        probe.set_time(1.0, supervisor)
        probe.set_time(1.0, operator)
        yield supervisor, operator, probe
    finally:
        for node in reversed(nodes):
            executor.remove_node(node)
            node.destroy_node()


def escalate(probe, task_id, reason):
    from robot_team.srv import RequestEscalation
    answer = probe.call(probe.escalate, RequestEscalation.Request(task_id=task_id, reason=reason))
    assert answer.accepted, answer.message
    return answer.escalation_id


def test_operator_answers_after_its_delay_and_leaves_the_rest_to_humans(graph):
    supervisor, operator, probe = graph
    assert authorize(probe, 'navigation', 'navigation_robot').approved
    failure = TaskReportModel(task_id='nav-1', task_type='navigation', robot='navigation_robot',
                              status='failure', issue='door closed')
    probe.submit(report_to_msg(failure))
    assert wait_for(lambda: supervisor.snapshot().task('nav-1').status == 'failure')
    esc = escalate(probe, 'nav-1', 'ER-12 unreachable')

    # The navigation answer (the second of the script) is picked, due 3 s of sim time later.
    assert wait_for(lambda: probe.find('operator_decision', actor='scripted_operator', stage='planned'))
    [planned] = probe.find('operator_decision', actor='scripted_operator', stage='planned')
    assert (planned.data['escalation_id'], planned.data['decision'], planned.data['script_index']) == (
        esc, 'retry', 1)
    assert planned.data['due_s'] == pytest.approx(4.0, abs=0.01)
    probe.set_time(3.5, operator)
    assert probe.decisions == [] and supervisor.snapshot().escalation(esc).status == 'open'

    probe.set_time(4.5, operator)
    assert wait_for(lambda: probe.decisions)
    [decision] = probe.decisions
    assert (decision.escalation_id, decision.decision, decision.operator_id, decision.note) == (
        esc, 'retry', 'scripted_operator', 'ER-12 door jammed')
    assert supervisor.snapshot().escalation(esc).status == 'resolved'
    assert wait_for(lambda: probe.find('operator_decision_result', actor='scripted_operator', accepted=True))

    # The navigation answer is used up: a second escalation about navigation awaits a human.
    second = escalate(probe, 'nav-1', 'still unreachable')
    assert wait_for(lambda: probe.find('escalation_awaits_human', actor='scripted_operator',
                                       escalation_id=second))
    probe.set_time(20.0, operator)
    assert len(probe.decisions) == 1 and supervisor.snapshot().escalation(second).status == 'open'
    assert len(probe.find('operator_decision', actor='scripted_operator', stage='sent')) == 1
