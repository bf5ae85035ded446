"""The supervisor's rulebook: workflow order, roles, repeats, reflection, deadlines, escalations (no ROS)."""

import pytest

from robot_team.contracts.config import Deadlines
from robot_team.contracts.names import Role
from robot_team.contracts.reports import TaskReportModel, TaskType
from robot_team.rules.workflow.policy import WorkflowPolicy

OWNER = {'navigation': 'navigation_robot', 'info_collection': 'info_collection_robot',
         'display': 'display_robot', 'reflection': 'manager'}


@pytest.fixture
def policy() -> WorkflowPolicy:
    return WorkflowPolicy(Deadlines(issue_handling_s=60.0, task_s=600.0))


def ask(policy, task_type, now_s=0.0, *, robot=None, reason='', requested_by='manager', hcw_id=None):
    hcw_id = ('90' if task_type == 'navigation' else '') if hcw_id is None else hcw_id
    return policy.authorize(task_type, robot or OWNER.get(task_type, 'navigation_robot'), reason,
                            requested_by, now_s, hcw_id=hcw_id)


def report(policy, task_id, task_type, status='success', now_s=0.0, *, robot=None, issue=''):
    if status == 'failure' and not issue:
        issue = f'{task_type} went wrong'
    return policy.record_report(TaskReportModel(task_id=task_id, task_type=task_type,
                                                robot=robot or OWNER[task_type], status=status, issue=issue),
                                now_s)


def run(policy, task_type, status='success', now_s=0.0, **kwargs):
    auth = ask(policy, task_type, now_s, **kwargs)
    assert auth.approved, auth.explanation
    report(policy, auth.task_id, task_type, status, now_s + 1.0)
    return auth.task_id


def test_happy_path_in_order_with_ids_per_type(policy):
    ids = [run(policy, t) for t in ('navigation', 'info_collection', 'display')]
    assert ids == ['nav-1', 'info-1', 'display-1']
    auth = ask(policy, 'reflection')
    assert (auth.approved, auth.task_id, auth.rule) == (True, 'reflection-1', 'ok')
    state = policy.snapshot()
    assert [(t.task_id, t.status) for t in state.tasks] == [
        ('nav-1', 'success'), ('info-1', 'success'), ('display-1', 'success'), ('reflection-1', 'running')]
    assert not state.closed


def test_enum_arguments_are_their_values(policy):
    auth = policy.authorize(TaskType.NAVIGATION, Role.NAVIGATION, '', Role.MANAGER, 0.0, hcw_id='90')
    assert auth.approved and auth.task_id == 'nav-1' and auth.robot == 'navigation_robot'
    assert policy.open_escalation('nav-1', Role.MANAGER, 'stuck') == 'esc-1'
    assert policy.snapshot().escalation('esc-1').raised_by == 'manager'


def test_only_the_manager_may_request(policy):
    auth = ask(policy, 'navigation', requested_by='navigation_robot')
    assert not auth.approved and auth.rule == 'requester' and not auth.violation
    assert 'only the manager' in auth.explanation and auth.task_id == ''
    assert policy.snapshot().tasks == []


def test_unknown_task_type(policy):
    auth = ask(policy, 'triage', robot='navigation_robot')
    assert not auth.approved and auth.rule == 'unknown_task_type'
    assert 'navigation, info_collection, display, reflection' in auth.explanation


def test_robot_must_own_the_task_type(policy):
    auth = ask(policy, 'navigation', robot='display_robot')
    assert not auth.approved and auth.rule == 'role'
    assert 'navigation_robot' in auth.explanation and 'display_robot' in auth.explanation
    auth = ask(policy, 'navigation', robot='manager')
    assert not auth.approved and 'never operates' in auth.explanation
    auth = ask(policy, 'reflection', robot='display_robot')
    assert not auth.approved and "manager's own task" in auth.explanation


def test_order_requires_earlier_successes(policy):
    auth = ask(policy, 'info_collection')
    assert not auth.approved and auth.rule == 'order' and auth.violation
    assert 'navigation has not been delegated' in auth.explanation
    nav = ask(policy, 'navigation')
    auth = ask(policy, 'display')
    assert not auth.approved and f'{nav.task_id} is still running' in auth.explanation
    report(policy, nav.task_id, 'navigation', 'failure', issue='HCW #80 did not answer the page')
    auth = ask(policy, 'info_collection')
    assert not auth.approved and 'HCW #80 did not answer the page' in auth.explanation
    assert 'recover navigation first' in auth.explanation


