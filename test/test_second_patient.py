"""Every arrival opens a case; a second patient never replaces the one in progress (issue 27, item 1).

The team serves one case at a time: another patient's case waits (``case_waiting``), and when
the case in progress closes (its reflection recorded) the most urgent waiting case starts, at the
supervisor's gate and at the manager alike (``robot_team.contracts.cases.next_case``), with its own policy,
task and escalation IDs, deadlines and observation: nothing of one case leaks into another. A
patient whose case waits the onboarding deadline is given to a person (a ``patient`` escalation)
and keeps their place. The core tests run the nodes' cores without ROS; the last one a real graph.
"""

import threading

import pytest
import rclpy
from hypothesis import given, settings, strategies as st

from robot_team.contracts import names
from robot_team.brains.base import PatientInfo
from robot_team.brains.protocol import ManagerProtocolBrain, protocol_robot_brain
from robot_team.contracts.cases import WaitingCase, case_key, next_case
from robot_team.contracts.config import load_scenario
from robot_team.core.manager_cases import run_outcome
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.run.lifecycle import EXIT_AS_EXPECTED, exit_code
from robot_team.msg import PatientArrival
from robot_team.run_report import case_results
from robot_team.contracts.reports import TaskReportModel
from robot_team.ros.messages import reliable_qos
from robot_team.run.episode import run_episode
from robot_team.rules.workflow.rules import StaffFacts
from team_harness import InMemoryTeam, Recorder
from test_no_stall import ROBOTS, supervisor

OTHER = PatientInfo(patient_id='P-0777', room='ER-3', presentation='shortness of breath', esi_level=3,
                    assigned_hcw_id='41', required_specialty='Nurse')
STAFF = {'41': StaffFacts(specialty='Nurse', availability='available'),
         '90': StaffFacts(specialty='Physician', availability='available')}


def _serve(core, case_prefix: str, hcw_id: str, t: float) -> float:
    """Run a case through the gate with successful reports; return the time after its reflection."""
    for task_type, robot in (('navigation', 'navigation_robot'), ('info_collection', 'info_collection_robot'),
                             ('display', 'display_robot'), ('reflection', 'manager')):
        auth = core.authorize(task_type, robot, '', 'manager', t, hcw_id=hcw_id, staff=STAFF)
        assert auth.approved and auth.task_id.startswith(case_prefix), auth
        accepted, why = core.submit_report(TaskReportModel(task_id=auth.task_id, task_type=task_type, robot=robot,
                                                           status='success'), t + 1.0)
        assert accepted, why
        t += 2.0
    return t


