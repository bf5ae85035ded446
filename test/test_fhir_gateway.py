"""The FHIR gateway's logic without ROS (issue 28): parsing, mapping, who may send, the HTTP answers.

Resources are built and serialized with ``fhir.resources`` (test/fhir_samples.py); every answer is
read back as an ``OperationOutcome`` with ``fhir.resources``; the HTTP tests use a real client
(``urllib``) against the real server on loopback. The mapping runs over many seeded variants.
"""

import json
import random
import urllib.error
import urllib.request

import pytest
from fhir.resources.operationoutcome import OperationOutcome

from fhir_samples import HCW_SYSTEM, backport_history, encounter, notification, r4b_encounter
from robot_team.fhir.encounters import InputProblem, map_encounter, parse_notification
from robot_team.fhir.gateway import (
    TOKEN_ENV, CloseAnswer, FhirGateway, GatewayConfigError, GatewaySettings, check_binding, is_loopback)
from robot_team.fhir.server import GatewayServer

ROOMS = ['ER-3', 'ER-7', 'ER-12', 'Triage']
STAFF = {'80': 'Physician', '90': 'Physician', '41': 'Nurse', '55': 'Technician'}
FHIR = {'content-type': 'application/fhir+json'}


class Ports:
    """The ROS side, recorded."""

    def __init__(self):
        self.arrivals, self.closes = [], []

    def publish_arrival(self, patient, reference):
        self.arrivals.append((patient, reference))

    def close_case(self, patient_id, status, reference, requested_by, timeout_s):
        self.closes.append((patient_id, status, reference, requested_by))
        return CloseAnswer(True, 'closed', f'case {patient_id} closed', 'P/esc-1')


def gateway(token=None, host='127.0.0.1'):
    events = []
    ports = Ports()
    gate = FhirGateway(GatewaySettings(host=host, port=0, hcw_system=HCW_SYSTEM), ROOMS, STAFF, ports,
                       lambda kind, summary, **data: events.append((kind.value, summary, data)), token)
    return gate, ports, events


def issue(body: bytes) -> dict:
    """Read an answer as an OperationOutcome (fhir.resources) and return its only issue as a dict."""
    out = OperationOutcome.model_validate_json(body)
    assert len(out.issue) == 1
    return out.issue[0].model_dump(mode='json')


def test_seeded_variants_map_or_name_the_field():
    """200 seeded variants: each either maps to the arrival it describes or is refused naming its field."""
    rng = random.Random(28)
    for _ in range(200):
        room = rng.choice([*ROOMS, 'er-12', 'ICU-9', None])
        hcw = rng.choice([*STAFF, '99', None])
        klass = rng.choice(['EMER'] * 4 + ['AMB', 'IMP'])
        esi = rng.choice([None, 1, 2, 3, 4, 5])
        status = rng.choice(['arrived', 'triaged', 'in-progress', 'planned', 'finished', 'cancelled', 'bogus'])
        kwargs = dict(room=room, hcw=hcw, klass=klass, esi=esi, status=status,
                      room_as=rng.choice(['display', 'contained']), hcw_as=rng.choice(['identifier', 'role']),
                      participant_type=rng.choice(['ATND', 'PPRF', None]))
        note = parse_notification(notification(encounter(**kwargs)))
        [(full_url, enc)] = note.encounters
        assert full_url.endswith('/Encounter/enc-1')
        expected_field = ('Encounter.class' if klass != 'EMER' else
                          '' if status in ('planned', 'finished', 'cancelled') else
                          'Encounter.status' if status == 'bogus' else
                          'Encounter.location' if room in (None, 'ICU-9') else
                          'Encounter.participant' if hcw is None else
                          'Encounter.participant.actor' if hcw == '99' else '')
        if expected_field:
            with pytest.raises(InputProblem) as info:
                map_encounter(enc, note, ROOMS, STAFF, hcw_system=HCW_SYSTEM)
            assert info.value.status == 422 and info.value.expression == expected_field, kwargs
            continue
        change = map_encounter(enc, note, ROOMS, STAFF, hcw_system=HCW_SYSTEM)
        assert change.reference == 'Encounter/enc-1' and change.patient_id == 'P-0777'
        if status in ('finished', 'cancelled', 'planned'):
            assert change.change == {'planned': 'not_yet'}.get(status, status) and change.arrival is None
            continue
        arrival = change.arrival
        assert change.change == 'arrival' and arrival.room == {'er-12': 'ER-12'}.get(room, room)
        assert arrival.assigned_hcw_id == hcw and arrival.esi_level == (esi or 0)
        assert arrival.required_specialty == STAFF[hcw] and arrival.presentation == 'chest pain'


