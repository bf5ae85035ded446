"""FHIR notifications in: an emergency Encounter becomes a patient's arrival or the end of their case (no rclpy).

:func:`parse_notification` reads an HTTP body with ``fhir.resources`` (8.x, pydantic v2): a FHIR R5
``subscription-notification`` Bundle (https://hl7.org/fhir/R5/subscription.html#notifications:
entry 0 is the ``SubscriptionStatus``, then the focus resources of a ``full-resource`` payload and
what the topic's ``notificationShape`` includes), an R4/R4B ``history`` Bundle of the Subscriptions
R5 Backport IG 1.1.0 (https://hl7.org/fhir/uv/subscriptions-backport/notifications.html: entry 0
is a ``Parameters`` (R4) or ``SubscriptionStatus`` (R4B), read with ``fhir.resources.R4B``), or a
bare ``Encounter`` (handy for ``curl``). :func:`map_encounter` maps one Encounter to an
:class:`EncounterChange` against the floor's rooms and the staff directory.

The mapping (each value from a standard coding; the source is named):

- **Emergency**: ``Encounter.class`` has v3 ActCode ``EMER``
  (http://terminology.hl7.org/CodeSystem/v3-ActCode; R5 binds Encounter.class to ValueSet
  encounter-class, R4/R4B to v3-ActEncounterCode).
- **Status** (https://hl7.org/fhir/R5/valueset-encounter-status.html, R4's
  https://hl7.org/fhir/R4/valueset-encounter-status.html): ``arrived``, ``triaged`` (R4/R4B) and
  ``in-progress`` open the case; ``finished`` (R4/R4B), ``completed`` and ``discharged`` (R5)
  end it as *finished*; ``cancelled``, ``entered-in-error`` and ``discontinued`` (R5) end it as
  *cancelled*; ``planned``, ``on-hold``, ``onleave`` and ``unknown`` change nothing yet.
- **Patient** (the case's ID): ``Encounter.subject``, a Patient: its logical identifier
  (``Reference.identifier.value``), else the ID of its literal reference (``Patient/<id>``).
- **Room**: ``Encounter.location`` (the ``active`` one, else the last listed): the reference's
  ``display``, its ``identifier.value``, or the referenced Location's ``name`` (contained or in
  the Bundle), matched to the floor description's room names (case-insensitive).
- **Assigned HCW**: the participant typed ``ATND`` (attender), else ``PPRF`` (primary performer),
  else the only practitioner participant (v3 ParticipationType,
  http://terminology.hl7.org/CodeSystem/v3-ParticipationType); its actor (R4: ``individual``) is a
  Practitioner or PractitionerRole whose identifier (the reference's logical identifier, or the
  referenced resource's ``identifier``) is the directory's ``hcw_id``.
- **Required specialty**: the referenced PractitionerRole's ``code``, else the Practitioner's
  ``qualification.code``: SNOMED CT occupations (http://snomed.info/sct ``309343006``
  Physician, ``224535009`` Registered nurse, ``106292003`` Professional nurse) or the HL7
  practitioner-role CodeSystem (http://terminology.hl7.org/CodeSystem/practitioner-role
  ``doctor``, ``nurse``), else a coding's display or the concept's text naming a directory
  specialty; none given: the assigned HCW's specialty in the directory.
- **ESI level**: LOINC 75636-1 "Emergency severity index [ESI]" answer list LL3056-0 (ESI v4;
  https://loinc.org/LL3056-0): ``LA21567-5`` ESI-1, ``LA21752-3`` ESI-2, ``LA21753-1`` ESI-3,
  ``LA21754-9`` ESI-4, ``LA21755-6`` ESI-5, as ``Encounter.priority``'s coding or as the
  ``valueCodeableConcept`` of an Observation coded 75636-1 (contained in the Encounter, or in the
  Bundle with ``encounter`` referring to it: a topic's ``revInclude`` of ``Observation:encounter``);
  none: 0 (not triaged).
- **Presentation**: the reasons' text (R5 ``reason.value.concept``, R4 ``reasonCode``), else
  their codings' display.

Bad input raises :class:`InputProblem`: an HTTP status, a FHIR issue type
(https://hl7.org/fhir/R5/valueset-issue-type.html), the FHIRPath of the field and what was expected.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

from fhir.resources import get_fhir_model_class as r5_model
from fhir.resources.R4B import get_fhir_model_class as r4b_model
from pydantic import ValidationError

from robot_team.contracts.config import PatientSpec

LOINC = 'http://loinc.org'
ESI_LOINC = '75636-1'
"""LOINC "Emergency severity index [ESI]" (LOINC 2.78)."""
ESI_ANSWERS = {'LA21567-5': 1, 'LA21752-3': 2, 'LA21753-1': 3, 'LA21754-9': 4, 'LA21755-6': 5}
"""LOINC answer list LL3056-0 (ESI v4): answer code -> ESI level (1 most urgent)."""
ACT_CODE = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'
EMERGENCY = 'EMER'
PARTICIPATION_TYPE = 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType'
ASSIGNED_TYPES = ('ATND', 'PPRF')
"""Participation types that name the assigned HCW, in order of preference (attender, primary performer)."""
SNOMED = 'http://snomed.info/sct'
PRACTITIONER_ROLE = 'http://terminology.hl7.org/CodeSystem/practitioner-role'
OCCUPATIONS = {(SNOMED, '309343006'): 'Physician', (SNOMED, '224535009'): 'Nurse', (SNOMED, '106292003'): 'Nurse',
               (PRACTITIONER_ROLE, 'doctor'): 'Physician', (PRACTITIONER_ROLE, 'nurse'): 'Nurse'}
"""Codings of a PractitionerRole's ``code`` or a Practitioner's qualification -> the directory's specialty."""