def test_the_gate_serves_one_case_and_opens_the_next_with_its_own_ids_and_deadlines():
    core, record, _, _ = supervisor()
    assert core.on_patient_arrival('P-1', 1.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    for t in (5.0, 6.0):   # the other patient, and the same cue again (a latched topic repeats it)
        assert not core.on_patient_arrival('P-2', t, assigned_hcw_id='41', required_specialty='Nurse', room='ER-3',
                                           esi_level=3)
    assert not core.on_patient_arrival('P-1', 7.0)
    [waiting] = record.of('case_waiting')
    assert (waiting['case_id'], waiting['room'], waiting['esi_level'], waiting['serving']) == ('P-2', 'ER-3', 3, 'P-1')
    assert [e['deadline'] for e in record.of('deadline_started')] == ['decision', 'onboarding']   # P-1's only
    # rule 9 checks P-1's needs, and another case's task is refused with the case in progress named
    refused = core.authorize('navigation', 'navigation_robot', '', 'manager', 8.0, hcw_id='41', staff=STAFF)
    assert not refused.approved and refused.rule.value == 'hcw'
    other = core.authorize('navigation', 'navigation_robot', '', 'manager', 8.0, hcw_id='41', staff=STAFF,
                           case_id='P-2')
    assert not other.approved and (other.rule.value, other.case_id) == ('case', 'P-1')
    t = _serve(core, '', '90', 9.0)
    opened = record.of('case_opened')
    assert [e['case_id'] for e in opened] == ['P-1', 'P-2'] and opened[1]['id_prefix'] == 'P-2/'
    assert core.policy.patient_id == 'P-2' and not core.policy.snapshot().tasks   # no task of P-1 leaks in
    onboarding = [d for d in core.policy.snapshot().deadlines if d.kind == 'onboarding']
    assert [d.started_s for d in onboarding] == [5.0]   # P-2 has waited since arriving
    # P-2's own rule 9 (a nurse) and its own IDs
    assert core.authorize('navigation', 'navigation_robot', '', 'manager', t, hcw_id='90', staff=STAFF).rule.value \
        == 'hcw'
    _serve(core, 'P-2/', '41', t)
    assert [e['case_id'] for e in record.of('case_closed')] == ['P-1', 'P-2']
    _, esc_id, _ = core.request_escalation('', 'a question about P-2', [], t + 20.0)
    assert esc_id == 'P-2/esc-1'


def test_the_most_urgent_waiting_case_goes_next_at_the_gate():
    core, record, _, _ = supervisor()
    core.on_patient_arrival('P-1', 1.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    for i, (patient, esi) in enumerate((('P-low', 5), ('P-mid', 3), ('P-high', 2), ('P-high2', 2))):
        core.on_patient_arrival(patient, 10.0 + i, assigned_hcw_id='90', required_specialty='Physician',
                                room=f'ER-{i + 1}', esi_level=esi)
    t, served = 20.0, []
    while core.policy.patient_id not in served:
        served.append(core.policy.patient_id)
        t = _serve(core, '' if not served[:-1] else f'{served[-1]}/', '90', t)
    assert served == ['P-1', 'P-high', 'P-high2', 'P-mid', 'P-low']


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0, 3600, allow_nan=False)), min_size=1, max_size=12))
def test_next_case_is_the_most_urgent_then_the_earliest(arrivals):
    waiting = [WaitingCase(f'P-{i}', esi, t) for i, (esi, t) in enumerate(arrivals)]
    chosen = next_case(waiting)
    for other in waiting:
        rank, chosen_rank = other.esi_level or 3, chosen.esi_level or 3
        assert chosen_rank < rank or (chosen_rank == rank and case_key(chosen.esi_level, chosen.arrived_s,
                                                                       chosen.patient_id) <=
                                      case_key(other.esi_level, other.arrived_s, other.patient_id))
    assert next_case([]) is None