def test_specialty_from_a_practitioner_role_code_and_esi_from_an_observation():
    snomed_nurse = ('http://snomed.info/sct', '224535009')
    enc = encounter(hcw='90', hcw_as='role', role_code=snomed_nurse, esi=None)   # a physician coded as a nurse
    note = parse_notification(notification(enc))
    assert map_encounter(enc, note, ROOMS, STAFF, hcw_system=HCW_SYSTEM).arrival.required_specialty == 'Nurse'
    odd = encounter(hcw='90', hcw_as='role', role_code=('http://snomed.info/sct', '0000'))
    with pytest.raises(InputProblem, match='PractitionerRole.code'):
        map_encounter(odd, parse_notification(notification(odd)), ROOMS, STAFF, hcw_system=HCW_SYSTEM)
    # ESI as an Observation (LOINC 75636-1) in the Bundle, referring to the Encounter (a topic's revInclude)
    bundle = json.loads(notification(encounter(esi=None)))
    bundle['entry'].append({'fullUrl': 'https://ehr.example/fhir/Observation/esi-1', 'resource': {
        'resourceType': 'Observation', 'id': 'esi-1', 'status': 'final',
        'code': {'coding': [{'system': 'http://loinc.org', 'code': '75636-1'}]},
        'encounter': {'reference': 'Encounter/enc-1'},
        'valueCodeableConcept': {'coding': [{'system': 'http://loinc.org', 'code': 'LA21567-5'}]}}})
    note = parse_notification(json.dumps(bundle).encode())
    assert map_encounter(note.encounters[0][1], note, ROOMS, STAFF).arrival.esi_level == 1
    bundle['entry'][1]['resource']['priority'] = {'coding': [{'system': 'http://loinc.org', 'code': 'LA21755-6'}]}
    note = parse_notification(json.dumps(bundle).encode())
    with pytest.raises(InputProblem, match='one ESI level'):   # ESI-1 and ESI-5 for one Encounter
        map_encounter(note.encounters[0][1], note, ROOMS, STAFF)


def test_r4_backport_history_bundle_and_status_only_notifications():
    note = parse_notification(backport_history(r4b_encounter()))
    assert note.kind == 'history' and note.version == 'R4B' and note.status_type == 'event-notification'
    change = map_encounter(note.encounters[0][1], note, ROOMS, STAFF, hcw_system=HCW_SYSTEM)
    assert change.arrival.esi_level == 3 and change.arrival.presentation == 'shortness of breath'
    assert parse_notification(backport_history({}, kind='heartbeat')).status_type == 'heartbeat'
    assert parse_notification(notification(kind='handshake')).status_type == 'handshake'


def test_each_bad_input_gets_its_status_an_operation_outcome_and_an_event():
    gate, ports, events = gateway()
    patient = b'{"resourceType": "Patient", "id": "p"}'
    wrong_bundle = b'{"resourceType": "Bundle", "type": "transaction"}'
    invalid = b'{"resourceType": "Encounter", "id": "e", "status": 7}'
    cases = [(b'{not json', 400, 'structure', ''), (patient, 422, 'not-supported', 'resourceType'),
             (wrong_bundle, 422, 'not-supported', 'Bundle.type'), (invalid, 400, 'structure', 'Encounter.status'),
             (notification(encounter(klass='AMB')), 422, 'value', 'Encounter.class'),
             (notification(encounter(room='ICU-9')), 422, 'not-found', 'Encounter.location'),
             (notification(encounter(hcw='99')), 422, 'not-found', 'Encounter.participant.actor'),
             (notification(encounter('ok', patient='P-1'), encounter('bad', patient='P-2', room='X')), 422,
              'not-found', 'Encounter.location')]
    for body, status, code, field in cases:
        reply = gate.handle('POST', '/fhir', FHIR, body, '127.0.0.1')
        found = issue(reply.body)
        assert (reply.status, found['code'], found.get('expression', [''])[0]) == (status, code, field), body[:60]
        assert found['severity'] == 'error' and 'expected' in found['diagnostics']
        kind, _, data = events[-1]
        assert kind == 'input_error' and data['http_status'] == status and data['field'] == field
    assert ports.arrivals == []   # the bad second Encounter opened no case for the good first one
    assert gate.handle('GET', '/fhir', FHIR, b'', '').status == 405
    assert gate.handle('POST', '/other', FHIR, b'{}', '').status == 404
    assert gate.handle('POST', '/fhir', {'content-type': 'text/plain'}, b'{}', '').status == 415


def test_repeats_are_one_case_and_an_end_goes_to_the_supervisor():
    gate, ports, events = gateway()
    for _ in range(3):
        assert gate.handle('POST', '/fhir/', FHIR, notification(encounter()), '127.0.0.1').status == 200
    assert len(ports.arrivals) == 1 and ports.arrivals[0][1] == 'Encounter/enc-1'
    reply = gate.handle('POST', '/fhir', FHIR, notification(encounter(status='cancelled')), '127.0.0.1')
    assert reply.status == 200 and 'closed' in issue(reply.body)['diagnostics']
    assert ports.closes == [('P-0777', 'cancelled', 'Encounter/enc-1', 'ehr')]
    assert [e[2]['encounters'][0]['change'] for e in events if e[0] == 'fhir_notification'] == ['arrival'] * 3 + [
        'cancelled']