OPENS = frozenset({'arrived', 'triaged', 'in-progress'})
FINISHES = frozenset({'finished', 'completed', 'discharged'})
CANCELS = frozenset({'cancelled', 'entered-in-error', 'discontinued'})
NOT_YET = frozenset({'planned', 'on-hold', 'onleave', 'unknown'})
"""Encounter statuses (R4/R4B and R5 together) by what they do to the case."""

NOTIFICATION_TYPES = ('handshake', 'heartbeat', 'event-notification', 'query-status', 'query-event')
"""SubscriptionStatus.type (R5 ValueSet subscription-notification-type)."""

Change = Literal['arrival', 'finished', 'cancelled', 'not_yet']


class InputProblem(ValueError):
    """A notification the gateway cannot use: the HTTP answer's status and one OperationOutcome issue.

    Attributes
    ----------
    status
        HTTP status (400 unreadable, 422 readable but unusable, 415 not FHIR JSON...).
    code
        FHIR issue type, e.g. ``'structure'``, ``'required'``, ``'value'``, ``'not-found'``.
    expression
        FHIRPath of the field, e.g. ``'Encounter.location'`` ('' for the whole body).
    expected
        What was expected there, for people.
    """

    def __init__(self, status: int, code: str, expression: str, expected: str, found: str = ''):
        self.status, self.code, self.expression, self.expected, self.found = status, code, expression, expected, found
        super().__init__(f'{expression or "body"}: expected {expected}' + (f'; got {found}' if found else ''))


@dataclass
class Notification:
    """A parsed notification: its kind and the resources it carries (``fhir.resources`` models).

    ``kind``: ``'subscription-notification'`` (R5), ``'history'`` (R4/R4B backport) or
    ``'encounter'`` (a bare Encounter); ``status_type``: the SubscriptionStatus ``type``
    (:data:`NOTIFICATION_TYPES`; ``'event-notification'`` for a bare Encounter);
    ``subscription``: the Subscription's reference ('' unknown); ``encounters``: the Encounters
    carried, with their ``fullUrl`` ('' none); ``resources``: every resource of the Bundle by
    ``fullUrl`` and by ``<type>/<id>`` (to resolve references).
    """

    kind: str
    version: Literal['R5', 'R4B']
    status_type: str
    subscription: str = ''
    encounters: list[tuple[str, Any]] = field(default_factory=list)
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EncounterChange:
    """What one Encounter means for the team.

    ``reference`` is ``Encounter/<id>``; ``status`` the Encounter's as sent; ``change`` one of
    ``'arrival'`` (``arrival`` is the patient to serve), ``'finished'``, ``'cancelled'`` (end
    ``patient_id``'s case) or ``'not_yet'`` (nothing to do now).
    """

    reference: str
    status: str
    change: Change
    patient_id: str
    arrival: PatientSpec | None = None


