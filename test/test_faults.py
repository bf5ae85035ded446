"""Faults on real ROS graphs: a team node killed (kill -9) mid-task, one process per node.

Each test runs a whole episode through :func:`robot_team.faults.run_fault` (the code behind
``robot-team faults``): the runner restarts the killed node, the supervisor notices the loss through
DDS liveliness, the workflow recovers the task the node held, and the record keeps every event
written before the fault (events.jsonl and events.mcap, read back). Times are wall seconds.
"""

from pathlib import Path

import pytest

from robot_team.contracts.events import EventKind
from robot_team.faults import FAULTS, NOTICE_BOUND_S, run_fault
from robot_team.recorder import read_jsonl

pytest.importorskip('rclpy')

ROBOTS = ('navigation_robot', 'info_collection_robot', 'display_robot')


def check_record(result):
    assert result.killed, f'{result.fault}: the trigger never came'
    assert result.events_before > 10
    assert result.missing_jsonl == 0 and result.missing_mcap == 0, result
    assert result.sequence_gaps == {}, result


@pytest.mark.parametrize('node', ROBOTS)
def test_a_robot_killed_mid_task_is_noticed_restarted_and_its_task_recovered(node, domain_id, tmp_path):
    result = run_fault(FAULTS[node], tmp_path / node, domain_id=domain_id)
    check_record(result)
    assert result.noticed_s is not None and result.noticed_s <= NOTICE_BOUND_S, result
    # its DDS liveliness lease ran out, or (restarted faster than the lease) its new incarnation announced itself
    assert result.noticed_by in ('supervisor (liveliness)', 'supervisor (heartbeat)')
    assert result.restarted_s is not None and result.back_s is not None and result.back_s >= result.noticed_s
    assert result.lost_task, f'{node} held no task when killed: {result}'
    assert result.recovered_s is not None and result.recovered_s >= result.back_s   # waited for it to be back
    # every cancel its task server answered came before the task was given again: a cancel sent when
    # it was lost, still waiting in the restarted process, must not cancel its next task (CI rehearsal)
    events = read_jsonl(Path(result.out_dir) / 'events.jsonl')
    retry = next(e for e in events if e.kind == EventKind.DELEGATION.value
                 and e.data.get('handles_task_id') == result.lost_task)
    answered = [e for e in events if e.kind == EventKind.GOALS_CANCELLED.value
                and e.target == f'{node}/execute_task' and e.data.get('reachable')]
    assert answered, f'{node}: no cancel of its goals was answered once it was back'
    assert all(e.wall_time <= retry.wall_time for e in answered), [(e.wall_time, e.reason) for e in answered]
    assert result.outcome == result.expected_outcome == 'success', result


@pytest.mark.parametrize('node', ['manager', 'hospital_systems', 'supervisor'])
def test_manager_hospital_or_supervisor_killed_mid_escort_take_up_their_state(node, domain_id, tmp_path):
    result = run_fault(FAULTS[node], tmp_path / node, domain_id=domain_id)
    check_record(result)
    assert result.noticed_s is not None and result.noticed_s <= NOTICE_BOUND_S, result
    # nobody watches the watcher but the runner, which sees its process end; the others as the robots
    expected = (('runner (process exit)',) if node == 'supervisor'
                else ('supervisor (liveliness)', 'supervisor (heartbeat)'))
    assert result.noticed_by in expected, result
    assert result.restarted_s is not None and result.recovered_s is not None
    assert result.outcome == result.expected_outcome == 'success', result