def test_binding_rules_and_the_token():
    assert is_loopback('127.0.0.1') and is_loopback('::1') and is_loopback('localhost') and is_loopback('127.0.0.2')
    assert not is_loopback('0.0.0.0') and not is_loopback('10.1.2.3') and not is_loopback('ehr-gw.hospital')
    for host in ('0.0.0.0', '10.1.2.3', '::'):
        with pytest.raises(GatewayConfigError, match=TOKEN_ENV):
            check_binding(host, None)
        with pytest.raises(GatewayConfigError):
            gateway(host=host)
        check_binding(host, 's3cret')
    gate, _, events = gateway(token='s3cret', host='0.0.0.0')   # configured off loopback (never bound here)
    for header in ({}, {'authorization': 'Bearer wrong'}, {'authorization': 'Basic s3cret'}):
        reply = gate.handle('POST', '/fhir', FHIR | header, notification(encounter()), '10.0.0.9')
        assert reply.status == 401 and issue(reply.body)['code'] == 'login'
        assert ('WWW-Authenticate', 'Bearer realm="robot_team"') in reply.headers
    assert all(e[2]['refusal'] == 'unauthenticated' for e in events)
    ok = gate.handle('POST', '/fhir', FHIR | {'authorization': 'Bearer s3cret'}, notification(encounter()), '')
    assert ok.status == 200
    assert 's3cret' not in repr(events)


def test_real_http_client_against_the_server_with_a_token():
    gate, ports, events = gateway(token='tok-28')
    server = GatewayServer(gate).start()
    url = f'http://127.0.0.1:{server.port}/fhir'

    def post(body, token=None):
        headers = {'Content-Type': 'application/fhir+json'} | ({'Authorization': f'Bearer {token}'} if token else {})
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers, method='POST'), timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
    try:
        status, body = post(notification(encounter()))
        assert status == 401 and issue(body)['code'] == 'login'
        status, body = post(notification(encounter()), 'tok-28')
        assert status == 200 and 'sent to the team' in issue(body)['diagnostics']
        status, body = post(b'{', 'tok-28')
        assert status == 400 and issue(body)['code'] == 'structure'
    finally:
        server.stop()
    assert len(ports.arrivals) == 1 and 'tok-28' not in repr(events)


def test_the_deployment_guides_subscription_and_curl_body_are_what_fhir_and_the_gateway_read():
    """docs/deployment.md's Subscription validates with fhir.resources; its curl body opens a case."""
    import re
    from pathlib import Path
    from fhir.resources.subscription import Subscription
    from robot_team.fhir.encounters import map_encounter, parse_notification
    text = (Path(__file__).resolve().parent.parent / 'docs' / 'deployment.md').read_text()
    subscription = re.search(r'```json\n(\{"resourceType": "Subscription".*?)\n```', text, re.S).group(1)
    assert Subscription.model_validate_json(subscription).channelType.code == 'rest-hook'
    body = re.search(r"<<'JSON'\n(.*?)\nJSON\n", text, re.S).group(1)
    note = parse_notification(body.encode())
    ((_, resource),) = note.encounters
    change = map_encounter(resource, note, ['ER-12'], {'80': 'Physician'})
    assert change.change == 'arrival' and (change.arrival.room, change.arrival.assigned_hcw_id,
                                           change.arrival.esi_level) == ('ER-12', '80', 2)


def test_a_respawned_gateway_remembers_the_encounters_it_received(tmp_path):
    """The record is SQLite: a new gateway on the same file opens nothing for an Encounter already received."""
    from robot_team.fhir.gateway import EncounterRecord
    path = tmp_path / 'fhir_gateway.sqlite'
    headers = {'content-type': 'application/fhir+json'}
    body = notification(encounter('enc-r', patient='P-0440', room='ER-12', hcw='80'))
    for attempt in range(2):
        ports = Ports()
        gate = FhirGateway(GatewaySettings(port=0, hcw_system=HCW_SYSTEM), ROOMS, STAFF, ports,
                           lambda kind, summary, **data: None, None, EncounterRecord(path))
        reply = gate.handle('POST', '/fhir', headers, body)
        assert reply.status == 200
        assert len(ports.arrivals) == (1 if attempt == 0 else 0), attempt   # the first gateway only
        gate.record.close()
    other = notification(encounter('enc-s', patient='P-0440', room='ER-12', hcw='80'))   # same patient, new ID
    gate = FhirGateway(GatewaySettings(port=0, hcw_system=HCW_SYSTEM), ROOMS, STAFF, Ports(),
                       lambda kind, summary, **data: None, None, EncounterRecord(path))
    assert b'already has a case' in gate.handle('POST', '/fhir', headers, other).body
    (tmp_path / 'garbage.sqlite').write_text('not a database at all, long enough to be read as a header....')
    with pytest.raises(ValueError, match='garbage.sqlite'):
        EncounterRecord(tmp_path / 'garbage.sqlite')
