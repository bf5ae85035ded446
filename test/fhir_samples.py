"""FHIR test resources built with ``fhir.resources`` (R5, and R4B for the backport), and a gateway client."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

from fhir.resources.bundle import Bundle
from fhir.resources.encounter import Encounter
from fhir.resources.R4B.bundle import Bundle as BundleR4B
from fhir.resources.operationoutcome import OperationOutcome

ACT_CODE = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'
PARTICIPATION = 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType'
LOINC = 'http://loinc.org'
ESI = {1: 'LA21567-5', 2: 'LA21752-3', 3: 'LA21753-1', 4: 'LA21754-9', 5: 'LA21755-6'}
HCW_SYSTEM = 'urn:example:hospital:hcw-id'


def encounter(enc_id: str = 'enc-1', *, patient: str = 'P-0777', status: str = 'arrived', room: str | None = 'ER-12',
              hcw: str | None = '90', esi: int | None = 2, klass: str = 'EMER', reason: str = 'chest pain',
              participant_type: str | None = 'ATND', room_as: str = 'display', hcw_as: str = 'identifier',
              role_code: tuple[str, str] | None = None) -> Encounter:
    """Return an R5 Encounter (validated by ``fhir.resources``); None drops a field."""
    data: dict = {'resourceType': 'Encounter', 'id': enc_id, 'status': status,
                  'class': [{'coding': [{'system': ACT_CODE, 'code': klass}]}],
                  'subject': {'reference': f'Patient/{patient}'}}
    if reason:
        data['reason'] = [{'value': [{'concept': {'text': reason}}]}]
    if esi is not None:
        data['priority'] = {'coding': [{'system': LOINC, 'code': ESI[esi]}]}
    contained = []
    if room is not None:
        if room_as == 'display':
            data['location'] = [{'location': {'display': room}, 'status': 'active'}]
        else:   # a contained Location
            contained.append({'resourceType': 'Location', 'id': 'loc', 'name': room})
            data['location'] = [{'location': {'reference': '#loc'}}]
    if hcw is not None:
        if hcw_as == 'identifier':
            actor = {'type': 'Practitioner', 'identifier': {'system': HCW_SYSTEM, 'value': hcw}}
        else:   # a contained PractitionerRole with its code
            role = {'resourceType': 'PractitionerRole', 'id': 'role',
                    'identifier': [{'system': HCW_SYSTEM, 'value': hcw}]}
            if role_code:
                role['code'] = [{'coding': [{'system': role_code[0], 'code': role_code[1]}]}]
            contained.append(role)
            actor = {'reference': '#role'}
        part = {'actor': actor}
        if participant_type:
            part['type'] = [{'coding': [{'system': PARTICIPATION, 'code': participant_type}]}]
        data['participant'] = [part]
    if contained:
        data['contained'] = contained
    return Encounter.model_validate(data)


def notification(*encounters: Encounter, kind: str = 'event-notification', events: int = 1) -> bytes:
    """Return an R5 subscription-notification Bundle (full-resource) carrying ``encounters``, as JSON bytes."""
    status = {'resourceType': 'SubscriptionStatus', 'status': 'active', 'type': kind,
              'eventsSinceSubscriptionStart': str(events),
              'subscription': {'reference': 'https://ehr.example/fhir/Subscription/ed-arrivals'},
              'topic': 'http://hospital.example/SubscriptionTopic/ed-encounters'}
    if kind == 'event-notification':
        status['notificationEvent'] = [{'eventNumber': str(events),
                                        'focus': {'reference': f'Encounter/{e.id}'}} for e in encounters]
    entries = [{'fullUrl': 'urn:uuid:3e2d1c7a-0000-4000-8000-000000000001', 'resource': status}]
    entries += [{'fullUrl': f'https://ehr.example/fhir/Encounter/{e.id}', 'resource': e.model_dump(mode='json')}
                for e in encounters]
    bundle = Bundle.model_validate({'resourceType': 'Bundle', 'type': 'subscription-notification', 'entry': entries})
    return bundle.model_dump_json().encode()


def backport_history(enc: dict, kind: str = 'event-notification') -> bytes:
    """Return an R4 Subscriptions Backport ``history`` Bundle (Parameters status first) with an R4B Encounter dict."""
    params = {'resourceType': 'Parameters', 'parameter': [
        {'name': 'subscription', 'valueReference': {'reference': 'https://ehr.example/fhir/Subscription/ed'}},
        {'name': 'topic', 'valueCanonical': 'http://hospital.example/SubscriptionTopic/ed-encounters'},
        {'name': 'status', 'valueCode': 'active'}, {'name': 'type', 'valueCode': kind},
        {'name': 'events-since-subscription-start', 'valueString': '1'}]}
    entries = [{'fullUrl': 'urn:uuid:9a8b7c6d-0000-4000-8000-000000000002', 'resource': params,
                'request': {'method': 'GET', 'url': 'https://ehr.example/fhir/Subscription/ed/$status'},
                'response': {'status': '200'}}]
    if enc:
        entries.append({'fullUrl': f"https://ehr.example/fhir/Encounter/{enc['id']}", 'resource': enc,
                        'request': {'method': 'PUT', 'url': f"Encounter/{enc['id']}"},
                        'response': {'status': '200'}})
    return BundleR4B.model_validate({'resourceType': 'Bundle', 'type': 'history', 'entry': entries}
                                    ).model_dump_json().encode()


def r4b_encounter(enc_id: str = 'enc-r4', *, status: str = 'triaged', room: str = 'ER-12', hcw: str = '90') -> dict:
    """Return an R4B Encounter as a dict (class is one Coding; participants name an ``individual``)."""
    return {'resourceType': 'Encounter', 'id': enc_id, 'status': status,
            'class': {'system': ACT_CODE, 'code': 'EMER'}, 'subject': {'reference': 'Patient/P-0900'},
            'priority': {'coding': [{'system': LOINC, 'code': ESI[3]}]},
            'reasonCode': [{'text': 'shortness of breath'}],
            'participant': [{'type': [{'coding': [{'system': PARTICIPATION, 'code': 'ATND'}]}],
                             'individual': {'identifier': {'system': HCW_SYSTEM, 'value': hcw}}}],
            'location': [{'location': {'display': room}, 'status': 'active'}]}


def free_port() -> int:
    """Return a TCP port free on loopback now (for a gateway to bind)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something accepts connections on loopback ``port`` (the gateway is up)."""
    with socket.socket() as sock:
        return sock.connect_ex(('127.0.0.1', port)) == 0


def post(port: int, body: bytes, timeout_s: float = 10.0) -> tuple[int, dict]:
    """POST ``body`` as FHIR JSON to the gateway on ``port``; return the status and the OperationOutcome's issue."""
    request = urllib.request.Request(f'http://127.0.0.1:{port}/fhir', body, method='POST',
                                     headers={'Content-Type': 'application/fhir+json'})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            status, raw = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    return status, OperationOutcome.model_validate_json(raw).issue[0].model_dump(mode='json')
