"""The escalation desk's rules without ROS: lifecycle, policy, refusals, expiry, hold, store."""

import pytest

from robot_team.config import ConfigError, Deadlines, load_staff_seed, share_dir
from robot_team.core.escalations import (
    EscalationDesk, EscalationPolicy, EscalationStore, Refusal, StaffCheck, load_escalation_policy)
from robot_team.core.supervisor import SupervisorCore
from robot_team.directory import StaffDirectory
from robot_team.reports import TaskReportModel
from robot_team.workflow import WorkflowPolicy, WorkflowRule


class Ports:
    """The ROS side, recorded."""

    def __init__(self):
        self.published, self.holds, self.instructions, self.stops = [], [], [], []

    def publish_escalation(self, record, now_s):
        self.published.append(record.model_copy())

    def publish_instruction(self, instruction):
        self.instructions.append(instruction)

    def publish_hold(self, hold):
        self.holds.append(hold)

    def stop_robots(self, reason):
        self.stops.append(reason)


def make_desk(tmp_path, store=None, **policy):
    events = []

    def emit(kind, summary, /, *, target='', reason='', **data):
        events.append((getattr(kind, 'value', kind), reason, data))
    decisions = []
    core = SupervisorCore(WorkflowPolicy(Deadlines(issue_handling_s=5.0)), emit, lambda esc: desk.announce(esc),
                          decisions.append)
    seed = load_staff_seed(share_dir() / 'config' / 'staff.yaml')
    staff = StaffCheck(StaffDirectory.create(tmp_path / 'staff.sqlite', seed))
    staff.update([{'hcw_id': '80', 'area': 'ER-3', 'availability': 'busy', 'detail': 'on an urgent call'},
                  {'hcw_id': '90', 'area': 'Staff lounge', 'availability': 'available', 'detail': ''}], 0.0)
    ports = Ports()
    settings = dict(operators=['charge_nurse'], renotify_s=10.0,
                    deadlines_s={'critical': 50.0, 'high': 30.0, 'normal': 60.0})
    settings.update(policy)
    desk = EscalationDesk(core, EscalationPolicy(**settings), store or EscalationStore(None), emit, ports, staff,
                          wall=lambda: 1000.0)
    return desk, core, ports, events, decisions


def failed_nav(core):
    auth = core.authorize('navigation', 'navigation_robot', '', 'manager', 1.0, hcw_id='90')
    core.submit_report(TaskReportModel(task_id=auth.task_id, task_type='navigation', robot='navigation_robot',
                                       status='failure', issue='HCW #80 unavailable'), 2.0)
    return auth.task_id


def test_shipped_policy_loads_and_bad_policies_name_the_field(tmp_path):
    policy = load_escalation_policy()
    assert 'scripted_operator' in policy.operators and policy.on_expiry == 'hold'
    bad = tmp_path / 'bad.yaml'
    bad.write_text('operators: []\n')
    with pytest.raises(ConfigError, match='operators'):
        load_escalation_policy(bad)
    bad.write_text('operators: [a]\ndeadlines_s: {high: 10}\n')
    with pytest.raises(ConfigError, match='missing deadline.*critical'):
        load_escalation_policy(bad)