def test_no_second_task_of_a_type_while_one_runs(policy):
    assert ask(policy, 'navigation').approved
    auth = ask(policy, 'navigation', reason='hurry')
    assert not auth.approved and auth.rule == 'running' and 'nav-1 is still running' in auth.explanation


def test_repeating_a_success_recovers_a_later_failure_and_needs_a_reason(policy):
    run(policy, 'navigation')
    auth = ask(policy, 'navigation', reason='again')
    assert not auth.approved and auth.rule == 'repeat_reason' and 'moves on to info_collection' in auth.explanation
    run(policy, 'info_collection', 'failure')      # e.g. the HCW left before the badge scan
    auth = ask(policy, 'navigation')
    assert not auth.approved and auth.rule == 'repeat_reason' and 'give a reason' in auth.explanation
    assert not ask(policy, 'navigation', reason='   ').approved
    auth = ask(policy, 'navigation', reason='HCW left the room again')
    assert auth.approved and auth.task_id == 'nav-2'
    report(policy, 'nav-2', 'navigation', 'success', 5.0)
    # the repeat recovered info-1's failure: info collection is next, not another escort
    auth = ask(policy, 'navigation', reason='once more')
    assert not auth.approved and auth.rule == 'repeat_reason' and 'moves on to info_collection' in auth.explanation
    assert ask(policy, 'info_collection').approved


def test_failed_type_may_be_retried_without_reason(policy):
    run(policy, 'navigation', 'failure')
    auth = ask(policy, 'navigation')
    assert auth.approved and auth.task_id == 'nav-2' and 'retry' in auth.explanation


def test_latest_task_of_earlier_type_counts(policy):
    run(policy, 'navigation')
    run(policy, 'info_collection', 'failure')
    run(policy, 'navigation', 'failure', reason='escort again')
    auth = ask(policy, 'info_collection')
    assert not auth.approved and 'nav-2 failed' in auth.explanation


def test_reflection_waits_for_all_successes(policy):
    run(policy, 'navigation')
    auth = ask(policy, 'reflection')
    assert not auth.approved and auth.rule == 'reflection' and auth.violation
    assert 'info_collection, display not yet successful' in auth.explanation
    run(policy, 'info_collection')
    ask(policy, 'display')
    auth = ask(policy, 'reflection')
    assert not auth.approved and 'display-1' in auth.explanation and 'no task runs' in auth.explanation


def test_second_reflection_is_refused(policy):
    for task_type in ('navigation', 'info_collection', 'display'):
        run(policy, task_type)
    assert ask(policy, 'reflection').approved
    auth = ask(policy, 'reflection')
    assert not auth.approved and 'only one reflection' in auth.explanation
    policy.record_report(TaskReportModel(task_id='reflection-1', task_type='reflection', robot='manager',
                                         status='success'), 5.0)
    assert not ask(policy, 'reflection').approved


def test_reflection_after_failure_needs_the_episode_closed(policy):
    nav = run(policy, 'navigation', 'failure')
    auth = ask(policy, 'reflection')
    assert not auth.approved and 'closed by abort' in auth.explanation
    esc = policy.open_escalation(nav, 'manager', 'no physician reachable', ['abort'])
    assert not ask(policy, 'reflection').approved          # open, not resolved
    accepted, _ = policy.resolve(esc, 'reassign', hcw_id='90', operator_id='charge_nurse')
    assert accepted
    assert not ask(policy, 'reflection').approved          # a person's reassign is work for the team
    again = run(policy, 'navigation', 'failure', hcw_id='90')
    esc = policy.open_escalation(again, 'manager', 'still no physician', ['abort'])
    accepted, _ = policy.resolve(esc, 'abort', operator_id='charge_nurse')
    assert accepted and ask(policy, 'reflection').approved   # closed: the reflection ends it