def test_a_patient_who_waits_the_onboarding_deadline_goes_to_a_person_and_keeps_their_place(tmp_path):
    from test_escalation_desk import make_desk
    desk, core, ports, events, _ = make_desk(tmp_path)
    core.on_patient_arrival('P-1', 0.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    core.on_patient_arrival('P-2', 3.0, assigned_hcw_id='41', required_specialty='Nurse', room='ER-3', esi_level=2)
    limit = core.policy.deadlines.onboarding_s
    desk.hold_team('P-1 needs a person first', by='charge_nurse', now_s=10.0)   # P-1's case is held...
    assert desk.hold.active
    assert [(r.kind.value, r.patient_id) for r in ports.published] == [('hold', 'P-1')]   # names its case
    desk.tick(3.0 + limit - 1.0)
    assert not [r for r in desk.records() if r.kind.value == 'patient']
    desk.tick(3.0 + limit)   # ... and P-2 still gets a person on time
    desk.tick(3.0 + limit + 1.0)   # once per patient
    [asked] = [r for r in desk.records() if r.kind.value == 'patient']
    assert (asked.patient_id, asked.severity.value, asked.due_s, asked.holds_team) == ('P-2', 'critical', None, False)
    assert [d['patient_id'] for k, _, d in events if k == 'patient_unserved'] == ['P-2']
    assert [c.patient_id for c in core.waiting] == ['P-2']   # still the team's to serve next
    assert desk.acknowledge(asked.escalation_id, 'charge_nurse', 'I have P-2', limit + 10.0).accepted


def test_under_a_hold_an_open_case_nobody_was_asked_about_goes_to_a_person_on_time(tmp_path):
    from test_escalation_desk import make_desk
    desk, core, ports, events, _ = make_desk(tmp_path)
    core.cases_at_once = 0   # both cases open: P-2's deadlines wait for the hold on P-1's case
    core.on_patient_arrival('P-1', 0.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    core.on_patient_arrival('P-2', 3.0, assigned_hcw_id='41', required_specialty='Nurse', room='ER-3', esi_level=2)
    assert [p.patient_id for p in core.open_policies] == ['P-1', 'P-2']
    assert core.authorize('navigation', 'navigation_robot', '', 'manager', 1.0, hcw_id='90', case_id='P-1').approved
    hold = desk.hold_team('P-1 needs a person first', by='charge_nurse', now_s=10.0)
    limit = core.policy.deadlines.onboarding_s
    desk.tick(limit + 1.0)   # P-1 has waited that long, but a person has its case (the hold)
    assert not [r for r in desk.records() if r.kind.value == 'patient']
    desk.tick(3.0 + limit)   # P-2's onboarding deadline waits for the hold: a person is asked instead
    desk.tick(3.0 + limit + 1.0)   # once per patient
    [asked] = [r for r in desk.records() if r.kind.value == 'patient']
    assert (asked.patient_id, asked.severity.value) == ('P-2', 'critical')
    [unserved] = [d for k, _, d in events if k == 'patient_unserved']
    assert (unserved['patient_id'], unserved['serving']) == ('P-2', 'P-1')
    # released after P-1's limit: that person decided on P-1 late, so nobody is asked for P-1 again
    assert desk.resolve(hold, 'retry', '', 'go on', 'charge_nurse', 3.0 + limit + 2.0).accepted
    desk.tick(3.0 + limit + 3.0)
    assert [d['patient_id'] for k, _, d in events if k == 'patient_unserved'] == ['P-2']
    # the state a restarted supervisor takes up keeps both arrivals
    assert [c.patient_id for c in core.state().opened] == ['P-1', 'P-2']


def test_the_manager_serves_both_cases_in_turn_without_leaking_one_into_the_other():
    # the stub floor has one room: the next patient in ER-12 after the first, with physician #90 assigned
    record = Recorder()
    team = InMemoryTeam(ManagerProtocolBrain(), {r: protocol_robot_brain(r) for r in ROBOTS}, record=record)
    team.manager.cases = 2
    first = team.manager.snapshot().patient
    later = OTHER.model_copy(update={'room': first.room, 'assigned_hcw_id': '90', 'required_specialty': 'Physician'})
    team.manager.on_arrival(later)
    team.supervisor.on_patient_arrival(later.patient_id, team.t, assigned_hcw_id=later.assigned_hcw_id,
                                       required_specialty=later.required_specialty, room=later.room,
                                       esi_level=later.esi_level)
    result = team.run(max_rounds=80)
    assert result.outcome == 'success'
    closed = [(c.case_id, c.outcome) for c in team.manager.closed_cases]
    assert closed == [(first.patient_id, 'success'), (later.patient_id, 'success')]
    # the second case's observation starts afresh: only its own tasks, escalations and feedback
    obs = team.manager.snapshot()
    assert obs.patient == later and obs.tasks and {t.task_id.split('/')[0] for t in obs.tasks} == {later.patient_id}
    assert not obs.escalations and not obs.handled_failures
    requested = record.of('delegation_requested')
    assert {e['data']['case_id'] for e in requested} == {first.patient_id, later.patient_id}
    # the first case needed a recovery (#80 busy); the second goes straight to its assigned #90
    navs = [(e['data']['case_id'], e['data']['hcw_id']) for e in requested if e['data']['task_type'] == 'navigation']
    assert navs == [(first.patient_id, '80'), (first.patient_id, '90'), (later.patient_id, '90')]
    waits = [e['data'] for e in record.of('observation', 'manager') if e['data'].get('cue') == 'case_waiting']
    assert [(d['case_id'], d['serving']) for d in waits] == [(later.patient_id, first.patient_id)]
    # the first case's lessons reach the second (kept across the run's cases, the Criticize-Reflect loop)
    first_lessons = record.of('reflection')[0]['data']['lessons_learned']
    assert first_lessons and obs.lessons == list(dict.fromkeys(first_lessons))
    unowned = [e['kind'] for e in record.events if e['actor'] in ('manager', 'supervisor')
               and not e['data'].get('case_id')]
    assert unowned == ['episode_finished']   # every other event of the cores names its case


def event(t, kind, actor='supervisor', **data):
    """A recorded event at sim time ``t`` (s), numbered ``int(t)``."""
    return TeamEventModel(stamp_s=float(t), wall_time=0.0, seq=int(t), actor=actor, kind=kind, data=data)


def test_the_run_outcome_and_each_case_in_the_report():
    assert run_outcome(['success']) == 'success' and run_outcome(['escalated', 'escalated']) == 'escalated'
    assert run_outcome(['success', 'escalated']) == 'escalated' and run_outcome(['escalated', 'failure']) == 'failure'
    events = [event(1, 'sim', 'hospital_systems', what='patient_arrival', patient_id='A'),
              event(1.1, EventKind.CASE_OPENED.value, case_id='A', room='ER-1', esi_level=3, arrived_s=1.1),
              event(2, EventKind.DELEGATION_AUTHORIZED.value, case_id='A', task_id='nav-1'),
              event(3, 'sim', 'hospital_systems', what='patient_arrival', patient_id='B'),
              event(3.1, EventKind.CASE_WAITING.value, case_id='B', room='ER-2', esi_level=1, arrived_s=3.1),
              event(4, 'sim', 'hospital_systems', what='hcw_entering', room='ER-2'),   # before B's case started
              event(5, 'task_report', 'navigation_robot', task_id='nav-1', source='llm'),
              event(30, 'judgment', 'manager', case_id='A', task_type='navigation', judged_status='success'),
              event(50, 'sim', 'hospital_systems', what='hcw_entering', room='ER-1'),   # after that escort
              event(90, EventKind.CASE_CLOSED.value, 'manager', case_id='A', outcome='success'),
              event(90.5, EventKind.CASE_OPENED.value, case_id='B', room='ER-2', esi_level=1, arrived_s=3.1),
              event(95, 'escalation', escalation_id='B/esc-1', patient_id='B'),
              event(120, 'sim', 'hospital_systems', what='hcw_arrived', room='ER-2')]
    a, b = case_results(events, {'B': 'escalated'}, 'success')
    assert (a['patient_id'], a['arrival_s'], a['started_s'], a['door_to_provider_s'], a['outcome'],
            a['expected_outcome'], a['escalations']) == ('A', 1.0, 1.1, 29.0, 'success', 'success', 0)
    assert (b['patient_id'], b['waited_for_robot_s'], b['door_to_provider_s'], b['outcome'], b['expected_outcome'],
            b['escalations']) == ('B', 87.5, 117.0, None, 'escalated', 1)


@pytest.mark.parametrize('cases_at_once, fleet', [(1, 1), (0, 1), (0, 2)], ids=['one', 'at_once', 'fleet'])
def test_a_second_arrival_on_the_topic_is_served_after_the_first(domain_id, ros_context, tmp_path, cases_at_once,
                                                                 fleet):
    # The hospital's systems announce a second patient on ed/patient_arrivals while the first
    # one's onboarding runs (as the report did, 3 s of sim time in). One case at a time,
    # or both at once (0: no limit) on the shared robots (the manager and supervisor nodes'
    # parameter from the scenario), or at once with two navigation robots (a fleet).
    scenario = load_scenario('onboarding').model_copy(update={'cases_at_once': cases_at_once,
                                                              'fleet': {'navigation_robot': fleet}})
    feed = rclpy.create_node('hospital_feed', context=ros_context)
    arrivals = feed.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
    sent = threading.Event()

    def on_event(event):
        if not sent.is_set() and event.kind == EventKind.DELEGATION_AUTHORIZED.value:
            arrivals.publish(PatientArrival(patient_id=OTHER.patient_id, room=OTHER.room, esi_level=OTHER.esi_level,
                                            presentation=OTHER.presentation, assigned_hcw_id=OTHER.assigned_hcw_id,
                                            required_specialty=OTHER.required_specialty))
            sent.set()
    try:
        result = run_episode(scenario, tmp_path, domain_id=domain_id, on_event=on_event)
    finally:
        feed.destroy_node()
    assert sent.is_set()
    report, events = result.report, result.events
    assert report['outcome'] == 'success', report
    cases = {c['patient_id']: c for c in report['cases']}
    assert {p: c['outcome'] for p, c in cases.items()} == {scenario.patient.patient_id: 'success',
                                                           OTHER.patient_id: 'success'}
    assert cases[OTHER.patient_id]['door_to_provider_s'] > cases[OTHER.patient_id]['waited_for_robot_s']
    assert report['unserved_patients'] == [] and exit_code(report) == EXIT_AS_EXPECTED
    # each screen shows its own case's care team, each escort went to its own room
    shown = {e.data['room']: e.data for e in events if e.kind == 'sim' and e.data.get('what') == 'display_shown'}
    assert set(shown) == {scenario.patient.room, OTHER.room}
    goals = {(e.data['case_id'], e.data['room']) for e in events if e.kind == 'delegation_requested'}
    assert goals == {(scenario.patient.patient_id, scenario.patient.room), (OTHER.patient_id, OTHER.room)}
    second = [e.data['task_id'] for e in events if e.kind == 'delegation_authorized'
              and e.data.get('case_id') == OTHER.patient_id]
    assert second and all(t.startswith(f'{OTHER.patient_id}/') for t in second)
    # at once: the second case starts at its arrival and waits only for the navigation robot, whose
    # escort for it starts while the first case is still open; one at a time: after it closed
    [opened] = [e.stamp_s for e in events if e.kind == 'case_opened' and e.data['case_id'] == OTHER.patient_id]
    first_closed = next(e.stamp_s for e in events if e.kind == 'case_closed' and e.actor == 'supervisor')
    escort = next(e.stamp_s for e in events if e.kind == 'delegation' and e.data['case_id'] == OTHER.patient_id)
    waits = [e.data for e in events if e.kind == 'observation' and e.data.get('cue') == 'waiting_for_robot']
    navigators = set(scenario.robots[:fleet])
    navigations = [e for e in events if e.kind == 'delegation' and e.data['task_type'] == 'navigation']
    if fleet > 1:   # the second escort goes at once to an idle navigation robot; both idle: the nearest
        assert opened <= escort < first_closed and not waits and cases[OTHER.patient_id]['waited_for_robot_s'] == 0
        assert {e.data['robot'] for e in navigations} == navigators
        dispatched = [e.data for e in events if e.kind == 'observation' and e.data.get('cue') == 'dispatch']
        assert dispatched and all(set(d['path_lengths_m']) == navigators for d in dispatched)
        assert all(d['robot'] == min(d['path_lengths_m'], key=d['path_lengths_m'].get) for d in dispatched)
        # each HCW arrived at their room with the robot that escorted them (the world's record)
        escorted = {(e.data['room'], e.data['robot']) for e in navigations}
        arrived = {(e.data['room'], e.data['robot']) for e in events
                   if e.kind == 'sim' and e.data.get('what') == 'hcw_arrived'}
        assert {room for room, _ in arrived} == {scenario.patient.room, OTHER.room} and arrived <= escorted
    elif cases_at_once == 0:
        assert opened <= escort < first_closed
        assert {(w['case_id'], w['robot']) for w in waits} == {(OTHER.patient_id, 'navigation_robot')}
        assert cases[OTHER.patient_id]['waited_for_robot_s'] > 0
    else:
        assert first_closed <= opened <= escort and not waits
    navigating = [e for e in events if e.kind == 'task_started' and e.actor in navigators]
    assert len(navigating) == len(navigations) >= 2   # one task at a time: no goal rejected as busy
    assert not [e for e in events if e.kind == 'delegation_refused' and e.actor in navigators]


def test_a_shift_announces_every_patient_at_their_arrival_time_and_each_case_expects_its_outcome():
    from robot_team.contracts.config import PatientSpec, load_staff_seed
    from robot_team.sim.hospital import HospitalEngine
    from robot_team.sim.world import load_world
    base = load_scenario('onboarding')
    later = PatientSpec(patient_id='P-2', room='ER-3', assigned_hcw_id='41', required_specialty='Nurse',
                        arrival_time_s=30.0, expected_outcome='escalated')
    shift = base.model_copy(update={'arrivals': [later]})
    assert [p.patient_id for p in shift.cases] == ['P-0001', 'P-2']
    assert shift.expected_outcomes == {'P-0001': 'success', 'P-2': 'escalated'}
    engine = HospitalEngine(load_world(shift.floor_path), load_staff_seed(shift.staff_path), shift)
    first = [e.data['patient_id'] for e in engine.advance_to(20.0) if e.kind == 'patient_arrival']
    second = [(e.data['patient_id'], e.t) for e in engine.advance_to(40.0) if e.kind == 'patient_arrival']
    assert first == ['P-0001'] and second == [('P-2', 30.0)] and engine.arrived == ['P-0001', 'P-2']
    try:
        type(base).model_validate({**base.model_dump(), 'arrivals': [base.patient.model_dump()]})
    except ValueError as exc:
        assert 'P-0001' in str(exc) and 'one arrival per patient' in str(exc)
    else:
        raise AssertionError('a patient arriving twice in one scenario was accepted')


def test_an_llm_manager_hears_earlier_lessons_with_its_kb_and_starts_each_case_afresh():
    from robot_team.llm.manager_brain import LLMManagerBrain
    from robot_team.llm.settings import LLMSettings
    from robot_team.brains.base import ManagerObservation
    obs = ManagerObservation(patient=OTHER, lessons=['Page the alternative physician at once.'])
    for kb in (True, False):
        brain = LLMManagerBrain(LLMSettings(), kb=kb)
        try:
            first = brain.update_text(obs)
            assert ('Page the alternative physician at once.' in first) is kb
            brain._started = True   # as after its first request
            assert 'Lessons' not in brain.update_text(obs)   # told once per case
            brain.new_case()
            assert ('Lessons' in brain.update_text(obs)) is kb and brain.messages == []
        finally:
            brain.close()


def test_a_case_report_appears_whole_never_half_written(tmp_path):
    """``cases/<case>.json`` is only ever made by a rename: a reader never opens it empty or partial.

    Found by ``test_deployment``: it read a report the moment the file existed, and got ''.
    """
    import json
    import sys

    from robot_team.run_report import case_report_path, write_case_report

    events = [event(1, 'sim', 'hospital_systems', what='patient_arrival', patient_id='P-1'),
              event(1.1, EventKind.CASE_OPENED.value, case_id='P-1', room='ER-1', esi_level=3, arrived_s=1.1),
              event(90, EventKind.CASE_CLOSED.value, 'manager', case_id='P-1', outcome='success')]
    final = case_report_path(tmp_path, 'P-1')
    seen = []   # (audit event, its mode or 'to') for each open or rename of the final path, while watching

    def audit(name, args):
        if watching and name in ('open', 'os.rename') and any(str(a) == str(final) for a in args[:2]):
            seen.append((name, args[1] if name == 'open' else 'to'))
    watching = False
    sys.addaudithook(audit)   # (cannot be removed: it does nothing once ``watching`` is False)
    for _ in range(2):   # a new report, then one replacing it
        watching = True
        try:
            path = write_case_report(events, 'P-1', tmp_path, scenario='s', brain='protocol', mode='in-process')
        finally:
            watching = False
        assert path == final and json.loads(final.read_text())['outcome'] == 'success'
        assert seen == [('os.rename', 'to')], f'the report was written in place: {seen}'
        seen.clear()
    assert sorted(p.name for p in final.parent.iterdir()) == ['P-1.json']