def test_lifecycle_refusals_and_accepting_the_proposal(tmp_path):
    desk, core, ports, events, decisions = make_desk(tmp_path)
    task = failed_nav(core)
    ok, esc_id, _ = core.request_escalation(task, 'HCW #80 unavailable', ['reassign:90', 'retry', 'abort'], 3.0)
    record = desk.record(esc_id)
    assert ok and record.proposal == 'reassign:90' and record.severity.value == 'high' and record.due_s == 33.0
    assert ports.published[-1].state.value == 'open'

    refusals = [
        (desk.resolve('esc-9', 'retry', '', '', 'charge_nurse', 4.0), Refusal.UNKNOWN_ESCALATION),
        (desk.acknowledge(esc_id, 'visitor', '', 4.0), Refusal.UNAUTHORISED),
        (desk.resolve(esc_id, 'retry', '', '', 'visitor', 4.0), Refusal.UNAUTHORISED),
        (desk.resolve(esc_id, 'pray', '', '', 'charge_nurse', 4.0), Refusal.BAD_DECISION),
        (desk.resolve(esc_id, 'reassign', '', '', 'charge_nurse', 4.0), Refusal.HCW_MISSING),
        (desk.resolve(esc_id, 'reassign', '999', '', 'charge_nurse', 4.0), Refusal.HCW_NOT_IN_DIRECTORY),
        (desk.resolve(esc_id, 'reassign', '80', '', 'charge_nurse', 4.0), Refusal.HCW_UNAVAILABLE),
        (desk.instruct('charge_nurse', '', '   ', 4.0), Refusal.EMPTY),
        (desk.instruct('visitor', '', 'go', 4.0), Refusal.UNAUTHORISED),
        (desk.raise_escalation('charge_nurse', 'concern', 'nav-7', 'x', '', 4.0), Refusal.UNKNOWN_TASK),
        (desk.raise_escalation('', 'concern', '', 'x', '', 4.0), Refusal.EMPTY),
        (desk.raise_escalation('nurse', 'party', '', 'x', '', 4.0), Refusal.BAD_VALUE),
    ]
    for answer, refusal in refusals:
        assert not answer.accepted and answer.refusal is refusal, answer
    assert "not authorised to resolve escalations; authorised operators: charge_nurse" in refusals[2][0].message
    assert 'not available (busy: on an urgent call' in refusals[6][0].message and '#90' in refusals[6][0].message
    assert sum(1 for kind, *_ in events if kind == 'input_error') == len(refusals)
    assert desk.record(esc_id).state.value == 'open' and decisions == [] and ports.instructions == []
    stored = desk.store.steps(esc_id)
    assert [s.refusal for s in stored if not s.accepted] == [r for _, r in refusals[1:7]]

    assert desk.acknowledge(esc_id, 'charge_nurse', 'on it', 5.0).accepted
    answer = desk.resolve(esc_id, 'accept', '', '', 'charge_nurse', 6.0)
    assert answer.accepted, answer.message
    [decision] = decisions
    assert (decision.decision, decision.hcw_id, decision.operator_id) == ('reassign', '90', 'charge_nurse')
    assert "accepted the manager's proposal reassign:90" in decision.note
    closed = desk.resolve(esc_id, 'abort', '', '', 'charge_nurse', 7.0)
    assert closed.refusal is Refusal.CLOSED and 'already resolved (reassign by charge_nurse)' in closed.message
    assert [s.step for s in desk.store.steps(esc_id) if s.accepted] == ['opened', 'acknowledged', 'resolved']


def test_an_expired_escalation_whose_task_cannot_be_escalated_holds_the_team_on_no_task(tmp_path):
    desk, core, ports, events, decisions = make_desk(tmp_path)
    task = failed_nav(core)
    _, esc_id, _ = core.request_escalation(task, 'HCW #80 unavailable', ['reassign:90', 'abort'], 3.0)
    desk._records[esc_id].task_id = 'P-0999/nav-3'   # e.g. a task of a case the core no longer holds
    desk.tick(34.0)   # expires: its hold cannot name that task; never a crash of the deadline timer
    expired = desk.record(esc_id)
    assert expired.state.value == 'expired' and expired.followed_by and desk.hold.active
    assert desk.record(expired.followed_by).task_id == ''
    assert [d['task_id'] for k, _, d in events if k == 'input_error' and d.get('escalation_id') == esc_id] == [
        'P-0999/nav-3']


def test_renotify_then_expiry_holds_the_team_until_resolved(tmp_path):
    desk, core, ports, events, decisions = make_desk(tmp_path)
    task = failed_nav(core)
    _, esc_id, _ = core.request_escalation(task, 'HCW #80 unavailable', ['reassign:90', 'abort'], 3.0)
    desk.tick(14.0)
    assert desk.record(esc_id).notifications == 2
    desk.tick(34.0)
    expired = desk.record(esc_id)
    assert expired.state.value == 'expired' and expired.safe_default == 'hold' and expired.followed_by == 'esc-2'
    hold = desk.record('esc-2')
    assert hold.holds_team and hold.kind.value == 'hold' and hold.due_s is None and hold.task_id == task
    assert hold.options == ['reassign:90', 'abort'] and hold.proposal == 'reassign:90'
    assert desk.hold.active and ports.stops and ports.holds[-1].active
    refused = core.policy.snapshot()
    auth = desk.authorize('navigation', 'navigation_robot', '', 'manager', 35.0, hcw_id='90')
    assert not auth.approved and auth.rule is WorkflowRule.HELD
    assert core.policy.snapshot().tasks == refused.tasks
    late = desk.resolve(esc_id, 'retry', '', '', 'charge_nurse', 36.0)
    assert late.refusal is Refusal.CLOSED and 'resolve esc-2 instead' in late.message
    desk.tick(500.0)    # the issue-handling deadline is paused while held; a hold never expires
    assert not any(kind == 'deadline_missed' for kind, *_ in events)
    assert desk.record('esc-2').state.value == 'open'
    assert desk.resolve('esc-2', 'retry', '', '', 'charge_nurse', 500.0).accepted
    assert not desk.hold.active and not ports.holds[-1].active
    assert [e for e in events if e[0] == 'team_released'][0][2]['held_for_s'] == pytest.approx(466.0)
    assert desk.authorize('navigation', 'navigation_robot', '', 'manager', 501.0, hcw_id='90').approved


