"""A second patient never replaces the one in progress, and is never dropped silently (issue 27, item 1).

An episode serves one patient. Another patient's arrival during it is recorded by the supervisor
(``patient_unserved``) and seen by the manager, a person is asked at once to take that patient (a
``patient`` escalation, announced until acknowledged), the report lists the patient nobody
served, and ``robot-team run`` exits 1; the patient in progress is served as if nobody else had
arrived.
The core tests run the nodes' cores without ROS; the last one a real graph.
"""

import threading

import rclpy

from robot_team import names
from robot_team.brains.base import PatientInfo
from robot_team.brains.protocol import ManagerProtocolBrain, protocol_robot_brain
from robot_team.config import load_scenario
from robot_team.events import EventKind, TeamEventModel
from robot_team.lifecycle import EXIT_AS_EXPECTED, EXIT_UNEXPECTED_OUTCOME, exit_code
from robot_team.msg import PatientArrival
from robot_team.report import build_report
from robot_team.rosmsgs import reliable_qos
from robot_team.runner import run_episode
from robot_team.workflow import StaffFacts
from team_harness import InMemoryTeam, Recorder
from test_no_stall import ROBOTS, supervisor

OTHER = PatientInfo(patient_id='P-0777', room='ER-3', presentation='shortness of breath', esi_level=3,
                    assigned_hcw_id='41', required_specialty='Nurse')