# --- parsing ---------------------------------------------------------------------------------

def parse_notification(body: bytes) -> Notification:
    """Parse an HTTP body (FHIR JSON) with ``fhir.resources``; return the :class:`Notification`.

    Raises
    ------
    InputProblem
        400 for a body that is not JSON or does not validate as its FHIR resource (the first
        validation error's field is named); 422 for a resource that is neither a Bundle nor an
        Encounter, a Bundle of another type, or a notification Bundle without its status first.
    """
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputProblem(400, 'structure', '', 'a FHIR resource in JSON (application/fhir+json)',
                           f'unreadable JSON ({exc})') from None
    if not isinstance(data, dict) or not isinstance(data.get('resourceType'), str):
        raise InputProblem(400, 'structure', 'resourceType', 'a JSON object with a resourceType')
    kind = data['resourceType']
    if kind == 'Encounter':
        encounter = _validate('R5', 'Encounter', data)
        reference = f'Encounter/{encounter.id}' if encounter.id else ''
        return Notification(kind='encounter', version='R5', status_type='event-notification',
                            encounters=[(reference, encounter)],
                            resources={reference: encounter} if reference else {})
    if kind != 'Bundle':
        raise InputProblem(422, 'not-supported', 'resourceType',
                           'a subscription-notification Bundle (R5), a history Bundle (R4/R4B backport) or an '
                           'Encounter', kind)
    version = 'R4B' if data.get('type') == 'history' else 'R5'
    bundle = _validate(version, 'Bundle', data)
    if bundle.type not in ('subscription-notification', 'history'):
        raise InputProblem(422, 'not-supported', 'Bundle.type', "'subscription-notification' (R5) or 'history' "
                           '(R4/R4B Subscriptions Backport)', str(bundle.type))
    entries = bundle.entry or []
    if not entries or entries[0].resource is None:
        raise InputProblem(422, 'required', 'Bundle.entry[0].resource',
                           'the notification status first (SubscriptionStatus, or Parameters in R4)')
    status_type, subscription = _status(entries[0].resource)
    note = Notification(kind=bundle.type, version=version, status_type=status_type, subscription=subscription)
    for index, entry in enumerate(entries[1:], 1):
        resource = entry.resource
        if resource is None:   # id-only payloads: nothing to read here
            continue
        rtype = resource.get_resource_type()
        for key in filter(None, (entry.fullUrl, f'{rtype}/{resource.id}' if resource.id else '')):
            note.resources[str(key)] = resource
        if rtype == 'Encounter':
            note.encounters.append((str(entry.fullUrl or ''), resource))
    return note


def _validate(version: str, resource_type: str, data: dict):
    """Validate ``data`` as ``resource_type`` of FHIR ``version`` ('R5' or 'R4B'); raise InputProblem (400)."""
    model = r5_model if version == 'R5' else r4b_model
    try:
        return model(resource_type).model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = '.'.join(str(p) for p in (resource_type, *error['loc']))
        raise InputProblem(400, 'structure', where, f'a valid FHIR {version} {resource_type}',
                           f"{error['msg']} ({len(exc.errors())} error(s))") from None


