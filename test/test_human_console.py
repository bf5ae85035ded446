"""A human answers escalations from the console, through the supervisor's real services."""

import rclpy
from rclpy.parameter import Parameter
from typer.testing import CliRunner

from robot_team.contracts import names
from robot_team.agents.supervisor_node import SupervisorNode
from robot_team.cli import app
from robot_team.contracts.config import load_scenario
from robot_team.human import list_escalations, resolve_escalation, watch_escalations
from robot_team.srv import AuthorizeTask, RequestEscalation
from ros_helpers import wait_for

WIDE = {'COLUMNS': '220'}   # rich tables in full width


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
            task_type='navigation', robot='navigation_robot', requested_by='manager', hcw_id='80'))
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
        listed = CliRunner().invoke(app, ['escalations', '--domain-id', str(domain_id)], env=WIDE)   # a list
        assert listed.exit_code == 0 and esc.escalation_id in listed.output and 'resolved' in listed.output
    finally:
        for node in (supervisor, manager):
            executor.remove_node(node)
            node.destroy_node()


def test_escalations_commands_ack_resolve_raise_instruct_watch(ros_context, executor, domain_id):
    supervisor = SupervisorNode(load_scenario('onboarding'), context=ros_context,
                                parameter_overrides=[Parameter('use_sim_time', value=False)])
    executor.add_node(supervisor)
    cli = CliRunner()
    domain = ['--domain-id', str(domain_id)]
    try:
        raised = cli.invoke(app, ['escalations', 'raise', 'oxygen cylinder empty in ER-12', '--operator-id',
                                  'triage_nurse', *domain])
        assert raised.exit_code == 0 and 'esc-1 opened' in raised.output, raised.output
        ack = cli.invoke(app, ['escalations', 'ack', 'esc-1', *domain], env={'ROBOT_TEAM_OPERATOR_ID': 'porter'})
        assert ack.exit_code == 1 and "operator 'porter' is not authorised" in ack.output
        ack = cli.invoke(app, ['escalations', 'ack', 'esc-1', *domain],
                         env={'ROBOT_TEAM_OPERATOR_ID': 'charge_nurse'})
        assert ack.exit_code == 0 and 'esc-1 acknowledged by charge_nurse' in ack.output, ack.output
        listed = cli.invoke(app, ['escalations', 'list', *domain], env=WIDE)
        assert listed.exit_code == 0 and 'acknowledged' in listed.output and 'triage_nurse' in listed.output
        empty = cli.invoke(app, ['instruct', '', '--operator-id', 'charge_nurse', *domain])
        assert empty.exit_code == 1 and 'needs text' in empty.output
        told = cli.invoke(app, ['instruct', 'Bring a spare cylinder', '--operator-id', 'charge_nurse', *domain])
        assert told.exit_code == 0 and 'instr-1' in told.output
        hold = cli.invoke(app, ['escalations', 'raise', 'wet floor', '--stop-and-hold', '--operator-id', 'porter',
                                *domain])
        assert hold.exit_code == 0 and 'esc-2' in hold.output and supervisor.desk.hold.active
        seen = []
        watch_escalations(seen.append, domain_id, duration_s=8.0)   # the history arrives, then live steps
        assert {(e['escalation_id'], e['state']) for e in seen} >= {('esc-1', 'acknowledged'), ('esc-2', 'open')}
        assert any(e['holds_team'] for e in seen if e['escalation_id'] == 'esc-2')
        done = cli.invoke(app, ['escalations', 'resolve', 'esc-2', 'retry', '--operator-id', 'charge_nurse',
                                '--note', 'mopped', *domain])
        assert done.exit_code == 0 and 'hold is released' in done.output and not supervisor.desk.hold.active
        watched = cli.invoke(app, ['escalations', 'watch', '--duration', '8', *domain], env=WIDE)
        assert watched.exit_code == 0 and 'esc-2' in watched.output and 'retry' in watched.output
    finally:
        executor.remove_node(supervisor)
        supervisor.destroy_node()