def test_reflection_after_a_human_abort(policy):
    nav = run(policy, 'navigation')
    info = run(policy, 'info_collection', 'failure')
    esc = policy.open_escalation(info, 'manager', 'badge unknown', ['abort'])
    accepted, message = policy.resolve(esc, 'abort', note='badge office', operator_id='charge_nurse')
    assert accepted and 'closed' in message
    state = policy.snapshot()
    assert state.closed and state.closed_by == esc and policy.closed
    auth = ask(policy, 'navigation', reason='try again')
    assert not auth.approved and auth.rule == 'closed' and esc in auth.explanation
    with pytest.raises(ValueError, match=f"closed the episode with 'abort' on {esc}"):   # the human decided
        policy.open_escalation(info, 'manager', 'badge unknown again')
    assert policy.open_escalation('', 'supervisor', 'onboarding deadline')   # the supervisor's own still go up
    assert ask(policy, 'reflection').approved
    assert nav == 'nav-1'


def test_reports_are_checked_against_the_authorization(policy):
    nav = ask(policy, 'navigation').task_id
    with pytest.raises(ValueError, match="unknown task ID 'nav-7'"):
        report(policy, 'nav-7', 'navigation')
    with pytest.raises(ValueError, match="comes from 'display_robot'"):
        report(policy, nav, 'navigation', robot='display_robot')
    with pytest.raises(ValueError, match="says task type 'display'"):
        report(policy, nav, 'display', robot='navigation_robot')
    assert policy.snapshot().task(nav).status == 'running'
    report(policy, nav, 'navigation')
    with pytest.raises(ValueError, match='already closed'):
        report(policy, nav, 'navigation', 'failure')
    assert policy.snapshot().task(nav).status == 'success'


def test_issue_deadline_met_by_a_new_delegation(policy):
    nav = ask(policy, 'navigation', 0.0).task_id
    policy.take_deadline_changes()
    report(policy, nav, 'navigation', 'failure', 10.0)
    met, started = policy.take_deadline_changes()
    assert (met.change, met.deadline.kind, met.deadline.met_by) == ('met', 'task', 'report')
    assert (started.change, started.deadline.kind) == ('started', 'issue_handling')
    assert started.deadline.due_s == 70.0
    assert policy.due(69.0) == []
    assert ask(policy, 'navigation', 30.0).approved
    met = [c for c in policy.take_deadline_changes() if c.change == 'met']
    assert [(c.deadline.kind, c.deadline.task_id, c.deadline.met_by) for c in met] == [
        ('issue_handling', 'nav-1', 'delegation nav-2')]
    assert policy.due(100.0) == []


def test_issue_deadline_met_by_the_managers_escalation_only(policy):
    nav = run(policy, 'navigation', 'failure', 0.0)
    policy.take_deadline_changes()
    policy.open_escalation(nav, 'supervisor', 'someone else raised it')
    assert [c for c in policy.take_deadline_changes() if c.change == 'met'] == []
    esc = policy.open_escalation(nav, 'manager', 'no physician reachable', now_s=20.0)
    [change] = policy.take_deadline_changes()
    assert change.change == 'met' and change.deadline.met_by == f'escalation {esc}'
    assert policy.due(1000.0) == []


def test_the_manager_has_one_escalation_open_at_a_time(policy):
    nav = run(policy, 'navigation', 'failure', 0.0)
    first = policy.open_escalation(nav, 'manager', 'no physician reachable', now_s=2.0)
    for about in (nav, ''):   # the same task again, or the episode: the human already has one
        with pytest.raises(ValueError, match=f'the manager already has {first} open'):
            policy.open_escalation(about, 'manager', 'still no physician', now_s=3.0)
    assert policy.open_escalation(nav, 'supervisor', 'a deadline', now_s=4.0)   # the supervisor's own are not limited
    assert policy.resolve(first, 'retry', note='try once more', now_s=5.0)[0]
    assert policy.open_escalation(nav, 'manager', 'again after the decision', now_s=6.0)


def test_the_manager_does_not_escalate_a_succeeded_task_while_a_failure_waits(policy):
    nav = run(policy, 'navigation', 'success', 0.0)
    info = run(policy, 'info_collection', 'failure', 3.0)
    with pytest.raises(ValueError, match=f'{nav} succeeded while the failure of {info} waits to be handled'):
        policy.open_escalation(nav, 'manager', 'success', now_s=5.0)   # seen from a 0.5B model
    assert policy.open_escalation(nav, 'charge_nurse', 'a concern about the escort', now_s=5.5)   # a person may
    assert policy.open_escalation(info, 'manager', 'badge unknown', now_s=6.0)