def _status(resource) -> tuple[str, str]:
    """Return (notification type, subscription reference) from a notification's status resource."""
    rtype = resource.get_resource_type()
    if rtype == 'SubscriptionStatus':
        kind = str(resource.type or '')
        subscription = resource.subscription.reference if resource.subscription else ''
    elif rtype == 'Parameters':   # R4 backport: BackportSubscriptionStatusR4
        params = {p.name: p for p in resource.parameter or []}
        kind = str(params['type'].valueCode) if 'type' in params and params['type'].valueCode else ''
        sub = params.get('subscription')
        subscription = sub.valueReference.reference if sub is not None and sub.valueReference else ''
    else:
        raise InputProblem(422, 'not-supported', 'Bundle.entry[0].resource',
                           'the notification status (SubscriptionStatus, or Parameters in R4)', rtype)
    if kind not in NOTIFICATION_TYPES:
        raise InputProblem(422, 'code-invalid', f'{rtype}.type', f"one of {', '.join(NOTIFICATION_TYPES)}",
                           repr(kind))
    return kind, str(subscription or '')


# --- mapping ---------------------------------------------------------------------------------

def map_encounter(encounter, note: Notification, rooms: Iterable[str], staff: Mapping[str, str], *,
                  hcw_system: str = '') -> EncounterChange:
    """Map one Encounter of ``note`` to an :class:`EncounterChange` (see the module's mapping).

    ``rooms``: the floor's room names; ``staff``: the directory's ``hcw_id`` -> specialty;
    ``hcw_system``: the identifier system of HCW numbers ('' any system: a value that is an
    ``hcw_id``).

    Raises
    ------
    InputProblem
        422 naming the field: no ID, not an emergency Encounter (``Encounter.class``), an unknown
        status, no Patient subject; for an arrival also an unknown or missing room, no assigned
        HCW or one not in the directory, a specialty not in the directory, conflicting ESI levels.
    """
    if not encounter.id:
        raise InputProblem(422, 'required', 'Encounter.id', "the Encounter's logical id (it names the case)")
    reference = f'Encounter/{encounter.id}'
    classes = encounter.class_fhir if isinstance(encounter.class_fhir, list) else [encounter.class_fhir]
    codings = [c for concept in classes if concept is not None
               for c in (concept.coding or [] if hasattr(concept, 'coding') else [concept])]
    if not any(c.system == ACT_CODE and c.code == EMERGENCY for c in codings):
        found = ', '.join(f'{c.system}|{c.code}' for c in codings) or 'none'
        raise InputProblem(422, 'value', 'Encounter.class', f'{ACT_CODE}|{EMERGENCY} (an emergency encounter)', found)
    status = str(encounter.status or '')
    patient_id = _patient_id(encounter)
    if status in FINISHES or status in CANCELS:
        return EncounterChange(reference, status, 'finished' if status in FINISHES else 'cancelled', patient_id)
    if status in NOT_YET:
        return EncounterChange(reference, status, 'not_yet', patient_id)
    if status not in OPENS:
        raise InputProblem(422, 'code-invalid', 'Encounter.status',
                           'arrived, triaged or in-progress (opens); finished, completed, discharged, cancelled, '
                           'entered-in-error or discontinued (ends)', repr(status))
    room = _room(encounter, note, rooms)
    hcw_id, specialty = _assigned(encounter, note, staff, hcw_system)
    try:
        arrival = PatientSpec(patient_id=patient_id, room=room, presentation=_presentation(encounter),
                              esi_level=_esi(encounter, note, reference), assigned_hcw_id=hcw_id,
                              required_specialty=specialty, arrival_time_s=0.0)
    except ValidationError as exc:   # every field was checked above: a guard, named all the same
        raise InputProblem(422, 'invalid', 'Encounter', 'an arrival the team can serve', str(exc)) from None
    return EncounterChange(reference, status, 'arrival', patient_id, arrival)


def _patient_id(encounter) -> str:
    subject = encounter.subject
    if subject is None:
        raise InputProblem(422, 'required', 'Encounter.subject', 'the Patient (it names the case)')
    if subject.identifier is not None and subject.identifier.value:
        return str(subject.identifier.value).strip()
    ref = str(subject.reference or '')
    kind, _, ident = ref.rstrip('/').rpartition('/')
    if kind.rpartition('/')[2] != 'Patient' or not ident:
        raise InputProblem(422, 'value', 'Encounter.subject',
                           'a Patient reference (Patient/<id>) or a logical identifier', repr(ref))
    return ident


