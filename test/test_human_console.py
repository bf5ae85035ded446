"""A human answers escalations from the console, through the supervisor's real services."""

import rclpy
from rclpy.parameter import Parameter
from typer.testing import CliRunner

from robot_team import names
from robot_team.agents.supervisor_node import SupervisorNode
from robot_team.cli import app
from robot_team.config import load_scenario
from robot_team.human import list_escalations, resolve_escalation
from robot_team.srv import AuthorizeTask, RequestEscalation
from ros_helpers import wait_for


def call(node, srv_type, name, request):
    client = node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=10.0)
    future = client.call_async(request)
    assert wait_for(future.done, timeout=10.0)
    return future.result()


def test_console_lists_and_resolves_an_escalation(ros_context, executor, domain_id):
    supervisor = SupervisorNode(load_scenario('onboarding'), context=ros_context,
                                parameter_overrides=[Parameter('use_sim_time', value=False)])
    manager = rclpy.create_node('test_manager', context=ros_context)
    for node in (supervisor, manager):
        executor.add_node(node)
    try:
        auth = call(manager, AuthorizeTask, names.AUTHORIZE_TASK, AuthorizeTask.Request(
            task_type='navigation', robot='navigation_robot', requested_by='manager'))
        assert auth.approved
        esc = call(manager, RequestEscalation, names.REQUEST_ESCALATION, RequestEscalation.Request(
            task_id=auth.task_id, reason='HCW #80 unavailable', options=['reassign:90', 'abort']))
        assert esc.accepted
        listed = list_escalations(domain_id, listen_s=2.0)
        assert [(e['escalation_id'], e['decision']) for e in listed] == [(esc.escalation_id, '')]
        assert listed[0]['options'] == ['reassign:90', 'abort']

        refused = CliRunner().invoke(app, ['resolve', esc.escalation_id, 'reassign', '--domain-id', str(domain_id)])
        assert refused.exit_code == 1 and 'refused' in refused.output
        accepted, message = resolve_escalation(esc.escalation_id, 'reassign', hcw_id='90',
                                               operator_id='charge_nurse', domain_id=domain_id)
        assert accepted, message
        decided = list_escalations(domain_id, listen_s=2.0)
        assert decided[0]['decision'] == 'reassign' and decided[0]['operator_id'] == 'charge_nurse'
        again = CliRunner().invoke(app, ['resolve', esc.escalation_id, 'abort', '--domain-id', str(domain_id)])
        assert again.exit_code == 1
    finally:
        for node in (supervisor, manager):
            executor.remove_node(node)
            node.destroy_node()
