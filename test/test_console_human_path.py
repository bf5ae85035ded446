"""The human path of the onboarding case, through the console's presenter driven as a person clicks.

The whole team runs (every node, the embedded simulator) with a manager that escalates instead of
proposing an alternative itself, and no scripted operator answer. A person at the console:
acknowledges the escalation, accepts the manager's proposal (reassign to #90); while #90 is
being escorted, stops and holds the team (the robot's Nav2 goal is really cancelled); then
releases it with "retry". The team carries on with #90 and the onboarding succeeds.
"""

import threading

import pytest
import yaml

from ros_helpers import wait_for

rclpy = pytest.importorskip('rclpy')

from robot_team.contracts.config import load_scenario, share_dir  # noqa: E402
from robot_team.console.presenter import ConsolePresenter  # noqa: E402
from robot_team.console.ros_client import ConsoleClient  # noqa: E402


def escalating_onboarding(tmp_path):
    data = yaml.safe_load((share_dir() / 'config' / 'scenarios' / 'onboarding.yaml').read_text())
    data.update(name='onboarding_human', operator_script=[], manager={'issue_handling': 'escalate'},
                real_time_factor=10.0)
    path = tmp_path / 'onboarding_human.yaml'
    path.write_text(yaml.safe_dump(data))
    return load_scenario(str(path))


def test_a_person_resolves_holds_and_releases_through_the_console(ros_context, executor, domain_id, tmp_path):
    from robot_team.run.episode import run_episode
    scenario = escalating_onboarding(tmp_path)
    result = {}
    team = threading.Thread(target=lambda: result.update(run=run_episode(
        scenario, tmp_path / 'run', domain_id=domain_id, log_level='error', clock='wall')), daemon=True)
    team.start()
    node = rclpy.create_node('supervisor_console', context=ros_context)
    presenter = ConsolePresenter(port=None, operator_id='charge_nurse')
    ConsoleClient(node, presenter)   # feeds the presenter, answers its clicks
    executor.add_node(node)
    try:
        def escalation(escalation_id):
            return next((r for r in presenter.escalations() if r.escalation_id == escalation_id), None)

        # The manager escalates nav-1 (#80 does not answer the page) with its proposal.
        assert wait_for(lambda: escalation('esc-1'), timeout=90.0), 'no escalation reached the console'
        esc = escalation('esc-1')
        assert (esc.task_id, esc.raised_by, esc.proposal, esc.state) == ('nav-1', 'manager', 'reassign:90', 'open')
        assert wait_for(lambda: any(t.task_id == 'nav-1' and t.status == 'failure' for t in presenter.tasks()))
        presenter.select('esc-1')
        assert presenter.acknowledge()
        assert wait_for(lambda: escalation('esc-1').state == 'acknowledged'), presenter.status()
        assert presenter.can('accept') and presenter.accept_proposal(note='Dr. Brennan covers ER-12')
        assert wait_for(lambda: escalation('esc-1').state == 'resolved'), presenter.status()
        assert wait_for(lambda: presenter.status().level == 'ok' and not presenter.pending), presenter.status()
        assert (escalation('esc-1').decision, escalation('esc-1').hcw_id) == ('reassign', '90')

        # While #90 is being escorted (nav-2), the person stops and holds the whole team.
        assert wait_for(lambda: any(t.task_id == 'nav-2' and t.status == 'running' for t in presenter.tasks()),
                        timeout=30.0)
        assert presenter.stop_and_hold('fire alarm in corridor B')
        assert wait_for(lambda: presenter.hold().active, timeout=10.0), presenter.status()
        [hold_id] = presenter.hold().escalation_ids
        held = escalation(hold_id)
        assert (held.kind, held.task_id, held.raised_by, held.holds_team) == ('hold', 'nav-2', 'charge_nurse', True)
        assert wait_for(lambda: any(t.task_id == 'nav-2' and t.status == 'failure' for t in presenter.tasks()),
                        timeout=30.0), 'the held task did not stop'

        # Released with "retry": the team carries on with #90.
        presenter.select(hold_id)
        assert presenter.retry(note='alarm cleared')
        assert wait_for(lambda: not presenter.hold().active, timeout=10.0), presenter.status()
        team.join(timeout=120.0)
        assert not team.is_alive(), 'the episode did not end'
    finally:
        executor.remove_node(node)
        node.destroy_node()
    run = result['run']
    report = run.report
    assert report['outcome'] == 'success', report['outcome']
    tasks = {t['task_id']: t for t in report['tasks']}
    assert tasks['nav-1']['status'] == 'failure' and tasks['nav-2']['status'] == 'failure'
    assert tasks['nav-3']['status'] == 'success'
    delegations = {e.data['task_id']: e.data for e in run.events if e.kind == 'delegation'}
    assert delegations['nav-2']['hcw_id'] == '90' and delegations['nav-3']['hcw_id'] == '90'
    decisions = [(e['escalation_id'], e['decision'], e['hcw_id'], e['operator_id']) for e in report['escalations']]
    assert decisions == [('esc-1', 'reassign', '90', 'charge_nurse'), (hold_id, 'retry', '', 'charge_nurse')]
    # The hold really stopped the robot: the supervisor cancelled nav-2's goal at the robot, or, when
    # that goal (authorised just before the hold) reached the robot just after, the robot, following
    # team/hold, never started it or stopped it itself.
    cancelled = [e for e in run.events if e.kind == 'goals_cancelled' and e.data.get('goals')]
    cues = {e.data.get('cue') for e in run.events if e.actor == 'navigation_robot' and e.kind == 'observation'}
    nav2_calls = [e for e in run.events if e.kind == 'tool_call' and e.data.get('task_id') == 'nav-2']
    if any(e.data['action'] == 'navigation_robot/execute_task' for e in cancelled):
        assert 'cancel' in cues
    else:
        assert nav2_calls == [] or 'hold' in cues, [e.summary for e in nav2_calls]
    refused = [e for e in run.events if e.kind == 'delegation_refused' and e.data.get('rule') == 'held']
    assert refused == []   # the manager paused: it never tried to delegate while held
    assert (tmp_path / 'run' / 'escalations.sqlite').exists()
    board = {t.task_id: t for t in presenter.tasks()}
    assert board['nav-3'].status == 'success' and 'navigate_to_pose succeeded' in board['nav-3'].ground_truth