def _resolve(ref, encounter, note: Notification):
    """Return the resource a Reference points at: contained (``#id``) or in the Bundle; None if neither."""
    target = str(getattr(ref, 'reference', '') or '')
    if not target:
        return None
    if target.startswith('#'):
        return next((r for r in encounter.contained or [] if r.id == target[1:]), None)
    if target in note.resources:
        return note.resources[target]
    short = '/'.join(target.rstrip('/').split('/')[-2:])   # an absolute URL: its last type/id
    return note.resources.get(short)


def _room(encounter, note: Notification, rooms: Iterable[str]) -> str:
    places = [loc for loc in encounter.location or [] if loc.location is not None]
    if not places:
        raise InputProblem(422, 'required', 'Encounter.location', 'the room the patient is in (a Location)')
    active = [loc for loc in places if loc.status == 'active']
    ref = (active or places)[-1].location
    names = [ref.display, ref.identifier.value if ref.identifier is not None else None]
    resolved = _resolve(ref, encounter, note)
    if resolved is not None and resolved.get_resource_type() == 'Location':
        names.append(resolved.name)
    by_name = {r.casefold(): r for r in rooms}
    for name in filter(None, names):
        if str(name).strip().casefold() in by_name:
            return by_name[str(name).strip().casefold()]
    raise InputProblem(422, 'not-found', 'Encounter.location',
                       f"a room of the floor ({', '.join(sorted(by_name.values()))})",
                       ', '.join(repr(str(n)) for n in filter(None, names)) or 'a location with no name')


def _actor(participant):
    """Return a participant's actor Reference (R5 ``actor``, R4/R4B ``individual``)."""
    return getattr(participant, 'actor', None) or getattr(participant, 'individual', None)


def _kind(ref, target) -> str:
    """Return the resource type a Reference points at (a bare logical identifier: Practitioner)."""
    if target is not None:
        return target.get_resource_type()
    if ref.type:
        return str(ref.type)
    parts = str(ref.reference or '').rstrip('/').split('/')
    if len(parts) >= 2:
        return parts[-2]
    return 'Practitioner' if ref.identifier is not None else ''


def _assigned(encounter, note: Notification, staff: Mapping[str, str], hcw_system: str) -> tuple[str, str]:
    practitioners = []
    for participant in encounter.participant or []:
        ref = _actor(participant)
        if ref is None:
            continue
        target = _resolve(ref, encounter, note)
        if _kind(ref, target) not in ('Practitioner', 'PractitionerRole'):
            continue
        types = {c.code for t in participant.type or [] for c in t.coding or [] if c.system == PARTICIPATION_TYPE}
        practitioners.append((types, ref, target))
    if not practitioners:
        raise InputProblem(422, 'required', 'Encounter.participant',
                           'the assigned HCW: a participant whose actor is a Practitioner or PractitionerRole')
    chosen = practitioners
    for wanted in ASSIGNED_TYPES:
        typed = [p for p in practitioners if wanted in p[0]]
        if typed:
            chosen = typed
            break
    found = {_hcw_id(ref, target, encounter, note, staff, hcw_system) for _, ref, target in chosen}
    known = {h for h in found if h in staff}
    if len(known) > 1:
        raise InputProblem(422, 'multiple-matches', 'Encounter.participant',
                           f"one assigned HCW (type {' or '.join(ASSIGNED_TYPES)})", ', '.join(sorted(known)))
    if not known:
        raise InputProblem(422, 'not-found', 'Encounter.participant.actor',
                           'a Practitioner identifier that is an hcw_id of the staff directory'
                           + (f' (system {hcw_system})' if hcw_system else ''),
                           ', '.join(sorted(h for h in found if h)) or 'no identifier')
    hcw_id = known.pop()
    target = next(t for _, r, t in chosen if _hcw_id(r, t, encounter, note, staff, hcw_system) == hcw_id)
    specialty = _specialty(target, encounter, note, set(staff.values())) or staff[hcw_id]
    return hcw_id, specialty