def test_the_gate_keeps_its_patient_and_records_another_once():
    core, record, _, _ = supervisor()
    assert core.on_patient_arrival('P-1', 1.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    for t in (5.0, 6.0):   # the other patient, and the same cue again (a latched topic repeats it)
        assert not core.on_patient_arrival('P-2', t, assigned_hcw_id='41', required_specialty='Nurse', room='ER-3',
                                           esi_level=3)
    assert not core.on_patient_arrival('P-1', 7.0)
    [unserved] = record.of('patient_unserved')
    assert (unserved['patient_id'], unserved['room'], unserved['esi_level'], unserved['serving']) == \
        ('P-2', 'ER-3', 3, 'P-1')
    assert core.policy.patient_id == 'P-1'
    assert [e['deadline'] for e in record.of('deadline_started')] == ['decision', 'onboarding']   # P-1's only
    # rule 9 still checks P-1's needs: the other patient's nurse is not an HCW for P-1
    staff = {'41': StaffFacts(specialty='Nurse', availability='available'),
             '90': StaffFacts(specialty='Physician', availability='available')}
    refused = core.authorize('navigation', 'navigation_robot', '', 'manager', 8.0, hcw_id='41', staff=staff)
    assert not refused.approved and refused.rule.value == 'hcw'
    assert core.authorize('navigation', 'navigation_robot', '', 'manager', 9.0, hcw_id='90', staff=staff).approved


def test_the_manager_serves_its_patient_to_the_end_when_another_arrives():
    record = Recorder()
    team = InMemoryTeam(ManagerProtocolBrain(), {r: protocol_robot_brain(r) for r in ROBOTS}, record=record)
    first = team.manager.snapshot().patient
    team.manager.on_arrival(OTHER)
    team.supervisor.on_patient_arrival(OTHER.patient_id, team.t, assigned_hcw_id=OTHER.assigned_hcw_id,
                                       required_specialty=OTHER.required_specialty, room=OTHER.room,
                                       esi_level=OTHER.esi_level)
    result = team.run()
    assert result.outcome == 'success'
    assert result.observation.patient == first
    seen = [e for e in record.of('observation', 'manager') if e['data'].get('cue') == 'patient_unserved']
    assert [e['data']['patient_id'] for e in seen] == ['P-0777'] and seen[0]['data']['serving'] == first.patient_id
    rooms = {e['data'].get('room') for e in record.of('delegation_requested')} - {'', None}
    assert rooms == {first.room}
    assert OTHER.assigned_hcw_id not in {e['data'].get('hcw_id') for e in record.of('delegation_requested')}


def _event(i, kind, **data):
    return TeamEventModel(stamp_s=float(i), wall_time=0.0, seq=i, actor='supervisor', kind=kind, data=data)


def test_the_report_lists_each_unserved_patient_once_and_the_run_is_not_as_expected():
    finished = _event(9, EventKind.EPISODE_FINISHED.value, outcome='success')
    alone = build_report([finished], scenario='s', brain='protocol', mode='in_process', expected_outcome='success',
                         wall_time_s=1.0)
    assert alone['unserved_patients'] == [] and exit_code(alone) == EXIT_AS_EXPECTED
    events = [_event(3, EventKind.PATIENT_UNSERVED.value, patient_id='P-2', room='ER-3', esi_level=2,
                     assigned_hcw_id='41'),
              _event(4, EventKind.PATIENT_UNSERVED.value, patient_id='P-2', room='ER-3', esi_level=2,
                     assigned_hcw_id='41'),   # recorded again by a restarted supervisor
              _event(5, EventKind.PATIENT_UNSERVED.value, patient_id='P-3', room='ER-5', esi_level=1,
                     assigned_hcw_id='22'), finished]
    report = build_report(events, scenario='s', brain='protocol', mode='in_process', expected_outcome='success',
                          wall_time_s=1.0)
    assert [(p['patient_id'], p['room'], p['arrived_s']) for p in report['unserved_patients']] == \
        [('P-2', 'ER-3', 3.0), ('P-3', 'ER-5', 5.0)]
    assert report['outcome'] == 'success' and exit_code(report) == EXIT_UNEXPECTED_OUTCOME


def test_a_second_arrival_on_the_topic_leaves_the_first_patient_served_and_the_second_on_the_record(
        domain_id, ros_context, tmp_path):
    # The hospital's systems announce a second patient on ed/patient_arrivals while the first
    # one's onboarding runs (as the report did, 3 s of sim time in).
    scenario = load_scenario('onboarding')
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
    assert [(p['patient_id'], p['room']) for p in report['unserved_patients']] == [(OTHER.patient_id, OTHER.room)]
    assert exit_code(report) == EXIT_UNEXPECTED_OUTCOME
    asked = [e for e in report['escalations'] if e['escalation_id'].startswith('patient-')]
    assert [(e['raised_by'], e['task_id']) for e in asked] == [('supervisor', '')]   # a person asked at once
    assert OTHER.patient_id in asked[0]['reason']
    waits = [e for e in events if e.kind == 'escalation_awaits_human']
    assert [e.data['escalation_id'] for e in waits] == [asked[0]['escalation_id']]   # no scripted answer spent
    seen = [e for e in events if e.kind == 'observation' and e.data.get('cue') == 'patient_unserved']
    assert seen and seen[0].data['serving'] == scenario.patient.patient_id
    shown = [e.data for e in events if e.kind == 'sim' and e.data.get('what') == 'display_shown']
    assert shown and {d.get('room') for d in shown} == {scenario.patient.room}
    goals = {e.data.get('room') for e in events if e.kind == 'delegation_requested'} - {'', None}
    assert goals == {scenario.patient.room}


def test_a_person_is_asked_for_the_other_patient_at_once_until_one_acknowledges(tmp_path):
    from robot_team.core.escalations import EscalationStore, Refusal
    from test_escalation_desk import make_desk
    store = EscalationStore(tmp_path / 'escalations.sqlite')
    desk, core, ports, events, _ = make_desk(tmp_path, store=store)
    core.on_patient_arrival('P-1', 0.0, assigned_hcw_id='90', required_specialty='Physician', room='ER-12')
    core.on_patient_arrival('P-2', 3.0, assigned_hcw_id='41', required_specialty='Nurse', room='ER-3', esi_level=2)
    [asked] = [r for r in desk.records() if r.kind.value == 'patient']
    assert (asked.escalation_id, asked.patient_id, asked.severity.value, asked.due_s, asked.holds_team) == \
        ('patient-1', 'P-2', 'critical', None, False)
    assert ports.published[-1].escalation_id == 'patient-1' and ports.published[-1].opened_s == 3.0
    assert [d['escalation_id'] for k, _, d in events if k == 'escalation'] == ['patient-1']
    assert not [d for d in core.policy.snapshot().deadlines if d.state == 'met']   # P-1's deadlines untouched
    desk.tick(100.0)   # past every escalation deadline (30-60 s), not P-1's first step (120 s): announced again
    record = desk.record('patient-1')
    assert record.is_open and record.notifications == 2 and not desk.hold.active
    refused = desk.resolve('patient-1', 'abort', '', '', 'charge_nurse', 101.0)
    assert not refused.accepted and refused.refusal is Refusal.BAD_DECISION and not core.policy.closed
    assert desk.acknowledge('patient-1', 'charge_nurse', 'I have P-2', 102.0).accepted
    desk.tick(115.0)
    assert desk.record('patient-1').notifications == 2   # a person has the patient: no more announcements
    # the gate's own escalations keep their IDs, and a restarted supervisor keeps the two apart
    nav = core.authorize('navigation', 'navigation_robot', '', 'manager', 103.0, hcw_id='90')
    assert nav.approved
    _, esc_id, _ = core.request_escalation(nav.task_id, 'stuck', ['retry'], 104.0)
    assert esc_id == 'esc-1'
    store.close()
    again = EscalationStore(tmp_path / 'escalations.sqlite')
    desk2, core2, _, _, _ = make_desk(tmp_path, store=again)
    assert sorted(desk2.restore(600.0)) == ['esc-1', 'patient-1']
    assert [e.escalation_id for e in core2.policy.snapshot().escalations] == ['esc-1']
    core2.on_patient_arrival('P-1', 601.0)
    core2.on_patient_arrival('P-2', 601.0, room='ER-3', esi_level=2)   # the latched cue again: the same one
    assert [r.escalation_id for r in desk2.records() if r.kind.value == 'patient'] == ['patient-1']