def test_expiry_with_abort_closes_the_episode(tmp_path):
    desk, core, ports, events, decisions = make_desk(tmp_path, on_expiry='abort')
    task = failed_nav(core)
    _, esc_id, _ = core.request_escalation(task, 'door closed', ['abort'], 3.0)
    desk.tick(40.0)
    assert desk.record(esc_id).state.value == 'expired' and core.policy.closed
    assert decisions[-1].decision == 'abort' and decisions[-1].operator_id == 'supervisor'
    assert ports.stops == [f'supervisor closed the episode with abort on {esc_id}: no task may go on']


def test_a_persons_abort_stops_every_robots_running_task(tmp_path):
    """A navigation robot paged an HCW three more times after the human's abort, for 35 s."""
    desk, core, ports, events, decisions = make_desk(tmp_path)
    task = failed_nav(core)
    _, esc_id, _ = core.request_escalation(task, 'HCW #80 unavailable', ['reassign:90', 'retry', 'abort'], 3.0)
    assert desk.resolve(esc_id, 'retry', '', '', 'charge_nurse', 4.0).accepted and ports.stops == []
    again = core.authorize('navigation', 'navigation_robot', '', 'manager', 5.0, hcw_id='90')
    _, second, _ = core.request_escalation(again.task_id, 'no answer', ['abort'], 6.0)
    assert ports.stops == []
    assert desk.resolve(second, 'abort', '', 'badge office', 'charge_nurse', 7.0).accepted
    assert core.policy.closed and ports.stops == [
        f'charge_nurse closed the episode with abort on {second}: no task may go on']


def test_an_escalation_covered_by_a_takeover_expires_without_holding_the_team(tmp_path):
    desk, core, ports, events, decisions = make_desk(tmp_path)
    core.on_patient_arrival('P-1', 0.0)
    desk.tick(121.0)                                  # the decision deadline (120 s) is missed
    [esc_id] = [r.escalation_id for r in desk.records()]
    assert desk.record(esc_id).covered_by == 'takeover'          # the shipped safe default: takeover
    assert [d['directive'] for kind, _, d in events if kind == 'safe_default'] == ['takeover']
    desk.tick(160.0)                                  # past its expiry (high: 30 s here)
    expired = desk.record(esc_id)
    assert expired.state.value == 'expired' and expired.safe_default == 'takeover' and not expired.followed_by
    assert not desk.hold.active and not ports.stops and len(desk.records()) == 1
    assert desk.authorize('navigation', 'navigation_robot', '', 'manager', 200.0, hcw_id='90').approved


def test_store_survives_and_ids_continue(tmp_path):
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, ports, events, _ = make_desk(tmp_path, store=store)
    task = failed_nav(core)
    core.request_escalation(task, 'first', ['retry'], 3.0)
    desk.raise_escalation('anyone', 'stop_and_hold', '', 'wet floor', '', 4.0)
    assert desk.hold.active
    store.close()

    again = EscalationStore(tmp_path / 'escalations.sqlite')
    desk2, core2, ports2, events2, _ = make_desk(tmp_path, store=again)
    assert desk2.restore(10.0) == ['esc-1', 'esc-2']
    assert desk2.hold.active and ports2.stops
    _, new_id, _ = core2.request_escalation('', 'third', [], 11.0, raised_by='supervisor')
    assert new_id == 'esc-3'
    assert desk2.resolve('esc-2', 'retry', '', '', 'charge_nurse', 12.0).accepted and not desk2.hold.active


def test_a_deadline_pause_is_not_charged_to_the_manager(tmp_path):
    """Paused deadlines are not checked; once the last overlapping pause ends they move on by the whole pause."""
    desk, core, ports, events, decisions = make_desk(tmp_path)
    failed_nav(core)                                   # issue handling due at 2 + 5 s
    desk.pause_deadlines('navigation_robot back', 3.0)
    desk.pause_deadlines('display_robot back', 4.0)
    desk.pause_deadlines('navigation_robot back', 5.0)   # the same pause again: no change
    desk.tick(40.0)
    assert desk.deadlines_paused and not [e for e in events if e[0] == 'deadline_missed']
    assert desk.resume_deadlines('navigation_robot back', 41.0) == 0.0   # another pause stays
    assert desk.resume_deadlines('nobody', 41.0) == 0.0
    desk.tick(41.5)
    assert not [e for e in events if e[0] == 'deadline_missed']
    assert desk.resume_deadlines('display_robot back', 42.0) == 39.0      # from the first pause's start
    assert events[-1] == ('deadlines_postponed', 'navigation_robot back; display_robot back',
                          {'paused_for_s': 39.0, 'why': ['navigation_robot back', 'display_robot back']})
    desk.tick(46.0)                                    # 4 s of the 5 were left at 3.0: due at 46
    assert not desk.deadlines_paused and not [e for e in events if e[0] == 'deadline_missed']
    desk.tick(46.1)
    assert [e[2]['task_id'] for e in events if e[0] == 'deadline_missed'] == ['nav-1']