def test_issue_deadline_missed_once(policy):
    nav = run(policy, 'navigation', 'failure', 0.0)      # failure reported at 1.0
    assert policy.due(61.0) == []
    [missed] = policy.due(61.5)
    assert (missed.kind, missed.task_id, missed.state) == ('issue_handling', nav, 'missed')
    assert missed.duration_s == 60.0
    assert policy.due(62.0) == []
    assert policy.due(1000.0) == []
    assert ask(policy, 'navigation', 70.0).approved     # late recovery is still allowed


def test_task_deadline_missed_closes_the_task(policy):
    nav = ask(policy, 'navigation', 0.0).task_id
    assert policy.due(600.0) == []
    [missed] = policy.due(600.5)
    assert (missed.kind, missed.task_id) == ('task', nav)
    task = policy.snapshot().task(nav)
    assert task.status == 'failure' and 'no report within 600 s' in task.issue
    with pytest.raises(ValueError, match='already closed'):
        report(policy, nav, 'navigation')
    assert policy.due(10_000.0) == []
    assert ask(policy, 'navigation', 601.0).approved


def test_task_deadline_met_by_a_report(policy):
    nav = ask(policy, 'navigation', 0.0).task_id
    [started] = policy.take_deadline_changes()
    assert (started.change, started.deadline.kind, started.deadline.due_s) == ('started', 'task', 600.0)
    report(policy, nav, 'navigation', 'success', 100.0)
    [met, decision] = policy.take_deadline_changes()
    assert (met.change, met.deadline.kind, met.deadline.met_by) == ('met', 'task', 'report')
    # the manager's next step is due now: a decision deadline from the report
    assert (decision.change, decision.deadline.kind, decision.deadline.cue) == ('started', 'decision', f'report {nav}')
    assert [(d.kind, d.due_s) for d in policy.due(10_000.0)] == [('decision', 220.0)]
    assert policy.due(20_000.0) == []


def test_escalations_validate_and_resolve_once(policy):
    with pytest.raises(ValueError, match="unknown task ID 'nav-3'"):
        policy.open_escalation('nav-3', 'manager', 'why not')
    nav = run(policy, 'navigation', 'failure')
    with pytest.raises(ValueError, match='needs a reason'):
        policy.open_escalation(nav, 'manager', '  ')
    esc = policy.open_escalation(nav, 'manager', 'no physician', ['reassign:90', 'abort'])
    assert esc == 'esc-1'
    assert policy.open_escalation('', 'supervisor', 'general problem') == 'esc-2'
    accepted, message = policy.resolve('esc-9', 'abort')
    assert not accepted and "no escalation 'esc-9'" in message and 'esc-1, esc-2' in message
    accepted, message = policy.resolve(esc, 'shrug')
    assert not accepted and 'reassign, retry, abort' in message
    accepted, message = policy.resolve(esc, 'reassign', hcw_id=' ')
    assert not accepted and 'needs hcw_id' in message
    assert policy.snapshot().escalation(esc).status == 'open'
    accepted, message = policy.resolve(esc, 'reassign', hcw_id='90', note='covers', operator_id='rqt:nurse',
                                       now_s=42.0)
    assert accepted and 'HCW 90' in message
    record = policy.snapshot().escalation(esc)
    assert (record.status, record.decision, record.hcw_id, record.operator_id, record.resolved_s) == (
        'resolved', 'reassign', '90', 'rqt:nurse', 42.0)
    assert record.task_type == 'navigation' and record.options == ['reassign:90', 'abort']
    accepted, message = policy.resolve(esc, 'abort')
    assert not accepted and 'already resolved' in message
    assert not policy.closed


def test_snapshot_is_a_copy(policy):
    run(policy, 'navigation')
    state = policy.snapshot()
    state.tasks[0].status = 'failure'
    state.closed = True
    assert policy.snapshot().tasks[0].status == 'success' and not policy.closed
