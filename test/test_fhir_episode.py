"""FHIR Encounters into a running team (issue 28): one real episode, several checks.

``robot_team.run.episode.run_episode`` runs the whole team in-process (protocol brain, embedded
simulator) with the FHIR gateway on a free loopback port. A real HTTP client (``urllib``) posts
R5 subscription-notification Bundles built and serialized with ``fhir.resources``: an emergency
Encounter opens a case the team serves to success; the same Encounter again is the same case; a
second one, cancelled, is closed through the workflow's rules (an escalation raised and decided
``abort`` by ``ehr``, then the reflection); each kind of bad input gets its OperationOutcome and an
``input_error`` event. The scenario's own patient arrives too late to matter (sim 900 s): the
episode ends once the two FHIR cases are closed.
"""

import threading

import pytest

from fhir_samples import encounter, free_port, notification, post
from robot_team.contracts.config import load_scenario
from robot_team.run.episode import run_episode


def test_encounters_open_serve_repeat_and_cancel_cases_in_a_running_team(tmp_path, domain_id):
    base = load_scenario('all_available')
    scenario = base.model_copy(update={'cases_at_once': 0, 'time_limit_s': 1200.0,
                                       'patient': base.patient.model_copy(update={'arrival_time_s': 900.0})})
    port = free_port()
    events, seen = [], threading.Condition()

    def on_event(event):
        with seen:
            events.append(event)
            seen.notify_all()

    def wait_for(match, timeout_s=30.0):
        with seen:
            assert seen.wait_for(lambda: any(match(e) for e in events), timeout_s), 'event never came'
    result = {}
    runner = threading.Thread(target=lambda: result.update(run=run_episode(
        scenario, tmp_path / 'run', domain_id=domain_id, fhir_port=port, on_event=on_event, log_level='error')))
    runner.start()
    try:
        wait_for(lambda e: e.actor == 'fhir_gateway' and e.kind == 'node_started')
        served = notification(encounter('enc-a', patient='P-0777', room='ER-12', hcw='80', esi=2))
        status, found = post(port, served)
        assert status == 200 and 'sent to the team' in found['diagnostics']
        status, found = post(port, served)   # a subscription's retry: the same case
        assert status == 200 and 'already received' in found['diagnostics']
        wait_for(lambda e: e.kind == 'delegation' and e.data.get('case_id') == 'P-0777')
        status, _ = post(port, notification(encounter('enc-b', patient='P-0778', room='ER-3', hcw='90', esi=4)))
        assert status == 200
        wait_for(lambda e: e.kind == 'case_opened' and e.data.get('case_id') == 'P-0778')
        status, found = post(port, notification(encounter('enc-b', patient='P-0778', room='ER-3', hcw='90',
                                                          status='cancelled')))
        assert status == 200 and 'closed' in found['diagnostics'], found
        bad = {'malformed': (b'{"resourceType": "Bundle", ', 400, ''),
               'not an Encounter': (b'{"resourceType": "Patient", "id": "p"}', 422, 'resourceType'),
               'not emergency': (notification(encounter('enc-c', klass='AMB')), 422, 'Encounter.class'),
               'unknown room': (notification(encounter('enc-d', room='ICU-9')), 422, 'Encounter.location'),
               'unknown HCW': (notification(encounter('enc-e', hcw='99')), 422, 'Encounter.participant.actor')}
        for what, (body, code, field) in bad.items():
            status, found = post(port, body)
            assert (status, found.get('expression', [''])[0]) == (code, field), what
        runner.join(timeout=90)
        assert not runner.is_alive(), 'the episode did not end'
    finally:
        runner.join(timeout=120)
    report, record = result['run'].report, result['run'].events
    cases = {c['patient_id']: c for c in report['cases']}
    assert cases['P-0777']['outcome'] == 'success' and cases['P-0777']['esi_level'] == 2
    assert cases['P-0778']['outcome'] == 'escalated' and cases['P-0778']['ended_by_record'] == 'cancelled'
    assert 'P-0001' not in cases                     # the scenario's patient came after the end
    assert sum(e.kind == 'case_opened' and e.data.get('case_id') == 'P-0777' for e in record) == 1
    ended = [e for e in record if e.kind == 'case_ended_by_record']
    assert [(e.data['case_id'], e.data['result'], e.data['requested_by']) for e in ended] == [
        ('P-0778', 'closed', 'ehr')]
    ehr = [e for e in record if e.kind == 'escalation' and e.data.get('raised_by') == 'ehr']
    assert len(ehr) == 1 and ehr[0].data['patient_id'] == 'P-0778'
    refused = [e for e in record if e.actor == 'fhir_gateway' and e.kind == 'input_error']
    assert sorted(e.data['http_status'] for e in refused) == [400, 422, 422, 422, 422]
    assert sorted(e.data['field'] for e in refused) == sorted(f for _, _, f in bad.values())
    notes = [e for e in record if e.kind == 'fhir_notification']
    assert [n.data['encounters'][0]['change'] for n in notes] == ['arrival', 'arrival', 'arrival', 'cancelled']


if __name__ == '__main__':
    raise SystemExit(pytest.main([__file__, '-q']))
