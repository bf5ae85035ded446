"""A restarted supervisor's workflow, stored beside its escalations (no ROS): save, restore, bad state."""

import sqlite3

from test_escalation_desk import failed_nav, make_desk

from robot_team.core.escalations import EscalationStore
from robot_team.contracts.reports import TaskReportModel


def restart(tmp_path, **policy):
    """A new desk and core on the same store file, restored as the supervisor node does."""
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, ports, events, _ = make_desk(tmp_path, store=store, **policy)
    state = desk.restore_state(100.0)
    desk.restore(100.0)
    return desk, core, ports, events, state


def kinds(events):
    return [kind for kind, _, _ in events]


def test_the_workflow_is_taken_up_with_its_deadlines_and_ids(tmp_path):
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    assert desk.save_state(0.0)   # the empty workflow
    assert not desk.save_state(0.5)   # unchanged: nothing written
    core.on_patient_arrival('P-0001', 1.0)
    task = failed_nav(core)
    core.request_escalation(task, 'HCW #80 unavailable', ['reassign:90'], 3.0)
    auth = core.authorize('navigation', 'navigation_robot', '', 'manager', 4.0, hcw_id='90')
    assert auth.task_id == 'nav-2'
    assert desk.save_state(4.0)
    before = core.policy.snapshot()
    store.close()

    desk2, core2, _, events, state = restart(tmp_path)
    assert state is not None
    after = core2.policy.snapshot()
    assert after.tasks == before.tasks and after.deadlines == before.deadlines and after.patient_id == 'P-0001'
    assert [e.escalation_id for e in after.escalations] == ['esc-1']
    assert 'deadline_started' not in kinds(events)
    [(_, reason, data)] = [e for e in events if e[0] == 'workflow_restored']
    assert data['restored_tasks'] == ['nav-1', 'nav-2'] and data['running_tasks'] == ['nav-2']
    assert [(d['deadline'], d['task_id'], d['due_s']) for d in data['restored_deadlines']] == [
        ('onboarding', '', 1.0 + 900.0), ('task', 'nav-2', 4.0 + 600.0)]
    assert str(tmp_path / 'escalations.sqlite') in reason and data['saved_s'] == 4.0
    # The running task reports late (the supervisor was down): accepted, its deadline met.
    ok, _ = core2.submit_report(TaskReportModel(task_id='nav-2', task_type='navigation', robot='navigation_robot',
                                                status='success'), 120.0)
    assert ok
    assert [(d['deadline'], d['task_id'], d['met_by']) for k, _, d in events if k == 'deadline_met'] == [
        ('task', 'nav-2', 'report')]
    _, esc_id, _ = core2.request_escalation('', 'check the room', [], 121.0, raised_by='supervisor')
    assert esc_id == 'esc-2'


def test_a_deadline_due_while_down_is_missed_at_the_first_tick(tmp_path):
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    core.on_patient_arrival('P-0001', 1.0)   # decision deadline: due at 121 s
    desk.save_state(1.0)
    store.close()
    desk2, core2, _, events, _ = restart(tmp_path)
    desk2.tick(100.0)
    assert 'deadline_missed' not in kinds(events)
    desk2.tick(130.0)
    missed = [d for k, _, d in events if k == 'deadline_missed']
    assert [(d['deadline'], d['due_s']) for d in missed] == [('decision', 121.0)]
    # the safe default (takeover) is stored: a second restart keeps it and the directive numbering
    assert desk2.save_state(130.0)
    desk2.store.close()
    _, core3, _, _, state = restart(tmp_path)
    assert state.took_over and state.directives == 1
    assert core3.hold_team('esc-1', 'test').directive_id == 'directive-2'


def test_a_hold_counts_the_downtime_when_released(tmp_path):
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    auth = core.authorize('navigation', 'navigation_robot', '', 'manager', 10.0, hcw_id='90')   # task due 610 s
    hold = desk.raise_escalation('security', 'stop_and_hold', '', 'fire door alarm', '', 20.0)
    assert hold.accepted and desk.hold.active
    desk.save_state(20.0)
    store.close()
    desk2, core2, ports2, _, _ = restart(tmp_path)   # down from 20 s to 100 s
    assert desk2.hold.active and desk2.hold.state().since_s == 20.0
    desk2.tick(700.0)   # held: no deadline runs
    assert core2.policy.snapshot().task(auth.task_id).status == 'running'
    assert desk2.resolve(hold.escalation_id, 'retry', '', '', 'charge_nurse', 700.0).accepted
    [task_deadline] = [d for d in core2.policy.snapshot().deadlines if d.kind == 'task']
    assert task_deadline.due_s == 610.0 + (700.0 - 20.0)


