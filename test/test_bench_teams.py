"""``robot-team bench --teams N``: teams at once on the follow clock make the decisions of a team alone."""

import json
import os
import subprocess
import sys

from robot_team.bench import decision_sequence
from robot_team.contracts.events import TeamEventModel
from robot_team.recorder import read_jsonl
from ros_helpers import reserve_domain_ids


def test_three_teams_at_once_make_the_decisions_of_a_team_alone(tmp_path):
    base = reserve_domain_ids(4)
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    done = subprocess.run([sys.executable, '-m', 'robot_team.cli', 'bench', '--teams', '3', '--domain-id', str(base),
                           '--out', str(tmp_path)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    res = json.loads(done.stdout[done.stdout.index('\n{') + 1:])
    assert (res['completed'], res['as_expected'], res['same_decisions']) == (3, 3, 3)
    assert res['alone']['outcome'] == 'success' and res['sim_s_per_wall_s'] > 0
    alone = decision_sequence(read_jsonl(tmp_path / 'alone' / 'events.jsonl'))
    # The onboarding's decisions: #80 fails, #90 is escorted, then the badge and the display, the outcome.
    delegated = [d[2] for d in alone if d[0] == 'delegation']
    assert delegated == ['navigation', 'navigation', 'info_collection', 'display']
    assert alone[-1] == ('episode_finished', '', '', '', '', 'success')
    for k in (1, 2, 3):
        report = json.loads((tmp_path / f't{k}' / 'report.json').read_text())
        assert report['namespace'] == f'/t{k}' and report['domain_id'] == base + k
        assert report['clock']['mode'] == 'follow' and report['clock']['followers_lost'] == []
        assert decision_sequence(read_jsonl(tmp_path / f't{k}' / 'events.jsonl')) == alone


def test_the_decision_sequence_ignores_times_and_wording_but_not_choices():
    def event(kind, stamp, **data):
        return TeamEventModel(stamp_s=stamp, wall_time=stamp, seq=1, actor='manager', kind=kind, summary=f'at {stamp}',
                              data=data)
    a = [event('delegation', 10.0, task_id='nav-1', task_type='navigation', robot='navigation_robot', hcw_id='80'),
         event('tool_call', 11.0, task_id='nav-1'),
         event('task_report', 40.0, task_id='nav-1', task_type='navigation', robot='navigation_robot',
               status='failure')]
    b = [event('delegation', 12.5, task_id='nav-1', task_type='navigation', robot='navigation_robot', hcw_id='80'),
         event('task_report', 47.0, task_id='nav-1', task_type='navigation', robot='navigation_robot',
               status='failure')]
    assert decision_sequence(a) == decision_sequence(b)
    c = [b[0].model_copy(update={'data': {**b[0].data, 'hcw_id': '90'}}), b[1]]
    assert decision_sequence(c) != decision_sequence(a)


def test_bench_counts_node_crashes_restarts_and_runs_with_the_first_runs_decisions(tmp_path, domain_id):
    from robot_team.bench import bench_episodes
    res = bench_episodes('no_path', runs=2, processes=True, domain_id=domain_id, out_dir=tmp_path)
    assert res['mode'] == 'processes' and res['all_outcomes_as_expected']
    assert [sorted(r) for r in res['runs']] == [sorted(('wall_time_s', 'sim_time_s', 'clock_rate', 'outcome',
                                                        'node_crashes', 'restarts', 'same_decisions'))] * 2
    # The counts come from each run's own record and report (an upstream native crash, restarted,
    # is counted as such: test_team.py's process-per-node test)
    for k, row in enumerate(res['runs']):
        events = read_jsonl(tmp_path / f'run-{k}' / 'events.jsonl')
        assert row['node_crashes'] == sum(e.kind == 'node_crashed' for e in events)
        report = json.loads((tmp_path / f'run-{k}' / 'report.json').read_text())
        assert row['restarts'] == report['restarts']['restarts']
        assert sum(row['restarts'].values()) == row['node_crashes']   # each crash restarted
    first, second = (decision_sequence(read_jsonl(tmp_path / f'run-{k}' / 'events.jsonl')) for k in (0, 1))
    assert first[-1][0] == 'episode_finished'
    assert res['runs'][1]['same_decisions'] == (first == second)
    assert res['runs_with_the_first_runs_decisions'] == 1 + (first == second)
    assert res['node_crashes'] == sum(row['node_crashes'] for row in res['runs'])
