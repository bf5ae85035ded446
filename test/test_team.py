"""The whole ED team end to end on real ROS graphs: every scenario, in one process and per process.

Checks the outcomes against each scenario's expected outcome, the report's required fields and
ground truth, the completeness of the event record, and that bad input is a clear error.
"""

import json
import warnings

import pytest
from typer.testing import CliRunner

from robot_team.catalog import TOOLS, TOOLS_BY_NAME
from robot_team.contracts.config import ConfigError, load_scenario
from robot_team.evaluation.truth import audit, load_truth
from robot_team.contracts.events import sequence_gaps
from robot_team.recorder import read_jsonl
from robot_team.run.episode import run_episode

REPORT_KEYS = {'scenario', 'outcome', 'tasks', 'escalations', 'sim_time_s', 'wall_time_s', 'reflection', 'events'}


def kinds(result):
    return [e.kind for e in result.events]


def test_onboarding_published_case(domain_id, tmp_path):
    result = run_episode('onboarding', tmp_path, domain_id=domain_id)
    report = json.loads((tmp_path / 'report.json').read_text())
    assert REPORT_KEYS <= set(report)
    assert report['outcome'] == 'success' and report['outcome_as_expected'] is True
    tasks = [(t['task_id'], t['name'], t['robot'], t['status']) for t in report['tasks']]
    assert tasks == [('nav-1', 'navigation', 'navigation_robot', 'failure'),
                     ('nav-2', 'navigation', 'navigation_robot', 'success'),
                     ('info-1', 'info_collection', 'info_collection_robot', 'success'),
                     ('display-1', 'display', 'display_robot', 'success')]
    assert report['tasks'][0]['issue'].startswith('HCW #80 unavailable')
    assert [g['output']['outcome'] for g in report['tasks'][1]['evidence']['nav2_goals']] == ['succeeded'] * 2
    info = report['tasks'][2]['evidence']['lookup_staff_by_badge']['output']
    assert (info['hcw_id'], info['specialty']) == ('90', 'Physician')
    assert report['tasks'][3]['evidence']['show_display']['output']['success'] is True
    # The manager handled the issue itself, right after the failure report, and only delegated.
    k = kinds(result)
    assert k.index('alternative_proposed') > k.index('task_report')
    assert not [e for e in result.events if e.actor == 'manager' and e.kind in ('tool_call', 'tool_refused')]
    assert report['escalations'] == []
    covered = {o['task_type'] for o in report['reflection']['task_outcomes']}
    assert covered == {'navigation', 'info_collection', 'display'}
    # The record is complete and the same on disk as in memory.
    assert report['events']['complete'] and not sequence_gaps(result.events)
    assert len(read_jsonl(tmp_path / 'events.jsonl')) == report['events']['count'] == len(result.events)
    assert (tmp_path / 'events.mcap').stat().st_size > 0
    assert report['sim_time_s'] > report['wall_time_s']
    # Every successful tool output on the record matches the output schema its catalog entry declares.
    results = [e for e in result.events if e.kind == 'tool_result' and e.data.get('ok')]
    assert {e.target for e in results} == {t.name for t in TOOLS}
    for event in results:
        TOOLS_BY_NAME[event.target].output_model.model_validate(event.data['output'])
    # The world agrees: every success the team accepted, and the episode's, is one the simulator shows.
    found = audit(tmp_path)
    assert found.clean and load_truth(tmp_path).episode.succeeded, found


@pytest.mark.parametrize('scenario', ['all_available', 'no_path', 'unknown_badge'])
def test_scenario_variants_reach_their_expected_outcome(scenario, domain_id, tmp_path):
    result = run_episode(scenario, tmp_path, domain_id=domain_id)
    report = result.report
    assert report['outcome'] == load_scenario(scenario).expected_outcome
    if scenario == 'all_available':
        assert [t['status'] for t in report['tasks']] == ['success'] * 3
    else:
        failed = [t for t in report['tasks'] if t['status'] == 'failure']
        assert len(failed) == 1
        expected_issue = {'no_path': 'NO_VALID_PATH', 'unknown_badge': "badge 'ED-9999'"}[scenario]
        assert expected_issue in failed[0]['issue']
        assert [(e['raised_by'], e['decision']) for e in report['escalations']] == [('manager', 'abort')]
        assert report['reflection'] is not None
    found = audit(tmp_path)   # no success the world contradicts; the world agrees with the outcome
    assert found.clean and load_truth(tmp_path).episode.succeeded == (report['outcome'] == 'success'), found


def test_each_node_in_its_own_process(domain_id, tmp_path):
    result = run_episode('onboarding', tmp_path, domain_id=domain_id, processes=True)
    assert result.report['mode'] == 'processes'
    assert result.report['outcome'] == 'success'
    assert {e.actor for e in result.events} >= {'manager', 'navigation_robot', 'info_collection_robot',
                                                'display_robot', 'supervisor', 'scripted_operator', 'motion_sim',
                                                'hospital_systems'}
    # A node may still die of an upstream native crash: CI (2026-12-01) saw navigation_robot's SIGSEGV
    # in a native thread of its DDS participant while the node was being created, the Python main
    # thread importing a module. Issue 30 asks for each such crash to be restarted and recorded with
    # its native stack, and the episode to go on: so it must be, and it is said in the test's warnings.
    for crash in (e for e in result.events if e.kind == 'node_crashed'):
        node, log = crash.target, (tmp_path / 'logs' / f'{crash.target}.log').read_text()
        assert crash.data['returncode'] < 0 and crash.data['restart'] is True, crash   # a signal, not our exit
        assert any(e.kind == 'node_restarted' and e.target == node and e.wall_time > crash.wall_time
                   for e in result.events), crash
        assert 'Fatal Python error' in log, log[-2000:]   # faulthandler's stacks (PYTHONFAULTHANDLER)
        warnings.warn(f'{node} crashed (exit {crash.data["returncode"]}) and was restarted; its stack: '
                      f'{tmp_path / "logs" / (node + ".log")}')
    assert result.report['restarts']['down'] == []
    assert (tmp_path / 'logs' / 'manager.log').exists()
    memory = result.report['node_memory_mib']      # each node's own peak (VmHWM), read before it stopped
    assert set(memory) >= {'manager', 'supervisor', 'motion_sim', 'hospital_systems', 'navigation_robot'}
    assert all(20.0 < mib < 2048.0 for mib in memory.values()), memory


