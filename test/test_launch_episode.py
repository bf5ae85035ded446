"""The episode's end under ros2 launch (robot_team.bringup.episode), on a real ROS graph without launch.

The episode recorder writes report.json at the time limit (recording the timeout as robot-team
run does) and records a team node that leaves the graph as node_crashed, ending the episode when
it is the manager (at once, or once a respawned one has not come back within
restart_grace_s; one that comes back is recorded as node_restarted). The full path (team_ready
gate, simulator, episode end) runs in test/test_multihost.py and, where launch is installed, test/test_launch.py.
"""

import json
import time

from rclpy.node import Node
from rclpy.parameter import Parameter

from robot_team.bringup.episode import EpisodeRecorder
from robot_team.contracts.events import EventKind
from robot_team.ros.emitter import EventEmitter


def _recorder(ros_context, tmp_path, **params):
    overrides = [Parameter('out_dir', value=str(tmp_path)), Parameter('scenario', value='onboarding')]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return EpisodeRecorder(context=ros_context, parameter_overrides=overrides)


def _wait(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


def _manager_joins(ros_context, executor, recorder):
    """Start a node named manager that announces itself; return it once the recorder has seen it."""
    manager = Node('manager', context=ros_context)
    EventEmitter(manager, 'manager').emit(EventKind.NODE_STARTED, 'manager ready')
    executor.add_node(manager)
    assert _wait(lambda: 'manager' in recorder._seen)
    return manager


def _leaves(executor, node):
    """Take ``node`` off the graph (its process ended)."""
    executor.remove_node(node)
    node.destroy_node()


def test_time_limit_ends_the_episode_with_a_report(ros_context, executor, tmp_path):
    recorder = _recorder(ros_context, tmp_path, time_limit_s=1.0)   # wall clock: long past 1 s
    executor.add_node(recorder)
    assert _wait(recorder.ending.is_set)
    report = recorder.finish()
    executor.remove_node(recorder)
    recorder.destroy_node()
    assert report['outcome'] == 'timeout' and report['mode'] == 'launch'
    saved = json.loads((tmp_path / 'report.json').read_text())
    assert saved['outcome'] == 'timeout' and (tmp_path / 'events.mcap').exists()


def test_manager_leaving_the_graph_is_recorded_and_ends_the_episode(ros_context, executor, tmp_path):
    recorder = _recorder(ros_context, tmp_path, time_limit_s=1e12)
    executor.add_node(recorder)
    _leaves(executor, _manager_joins(ros_context, executor, recorder))
    assert _wait(recorder.ending.is_set)
    time.sleep(0.3)
    report = recorder.finish()
    executor.remove_node(recorder)
    recorder.destroy_node()
    crashed = [e for e in recorder.events() if e.kind == EventKind.NODE_CRASHED.value]
    assert [e.target for e in crashed] == ['manager']
    assert report['outcome'] == 'timeout'   # no episode end was reached


def test_a_respawned_manager_is_recorded_back_and_the_episode_goes_on(ros_context, executor, tmp_path):
    recorder = _recorder(ros_context, tmp_path, time_limit_s=1e12, restart_grace_s=30.0)
    executor.add_node(recorder)
    _leaves(executor, _manager_joins(ros_context, executor, recorder))
    assert _wait(lambda: 'manager' in recorder._crashed)      # lost, but launch respawns it: no end yet
    time.sleep(1.0)
    assert not recorder.ending.is_set()
    second = _manager_joins(ros_context, executor, recorder)   # the respawned process announces itself again
    assert _wait(lambda: any(e.kind == EventKind.NODE_RESTARTED.value for e in recorder.events()))
    back = next(e for e in recorder.events() if e.kind == EventKind.NODE_RESTARTED.value)
    assert back.target == 'manager' and back.data['attempt'] == 1 and back.data['down_s'] > 0
    assert 'manager' not in recorder._crashed and not recorder.ending.is_set()
    _leaves(executor, second)
    _leaves(executor, recorder)


def test_a_deployment_records_until_stopped_and_reports_each_case_as_it_closes(ros_context, executor, tmp_path):
    from robot_team.contracts.config import deployment_scenario
    scenario = tmp_path / 'scenario.json'
    scenario.write_text(deployment_scenario().model_dump_json())
    recorder = EpisodeRecorder(context=ros_context, parameter_overrides=[
        Parameter('out_dir', value=str(tmp_path)), Parameter('scenario', value=str(scenario)),
        Parameter('time_limit_s', value=1.0)])   # no time limit applies to an open-ended record
    executor.add_node(recorder)
    manager = _manager_joins(ros_context, executor, recorder)
    supervisor = Node('supervisor', context=ros_context)
    executor.add_node(supervisor)
    EventEmitter(supervisor, 'supervisor').emit(EventKind.CASE_OPENED, 'case P-31 opened', case_id='P-31',
                                                patient_id='P-31', room='ER-4', esi_level=2, arrived_s=0.0)
    EventEmitter(manager, 'manager').emit(EventKind.CASE_CLOSED, 'case P-31 finished: success', case_id='P-31',
                                          outcome='success')
    case_file = tmp_path / 'cases' / 'P-31.json'
    assert _wait(case_file.exists)
    case = json.loads(case_file.read_text())
    assert case['outcome'] == 'success' and case['case']['room'] == 'ER-4' and case['case']['esi_level'] == 2
    journal = [json.loads(line) for line in (tmp_path / 'events.jsonl').read_text().splitlines()]
    assert {'case_opened', 'case_closed'} <= {e['kind'] for e in journal}   # on disk while recording
    _leaves(executor, manager)
    assert _wait(lambda: 'manager' in recorder._crashed)    # recorded; the record goes on (launch respawns it)
    time.sleep(1.0)
    assert not recorder.ending.is_set()
    report = recorder.finish()
    _leaves(executor, supervisor)
    _leaves(executor, recorder)
    assert report['outcome'] == 'interrupted' and report['files']['cases'] == {'P-31': str(case_file)}
    assert [e.target for e in recorder.events() if e.kind == EventKind.NODE_CRASHED.value] == ['manager']
