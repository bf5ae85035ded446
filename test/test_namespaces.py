"""Names the ROS way: two teams under two namespaces on one domain, robots moved by ``__ns``.

Every name of the team is relative (robot_team/contracts/names.py): a team in ``/floor1`` and one in
``/floor2`` on the same ROS domain must not hear each other (topics, services, actions and their
own clock topics), and a robot started with ``--ros-args -r __ns:=/floor2/navigation_robot``
must serve the team in ``/floor2``.
"""

import json
import threading

import pytest

from robot_team.contracts.config import ConfigError
from robot_team.contracts.names import clock_remap, join, team_namespace_of, validate_namespace
from robot_team.run.episode import run_episode


def test_namespace_helpers():
    assert validate_namespace('floor2') == '/floor2' and validate_namespace('') == '/'
    assert validate_namespace('/hospital/floor2/') == '/hospital/floor2'
    assert join('/floor2', 'team/events') == '/floor2/team/events' and join('/', 'team/events') == '/team/events'
    assert team_namespace_of('/floor2/navigation_robot') == '/floor2'
    assert team_namespace_of('/navigation_robot') == '/'
    assert clock_remap('/') == [] and clock_remap('floor2') == ['-r', '/clock:=/floor2/clock']
    for bad in ('9floor', 'floor-2', 'a//b', 'floor 2'):
        with pytest.raises(ValueError, match='not a valid ROS namespace'):
            validate_namespace(bad)


def test_two_teams_share_one_domain(domain_id, tmp_path):
    results = {}

    def run(ns):
        results[ns] = run_episode('onboarding', tmp_path / ns, domain_id=domain_id, namespace=ns,
                                  real_time_factor=30.0)
    threads = [threading.Thread(target=run, args=(ns,)) for ns in ('floor1', 'floor2')]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert set(results) == {'floor1', 'floor2'}
    for ns, result in results.items():
        report = result.report
        assert report['outcome'] == 'success' and report['namespace'] == f'/{ns}'
        assert [t['task_id'] for t in report['tasks']] == ['nav-1', 'nav-2', 'info-1', 'display-1']
        # Each recorder heard its own team only: one of each node, one patient, one reflection.
        started = [e.actor for e in result.events if e.kind == 'node_started']
        assert sorted(started) == sorted(set(started)), f'{ns} heard another team: {started}'
        assert len([e for e in result.events if e.kind == 'reflection']) == 1
        assert len([e for e in result.events if e.kind == 'sim' and e.data.get('what') == 'patient_arrival']) == 1
        from mcap.reader import make_reader
        with open(tmp_path / ns / 'events.mcap', 'rb') as f:
            topics = {c.topic for c in make_reader(f).get_summary().channels.values()}
        assert topics == {f'/{ns}/team/{t}' for t in ('events', 'scene', 'log', 'cases')}   # + Foxglove's


@pytest.mark.multiprocess
def test_robots_moved_by_ns_remapping_serve_their_team(domain_id, tmp_path):
    # One process per node, each started as `python -m ... --ros-args -r __ns:=...` (robots:
    # /floor2/<robot>, the rest: /floor2), exactly as `ros2 run` with a remap would. The manager
    # (in /floor2) reaches navigation_robot/execute_task only if the robot really moved there.
    result = run_episode('all_available', tmp_path, domain_id=domain_id, processes=True, namespace='/floor2')
    assert result.report['outcome'] == 'success', result.report
    delegations = [e for e in result.events if e.kind == 'task_started']
    assert {e.actor for e in delegations} == {'navigation_robot', 'info_collection_robot', 'display_robot'}


def test_a_bad_namespace_is_a_clear_recorded_error(domain_id, tmp_path):
    with pytest.raises(ConfigError, match="team namespace .*'9floor'.* not a valid ROS namespace"):
        run_episode('onboarding', tmp_path, domain_id=domain_id, namespace='9floor')
    report = json.loads((tmp_path / 'report.json').read_text())
    assert report['outcome'] == 'input_error' and '9floor' in report['error']