def test_a_corrupt_state_is_recorded_and_the_supervisor_starts_empty(tmp_path):
    db = tmp_path / 'escalations.sqlite'
    store = EscalationStore(db)
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    core.authorize('navigation', 'navigation_robot', '', 'manager', 1.0, hcw_id='90')
    desk.save_state(1.0)
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE supervisor_state SET state_json = '{\"workflow\": {\"tasks\": 7}}'")
    conn.close()

    desk2, core2, _, events, state = restart(tmp_path)
    assert state is None and core2.policy.snapshot().tasks == []
    [(_, reason, data)] = [e for e in events if e[0] == 'input_error']
    assert data['escalation_db'] == str(db) and 'tasks' in reason and data['raw'].startswith('{"workflow"')
    assert 'workflow_restored' not in kinds(events)
    assert core2.authorize('navigation', 'navigation_robot', '', 'manager', 2.0, hcw_id='90').task_id == 'nav-1'
    assert desk2.save_state(2.0)   # the bad state is replaced
    assert '"nav-1"' in desk2.store.saved_state().state_json


def test_an_inconsistent_state_is_recorded_too(tmp_path):
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    core.authorize('navigation', 'navigation_robot', '', 'manager', 1.0, hcw_id='90')
    store.save_state(core.state().model_dump_json().replace('"nav-1"', '"info-1"'), 1.0, 1000.0)
    store.close()
    _, core2, _, events, state = restart(tmp_path)
    assert state is None and core2.policy.snapshot().tasks == []
    assert [reason for kind, reason, _ in events if kind == 'input_error'][0].startswith("stored task ID 'info-1'")


def test_nothing_stored_restores_nothing(tmp_path):
    _, core, _, events, state = restart(tmp_path)
    assert state is None and events == [] and core.policy.snapshot().tasks == []


def test_a_restart_keeps_a_closed_case_with_an_escalation_open_and_gives_a_let_go_cases_to_no_other(tmp_path):
    from robot_team.contracts.escalation_model import LifecycleState
    from test_escalation_desk import STEPS, serve
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, _, _, _ = make_desk(tmp_path, store=store)
    core.cases_at_once = 0
    core.on_patient_arrival('P-0', 0.0)
    t = serve(core, 'P-0', '90', 1.0, STEPS[:1])
    first = desk.raise_escalation('charge_nurse', 'concern', 'nav-1', 'a worry', 'high', t).escalation_id
    assert desk.resolve(first, 'retry', '', '', 'charge_nurse', t).accepted
    t = serve(core, 'P-0', '90', t, STEPS[1:])
    core.on_patient_arrival('P-1', t)
    core.on_patient_arrival('P-2', t)
    t = serve(core, 'P-1', '90', t, STEPS[:1])
    kept = desk.raise_escalation('charge_nurse', 'concern', 'P-1/nav-1', 'another worry', 'high', t).escalation_id
    t = serve(core, 'P-1', '90', t, STEPS[1:])
    assert (first, kept) == ('esc-1', 'P-1/esc-1') and core.cases_kept == ['P-1', 'P-2']
    assert desk.save_state(t)
    # the store says P-0's escalation is still open (e.g. a decision lost with the supervisor)
    store.save(desk.record(first).model_copy(update={'state': LifecycleState.OPEN, 'closed_s': None}))
    store.close()

    desk2, core2, _, events, state = restart(tmp_path)
    assert core2.cases_kept == ['P-1', 'P-2'] and core2.policy.patient_id == 'P-2'
    assert core2._cases['P-1'].snapshot().escalation(kept).is_open
    # P-0 was let go: its escalation goes to no other case (the latest's fallback would be P-2's), recorded
    assert all(p.snapshot().escalation(first) is None for p in (core2.policy, *core2._cases.values()))
    [(reason, data)] = [(r, d) for k, r, d in events if k == 'input_error']
    assert 'case P-0 is closed' in reason and (data['case_id'], data['escalation_id']) == ('P-0', first)
    refused = desk2.resolve(first, 'retry', '', '', 'charge_nurse', 101.0)
    assert not refused.accepted and 'case P-0 is closed' in refused.message
    assert desk2.resolve(kept, 'retry', '', '', 'charge_nurse', 102.0).accepted
    assert core2.cases_kept == ['P-2'] and not core2.policy.snapshot().escalations
