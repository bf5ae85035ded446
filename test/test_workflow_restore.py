"""The rulebook's state for a restart: exported, stored as JSON, taken back (no ROS)."""

import pytest

from robot_team.contracts.config import Deadlines
from robot_team.contracts.reports import TaskReportModel
from robot_team.rules.workflow.policy import DuplicateReport, WorkflowPolicy
from robot_team.rules.workflow.state import WorkflowState

OWNER = {'navigation': 'navigation_robot', 'info_collection': 'info_collection_robot',
         'display': 'display_robot', 'reflection': 'manager'}
DEADLINES = Deadlines(issue_handling_s=60.0, task_s=600.0, decision_s=120.0, onboarding_s=900.0)


def ask(policy, task_type, now_s, reason=''):
    auth = policy.authorize(task_type, OWNER[task_type], reason, 'manager', now_s,
                            hcw_id='90' if task_type == 'navigation' else '')
    assert auth.approved, auth.explanation
    return auth.task_id


def report(policy, task_id, task_type, status, now_s, issue=''):
    return policy.record_report(TaskReportModel(task_id=task_id, task_type=task_type, robot=OWNER[task_type],
                                                status=status, issue=issue or ('' if status == 'success' else 'x')),
                                now_s)


def restarted(policy) -> WorkflowPolicy:
    """A fresh policy with ``policy``'s state, through JSON as the store keeps it."""
    again = WorkflowPolicy(DEADLINES)
    again.restore(WorkflowState.model_validate_json(policy.state().model_dump_json()))
    return again


@pytest.fixture
def midway() -> WorkflowPolicy:
    """Patient at 10 s; nav-1 succeeded, info-1 failed and was escalated (esc-1, retry), info-2 runs since 60 s."""
    policy = WorkflowPolicy(DEADLINES)
    assert policy.patient_arrived('P-0001', 10.0)
    report(policy, ask(policy, 'navigation', 12.0), 'navigation', 'success', 40.0)
    report(policy, ask(policy, 'info_collection', 41.0), 'info_collection', 'failure', 45.0, 'no badge scan')
    assert policy.open_escalation('info-1', 'manager', 'no badge scan', ['retry'], 46.0) == 'esc-1'
    assert policy.resolve('esc-1', 'retry', operator_id='charge_nurse', now_s=50.0)[0]
    assert ask(policy, 'info_collection', 60.0) == 'info-2'
    policy.take_deadline_changes()
    return policy


def test_state_round_trips_without_announcing_deadlines_again(midway):
    again = restarted(midway)
    assert again.snapshot() == midway.snapshot()
    assert again.take_deadline_changes() == []
    pending = [(d.kind, d.task_id, d.due_s) for d in again.snapshot().deadlines if d.state == 'pending']
    assert pending == [('onboarding', '', 910.0), ('task', 'info-2', 660.0)]


def test_ids_continue_after_a_restart(midway):
    again = restarted(midway)
    assert again.open_escalation('info-2', 'manager', 'slow', [], 70.0) == 'esc-2'
    report(again, 'info-2', 'info_collection', 'success', 80.0)
    assert ask(again, 'display', 81.0) == 'display-1'
    report(again, 'display-1', 'display', 'failure', 90.0)
    assert ask(again, 'display', 91.0) == 'display-2'
    nav = again.authorize('navigation', 'navigation_robot', '', 'manager', 92.0, hcw_id='90')
    assert not nav.approved   # nav-1 succeeded


def test_a_late_report_on_the_running_task_meets_its_deadline(midway):
    again = restarted(midway)
    assert again.due(300.0) == []
    task = report(again, 'info-2', 'info_collection', 'success', 301.0)
    assert task.status == 'success' and task.finished_s == 301.0
    changes = again.take_deadline_changes()
    assert [(c.change, c.deadline.kind, c.deadline.task_id) for c in changes] == [
        ('met', 'task', 'info-2'), ('started', 'decision', 'info-2')]
    with pytest.raises(DuplicateReport, match='already recorded as success with this report'):
        report(again, 'info-2', 'info_collection', 'success', 302.0)   # the same report again: recorded once


def test_a_deadline_that_passed_while_down_is_missed_at_the_first_check(midway):
    again = restarted(midway)
    missed = again.due(700.0)   # info-2's task deadline was due at 660 s
    assert [(d.kind, d.task_id, d.state) for d in missed] == [('task', 'info-2', 'missed')]
    assert again.snapshot().task('info-2').status == 'failure'
    assert again.due(701.0) == []


def test_the_closed_episode_and_the_patient_stay(midway):
    assert midway.open_escalation('info-2', 'manager', 'give up', ['abort'], 61.0) == 'esc-2'
    assert midway.resolve('esc-2', 'abort', operator_id='charge_nurse', now_s=62.0)[0]
    again = restarted(midway)
    assert again.closed and again.snapshot().closed_by == 'esc-2'
    assert again.authorize('display', 'display_robot', '', 'manager', 63.0).rule == 'closed'
    assert not again.patient_arrived('P-0002', 64.0)   # one patient per episode, still


@pytest.mark.parametrize('spoil, message', [
    (lambda s: s.tasks[0].__setattr__('task_id', 'navigation-1'), "is not 'nav-<n>'"),
    (lambda s: s.tasks.append(s.tasks[0].model_copy()), 'appears twice'),
    (lambda s: s.escalations[0].__setattr__('escalation_id', 'esc-7'), 'not esc-1 to esc-1'),
    (lambda s: s.deadlines[-1].__setattr__('task_id', 'info-9'), "unknown task 'info-9'"),
    (lambda s: s.__setattr__('closed_by', 'esc-4'), "names no stored escalation"),
])
def test_an_inconsistent_state_is_refused_and_changes_nothing(midway, spoil, message):
    state = midway.state()
    spoil(state)
    fresh = WorkflowPolicy(DEADLINES)
    with pytest.raises(ValueError, match=message):
        fresh.restore(state)
    assert fresh.snapshot() == WorkflowPolicy(DEADLINES).snapshot()
    assert ask(fresh, 'navigation', 1.0) == 'nav-1'


def test_restore_only_into_a_fresh_policy(midway):
    with pytest.raises(ValueError, match='fresh policy'):
        midway.restore(midway.state())