def test_unhandled_failure_is_escalated_by_the_supervisor(domain_id, tmp_path):
    scenario = load_scenario('onboarding')
    scenario = scenario.model_copy(update={'manager': scenario.manager.model_copy(update={'issue_handling': 'ignore'})})
    result = run_episode(scenario, tmp_path, domain_id=domain_id)
    report = result.report
    assert 'deadline_missed' in kinds(result)
    assert report['escalations'][0]['raised_by'] == 'supervisor'
    assert report['escalations'][0]['decision'] == 'reassign' and report['escalations'][0]['hcw_id'] == '90'
    assert report['outcome'] == 'success'


def test_bad_inputs_are_clear_errors(tmp_path):
    base = load_scenario('onboarding')
    with pytest.raises(ConfigError, match="unknown room 'ER-99'"):
        run_episode(base.model_copy(update={'patient': base.patient.model_copy(update={'room': 'ER-99'})}),
                    tmp_path / 'a')
    with pytest.raises(ConfigError, match='HCW #999 is not in the staff directory'):
        run_episode(base.model_copy(update={'patient': base.patient.model_copy(update={'assigned_hcw_id': '999'})}),
                    tmp_path / 'b')
    bad_floor = tmp_path / 'bad_floor.yaml'
    bad_floor.write_text('name: x\nrooms: [\n')
    with pytest.raises(ConfigError, match='bad_floor.yaml'):
        run_episode(base.model_copy(update={'floor': str(bad_floor)}), tmp_path / 'c')
    # Nothing is lost: the stopped run has a report and an event record naming the problem.
    stopped = json.loads((tmp_path / 'c' / 'report.json').read_text())
    assert stopped['outcome'] == 'input_error' and 'bad_floor.yaml' in stopped['error']
    recorded = read_jsonl(tmp_path / 'c' / 'events.jsonl')
    assert [e.kind for e in recorded] == ['input_error'] and 'bad_floor.yaml' in recorded[0].reason
    bad_staff = tmp_path / 'staff.yaml'
    bad_staff.write_text('staff: []\n')
    with pytest.raises(ConfigError, match='staff'):
        run_episode(base.model_copy(update={'staff_directory': str(bad_staff)}), tmp_path / 'd')


def test_cli_run_prints_summary_and_writes_report(domain_id, tmp_path):
    from robot_team.cli import app
    result = CliRunner().invoke(app, ['run', '--scenario', 'all_available', '--out', str(tmp_path),
                                      '--domain-id', str(domain_id), '--quiet'])
    assert result.exit_code == 0, result.output
    assert 'outcome success' in result.output and 'report:' in result.output
    assert json.loads((tmp_path / 'report.json').read_text())['outcome'] == 'success'
    bad = CliRunner().invoke(app, ['run', '--scenario', 'nope', '--out', str(tmp_path / 'x')])
    assert bad.exit_code == 2 and "unknown scenario 'nope'" in bad.output


def test_crashed_node_is_recorded_and_reported(domain_id, tmp_path):
    import threading
    import time

    from robot_team.run.episode import Episode
    scenario = load_scenario('all_available').model_copy(update={'time_limit_s': 400.0})
    # no restart (max_restarts 0): the robot stays down (test/test_restart.py: a killed robot restarts)
    episode = Episode(scenario, tmp_path, processes=True, domain_id=domain_id, max_restarts=0)

    def kill_display_robot():   # once the team is up and sim time runs
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            recorder = episode.nodes[0] if episode.nodes else None
            if recorder is not None and any(e.data.get('what') == 'clock_started' for e in recorder.events()):
                episode._children['display_robot'].kill()
                return
            time.sleep(0.05)
    killer = threading.Thread(target=kill_display_robot, daemon=True)
    killer.start()
    result = episode.run()
    crashed = [e for e in result.events if e.kind == 'node_crashed']
    assert crashed and crashed[0].target == 'display_robot' and crashed[0].data['returncode'] != 0
    assert crashed[0].data['stays_down'] == 'disabled' and result.report['restarts']['down'] == ['display_robot']
    assert result.report['outcome'] != 'success'
    assert result.report['guards'].get('node_crashed') == 1
    # the runner told the clock source it stays down: the follow clock stopped waiting for it at once
    assert [e.data['follower'] for e in result.events if e.data.get('what') == 'clock_follower_gone'] == [
        '/display_robot/display_robot']
    assert result.report['clock']['followers_lost'] == []   # never waited on, so never lost


def test_installed_cli_finds_its_data_from_any_folder(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.prefix) / 'bin' / 'robot-team'
    if not exe.exists():
        pytest.skip('robot-team is not installed in this environment (scripts/setup.sh installs it)')
    import os
    env = {k: v for k, v in os.environ.items() if k not in ('AMENT_PREFIX_PATH', 'ROBOT_TEAM_SHARE')}
    result = subprocess.run([str(exe), 'scenarios'], cwd=tmp_path, capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'onboarding' in result.stdout and 'unknown_badge' in result.stdout