def _identifiers(ref, target, encounter, note: Notification) -> list:
    ids = [ref.identifier] if ref.identifier is not None else []
    if target is not None:
        ids += list(getattr(target, 'identifier', None) or [])
        if target.get_resource_type() == 'PractitionerRole' and target.practitioner is not None:
            ids += [target.practitioner.identifier] if target.practitioner.identifier is not None else []
            person = _resolve(target.practitioner, encounter, note)
            ids += list(getattr(person, 'identifier', None) or []) if person is not None else []
    return ids


def _hcw_id(ref, target, encounter, note: Notification, staff: Mapping[str, str], hcw_system: str) -> str:
    """Return the participant's identifier that is an ``hcw_id`` (else the first one given; '' none)."""
    values = [str(i.value).strip() for i in _identifiers(ref, target, encounter, note)
              if i.value and (not hcw_system or i.system == hcw_system)]
    return next((v for v in values if v in staff), values[0] if values else '')


def _specialty(target, encounter, note: Notification, specialties: set[str]) -> str:
    """Return the specialty a PractitionerRole's code or a Practitioner's qualification names ('' none given).

    Raises
    ------
    InputProblem
        422 if one is given but names no specialty of the directory.
    """
    concepts, where = [], ''
    if target is not None and target.get_resource_type() == 'PractitionerRole':
        concepts, where = list(target.code or []), 'PractitionerRole.code'
        if not concepts and target.practitioner is not None:
            target = _resolve(target.practitioner, encounter, note)
    if not concepts and target is not None and target.get_resource_type() == 'Practitioner':
        concepts = [q.code for q in target.qualification or [] if q.code is not None]
        where = 'Practitioner.qualification.code'
    if not concepts:
        return ''
    by_name = {s.casefold(): s for s in specialties}
    for concept in concepts:
        for coding in concept.coding or []:
            mapped = OCCUPATIONS.get((coding.system, coding.code))
            if mapped and mapped.casefold() in by_name:
                return by_name[mapped.casefold()]
        for text in [concept.text, *(c.display for c in concept.coding or [])]:
            if text and str(text).strip().casefold() in by_name:
                return by_name[str(text).strip().casefold()]
    raise InputProblem(422, 'code-invalid', where,
                       f"a specialty of the staff directory ({', '.join(sorted(specialties))}) as a SNOMED CT "
                       'occupation, a practitioner-role code or text',
                       '; '.join(concept.text or ', '.join(f'{c.system}|{c.code}' for c in concept.coding or [])
                                 for concept in concepts))


def _esi_of(concept) -> set[int]:
    return {ESI_ANSWERS[c.code] for c in (concept.coding or []) if c.system == LOINC and c.code in ESI_ANSWERS}


def _esi(encounter, note: Notification, reference: str) -> int:
    levels = _esi_of(encounter.priority) if encounter.priority is not None else set()
    observations = [r for r in encounter.contained or [] if r.get_resource_type() == 'Observation']
    observations += [r for r in note.resources.values() if r.get_resource_type() == 'Observation'
                     and r.encounter is not None and str(r.encounter.reference or '').endswith(reference)]
    for obs in {id(o): o for o in observations}.values():
        coded = any(c.system == LOINC and c.code == ESI_LOINC for c in obs.code.coding or [])
        if coded and obs.status not in ('cancelled', 'entered-in-error') and obs.valueCodeableConcept is not None:
            levels |= _esi_of(obs.valueCodeableConcept)
    if len(levels) > 1:
        raise InputProblem(422, 'business-rule', 'Encounter.priority', f'one ESI level (LOINC {ESI_LOINC} answers '
                           'of LL3056-0)', ', '.join(map(str, sorted(levels))))
    return levels.pop() if levels else 0


def _presentation(encounter) -> str:
    concepts = [v.concept for r in getattr(encounter, 'reason', None) or [] for v in r.value or []
                if v.concept is not None]
    concepts += list(getattr(encounter, 'reasonCode', None) or [])
    texts = [c.text or ', '.join(filter(None, (x.display for x in c.coding or []))) for c in concepts]
    return '; '.join(t for t in texts if t)
