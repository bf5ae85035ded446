"""LLM brains through the real ROS graph: ``run_episode(..., brain='openai')`` on the embedded simulator.

A scripted loopback OpenAI-compatible server drives the real ``openai`` client in every node.
One well-behaved run, one run where the manager and a robot misbehave in every way the bridge
must stop; for each, the record shows the guard and the floor outcome stays correct.
"""

import pytest

from llm_scripts import escalate_only, misbehaving_policies, use_llm_server
from robot_team.llm import scripted
from robot_team.llm.fakeserver import ScriptedServer

pytest.importorskip('rclpy')
pytest.importorskip('robot_team.sim.motion_node')


@pytest.fixture
def llm_env(monkeypatch):
    """Point every node's LLM settings at a scripted server (started by the test)."""
    return lambda server, **kw: use_llm_server(monkeypatch, server, **kw)


def events(result, kind):
    return [e for e in result.events if e.kind == kind]


def test_well_behaved_llm_team_onboards_through_ros(tmp_path, domain_id, llm_env):
    from robot_team.run.episode import run_episode
    with ScriptedServer(scripted.ideal_policies()) as server:
        llm_env(server)
        result = run_episode('onboarding', tmp_path / 'run', brain='openai', domain_id=domain_id,
                             brain_options={'kb': True}, real_time_factor=40.0)
    report = result.report
    assert report['outcome'] == 'success' and report['outcome_as_expected']
    assert [(t['task_id'], t['status']) for t in report['tasks']] == [
        ('nav-1', 'failure'), ('nav-2', 'success'), ('info-1', 'success'), ('display-1', 'success')]
    assert not report['guards'].get('tool_refused') and not report['guards'].get('false_completion')
    usage = report['llm']
    assert usage['total']['requests'] == len(server.requests) == 11
    assert set(usage['per_robot']) == {'manager', 'navigation_robot', 'info_collection_robot', 'display_robot'}
    assert usage['total']['prompt_tokens'] > 0 and usage['total']['cost_usd'] > 0
    nav2 = report['tasks'][1]['evidence']['nav2_goals']
    assert nav2[-1]['output']['outcome'] == 'succeeded'   # ground truth from the simulator's Nav2 stand-in


def test_misbehaving_llm_team_is_kept_correct_by_the_guards(tmp_path, domain_id, llm_env):
    from robot_team.run.episode import run_episode
    with ScriptedServer(misbehaving_policies()) as server:
        llm_env(server, handover=False)   # the echoed failure is left to the supervisor's deadline
        result = run_episode(escalate_only('onboarding'), tmp_path / 'run', brain='openai', domain_id=domain_id,
                             brain_options={'kb': False}, real_time_factor=40.0)
    report = result.report
    refused = events(result, 'tool_refused')
    assert refused[0].actor == 'manager' and refused[0].target == 'navigate_to_pose'      # 1
    assert not [e for e in events(result, 'tool_call') if e.actor == 'manager']
    escalations = report['escalations']
    assert escalations and escalations[0]['raised_by'] == 'supervisor'                     # 2
    assert events(result, 'deadline_missed') and not events(result, 'takeover')
    assert any('display must wait' in e.reason for e in events(result, 'workflow_violation'))  # 3
    misaligned = [e for e in events(result, 'workflow_violation') if e.reason == 'role misalignment']
    assert len(misaligned) == 1 and misaligned[0].actor == 'manager'                       # 4
    false = events(result, 'false_completion')
    assert len(false) == 1 and "reported name 'Dr. Nobody' differs" in false[0].reason     # 6
    assert any('placeholder' in e.reason for e in events(result, 'reflection_rejected'))   # 5
    # the floor outcome: #90 escorted, identified from the directory, the care team shown
    statuses = {t['task_id']: t['status'] for t in report['tasks']}
    assert statuses['info-1'] == 'failure' and statuses['info-2'] == 'success'
    assert report['tasks'][-1]['name'] == 'display' and report['tasks'][-1]['status'] == 'success'
    assert report['reflection'] and report['outcome'] == 'success'


@pytest.mark.parametrize('scenario', ['no_path', 'unknown_badge'])
def test_llm_team_escalates_what_it_cannot_fix(scenario, tmp_path, domain_id, llm_env):
    from robot_team.run.episode import run_episode
    with ScriptedServer(scripted.ideal_policies()) as server:
        llm_env(server)
        result = run_episode(scenario, tmp_path / 'run', brain='openai', domain_id=domain_id,
                             brain_options={'kb': False}, real_time_factor=40.0)
    report = result.report
    assert report['outcome'] == report['expected_outcome'] == 'escalated'
    assert report['escalations'][0]['raised_by'] == 'manager' and report['escalations'][0]['decision'] == 'abort'
    assert report['tasks'][-1]['status'] == 'failure' and report['reflection']
    assert not report['guards'].get('false_completion') and not report['guards'].get('tool_refused')


def test_a_recorded_run_replays_offline_through_ros(tmp_path, domain_id, llm_env, monkeypatch):
    from robot_team.llm.client import Cassette
    from robot_team.run.episode import run_episode
    cassette = tmp_path / 'onboarding.jsonl'
    monkeypatch.setenv('ROBOT_TEAM_LLM_CASSETTE', str(cassette))
    monkeypatch.setenv('ROBOT_TEAM_LLM_CASSETTE_MODE', 'record')
    with ScriptedServer(scripted.ideal_policies()) as server:
        llm_env(server)
        recorded = run_episode('onboarding', tmp_path / 'rec', brain='openai', domain_id=domain_id,
                               brain_options={'kb': False}, real_time_factor=40.0).report
    Cassette._instances.clear()
    monkeypatch.setenv('ROBOT_TEAM_LLM_CASSETTE_MODE', 'replay')
    monkeypatch.setenv('ROBOT_TEAM_LLM_BASE_URL', 'http://127.0.0.1:9/v1')   # nothing listens: no network
    monkeypatch.setenv('ROBOT_TEAM_LLM_MAX_RETRIES', '0')
    try:
        replayed = run_episode('onboarding', tmp_path / 'rep', brain='openai', domain_id=domain_id,
                               brain_options={'kb': False}, real_time_factor=40.0)
    finally:
        Cassette._instances.clear()
    assert recorded['outcome'] == replayed.report['outcome'] == 'success'
    replies = events(replayed, 'llm_reply')
    assert len(replies) == recorded['llm']['total']['requests'] and not events(replayed, 'llm_error')
    assert all(e.data['source'].startswith('replay') for e in replies)
