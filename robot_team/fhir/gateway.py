"""The FHIR gateway's decisions: who may send, what a notification does, and the HTTP answer (no rclpy).

:class:`FhirGateway` takes one HTTP request (method, path, headers, body, client address) and
returns a :class:`Reply` (status, ``OperationOutcome`` JSON built with ``fhir.resources``). The ROS
side is injected (:class:`GatewayPorts`): publish a patient's arrival, end a case at the
supervisor. Every request is recorded through ``emit`` (the node's
:class:`~robot_team.ros.emitter.EventEmitter`): ``fhir_notification`` for one acted on or answered,
``input_error`` for one refused (with ``http_status``, ``field``, ``expected``, ``issue_code``).

Who may send (:func:`check_binding`, :meth:`FhirGateway.authorized`): bound to a loopback address
the endpoint needs no token; bound anywhere else a bearer token (RFC 6750 ``Authorization: Bearer
<token>``, from the environment variable :data:`TOKEN_ENV`) is required, and starting without
one is refused. A token, once set, is required of every request (loopback too). The token is
compared in constant time and never logged, recorded nor echoed.

Repeats are safe: the same Encounter (``Encounter/<id>``) arriving again opens nothing new (a
subscription retries a notification it got no 2xx for); its case is its patient's. What was
received is kept in an :class:`EncounterRecord` (SQLite, in the run folder under launch), so a
respawned gateway still knows it. Every
Encounter of a notification is checked before any is acted on, so a bad one opens no case.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import sqlite3
import threading
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from fhir.resources.operationoutcome import OperationOutcome
from pydantic import BaseModel, Field

from robot_team.contracts.config import PatientSpec
from robot_team.contracts.events import EventKind
from robot_team.fhir.encounters import EncounterChange, InputProblem, map_encounter, parse_notification

TOKEN_ENV = 'ROBOT_TEAM_FHIR_TOKEN'
"""Environment variable holding the bearer token senders must present (required off loopback)."""
FHIR_JSON = 'application/fhir+json'
"""FHIR's JSON MIME type (https://hl7.org/fhir/R5/http.html#mime-type)."""
ACCEPTED_TYPES = (FHIR_JSON, 'application/json')
MAX_BODY_BYTES = 1_000_000
"""Largest notification body read, bytes (a bigger one is answered 413)."""
ACTOR = 'ehr'
"""Who ends a case when an Encounter finishes or is cancelled (the escalation's ``raised_by`` and ``decided_by``)."""


class GatewayConfigError(ValueError):
    """A gateway that must not start (e.g. bound off loopback without a token); the message says what to do."""


class GatewaySettings(BaseModel):
    """Where the endpoint listens and whom it trusts."""

    host: str = Field('127.0.0.1', description='Address to bind (loopback by default).')
    port: int = Field(ge=0, le=65535, description='TCP port (0: any free one, for tests).')
    path: str = Field('/fhir', description='Path notifications are posted to (a trailing ``/<anything>`` too).')
    hcw_system: str = Field('', description="Identifier system of HCW numbers ('' any system).")
    timeout_s: float = Field(5.0, gt=0, description='Wall s to wait for the supervisor to end a case.')


@dataclass(frozen=True)
class CloseAnswer:
    """The supervisor's answer to ending a case: ``result`` one of ``robot_team/srv/CloseCase``'s ``RESULT_*``."""

    accepted: bool
    result: str
    message: str
    escalation_id: str = ''


class GatewayPorts(Protocol):
    """The ROS side of the gateway (the node implements it; tests pass fakes)."""

    def publish_arrival(self, patient: PatientSpec, reference: str) -> None:
        """Publish ``patient``'s arrival on ``ed/patient_arrivals`` (``reference``: the Encounter)."""

    def close_case(self, patient_id: str, status: str, reference: str, requested_by: str,
                   timeout_s: float) -> CloseAnswer:
        """Ask the supervisor to end ``patient_id``'s case; raise TimeoutError if it does not answer in time."""


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status, JSON body (an OperationOutcome) and extra headers."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address or ``localhost``) is a loopback address (127.0.0.0/8, ::1)."""
    if host.strip().lower() == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host.strip()).is_loopback
    except ValueError:   # a host name: not known to be loopback
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve off loopback without a token.

    Raises
    ------
    GatewayConfigError
        If ``host`` is not a loopback address and ``token`` is empty (names :data:`TOKEN_ENV`).
    """
    if not is_loopback(host) and not (token or '').strip():
        raise GatewayConfigError(f'the FHIR gateway binds {host!r}, which is not a loopback address: set a bearer '
                                 f'token in {TOKEN_ENV} (senders present it as "Authorization: Bearer <token>"), '
                                 f'or bind 127.0.0.1')


def outcome(severity: str, code: str, diagnostics: str, expression: str = '') -> bytes:
    """Return an OperationOutcome (R5, built and serialized with ``fhir.resources``) with one issue, as JSON bytes.

    ``severity``: fatal | error | warning | information; ``code``: a FHIR issue type
    (https://hl7.org/fhir/R5/valueset-issue-type.html); ``expression``: the FHIRPath of the field.
    """
    issue = {'severity': severity, 'code': code, 'diagnostics': diagnostics}
    if expression:
        issue['expression'] = [expression]
    return OperationOutcome.model_validate({'resourceType': 'OperationOutcome', 'issue': [issue]}).model_dump_json(
        ).encode()


class EncounterRecord:
    """Which Encounter sent which patient's arrival: the gateway's memory, kept across its restarts.

    Parameters
    ----------
    path
        A SQLite file (created if missing; one table ``arrivals(reference PK, patient_id UNIQUE)``),
        or None to keep the record in memory only (tests, ``robot-team run`` in one process).

    Raises
    ------
    ValueError
        If ``path`` cannot be opened or is not such a record; the message names it.

    Notes
    -----
    Thread-safe (one connection guarded by a lock); each :meth:`add` is committed before it returns.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = str(path) if path else ':memory:'
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False)
            with self._conn:
                self._conn.execute('CREATE TABLE IF NOT EXISTS arrivals (reference TEXT PRIMARY KEY, '
                                   'patient_id TEXT NOT NULL UNIQUE)')
                self._conn.execute('SELECT reference, patient_id FROM arrivals LIMIT 1').fetchall()
        except sqlite3.Error as exc:
            raise ValueError(f'FHIR gateway record {self.path}: not usable ({exc}): expected a SQLite file the '
                             'gateway writes') from exc

    def patient_of(self, reference: str) -> str | None:
        """Return the patient whose arrival ``reference`` (``Encounter/<id>``) sent, or None."""
        return self._one('SELECT patient_id FROM arrivals WHERE reference = ?', reference)

    def reference_of(self, patient_id: str) -> str | None:
        """Return the Encounter that sent ``patient_id``'s arrival, or None."""
        return self._one('SELECT reference FROM arrivals WHERE patient_id = ?', patient_id)

    def add(self, reference: str, patient_id: str) -> None:
        """Record that ``reference`` sent ``patient_id``'s arrival (committed before returning)."""
        with self._lock, self._conn:
            self._conn.execute('INSERT INTO arrivals (reference, patient_id) VALUES (?, ?)', (reference, patient_id))

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()

    def _one(self, sql: str, value: str) -> str | None:
        with self._lock:
            row = self._conn.execute(sql, (value,)).fetchone()
        return None if row is None else str(row[0])


class FhirGateway:
    """Turn FHIR notifications into arrivals and case ends; answer each with an OperationOutcome.

    Parameters
    ----------
    settings
        Bind address, path, HCW identifier system, supervisor timeout.
    rooms
        The floor's room names (:attr:`robot_team.contracts.floor.Floor.rooms`).
    staff
        The staff directory: ``hcw_id`` -> specialty.
    ports
        The ROS side (:class:`GatewayPorts`).
    emit
        Event sink, ``emit(kind, summary, *, target='', reason='', **data)``.
    token
        The bearer token senders must present (None or '': none; then only loopback may bind).
    record
        What was received (:class:`EncounterRecord`; default: a new one in memory).

    Raises
    ------
    GatewayConfigError
        If the binding is not loopback and there is no token (:func:`check_binding`).

    Notes
    -----
    Thread-safe: :meth:`handle` runs on the HTTP server's threads, one request at a time (a lock),
    so that two deliveries of one Encounter are decided in order.
    """

    def __init__(self, settings: GatewaySettings, rooms: Sequence[str], staff: Mapping[str, str],
                 ports: GatewayPorts, emit: Callable[..., object], token: str | None = None,
                 record: EncounterRecord | None = None):
        check_binding(settings.host, token)
        self.settings = settings
        self._rooms = list(rooms)
        self._staff = dict(staff)
        self._ports = ports
        self._emit = emit
        self._token = (token or '').strip()
        self._lock = threading.Lock()
        self.record = record if record is not None else EncounterRecord()

    def authorized(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value is acceptable (always, with no token set)."""
        if not self._token:
            return True
        scheme, _, credentials = str(authorization or '').partition(' ')
        return scheme.lower() == 'bearer' and hmac.compare_digest(credentials.strip().encode(), self._token.encode())

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes, client: str = '') -> Reply:
        """Answer one HTTP request (``headers`` with lower-case names; ``client`` the peer's address).

        Only ``POST`` to :attr:`GatewaySettings.path` is served: 401 without the token (when one
        is set), 405/404 otherwise, 415 for a body that is not FHIR JSON, 413 for one over
        :data:`MAX_BODY_BYTES`, 400/422 for a notification that cannot be used, 503 when the
        supervisor does not answer a case's end in time; 200 otherwise.
        """
        with self._lock:
            try:
                if not self.authorized(headers.get('authorization')):
                    problem = InputProblem(401, 'login', '', f'Authorization: Bearer <token> (the token in {TOKEN_ENV} '
                                           'where the gateway runs)', 'no valid bearer token')
                    return self.refuse(problem, client, refusal='unauthenticated',
                                       headers=(('WWW-Authenticate', 'Bearer realm="robot_team"'),))
                self._check_request(method, path, headers, body)
                return self._notification(body, client)
            except InputProblem as problem:
                return self.refuse(problem, client)

    def _check_request(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> None:
        base = self.settings.path.rstrip('/') or '/'
        clean = path.split('?', 1)[0].rstrip('/') or '/'
        if clean != base and not clean.startswith(base.rstrip('/') + '/'):
            raise InputProblem(404, 'not-found', '', f'POST to {self.settings.path}', path)
        if method != 'POST':
            raise InputProblem(405, 'not-supported', '', 'POST (a rest-hook notification)', method)
        mime = headers.get('content-type', '').split(';', 1)[0].strip().lower()
        if mime not in ACCEPTED_TYPES:
            raise InputProblem(415, 'not-supported', '', f'Content-Type {FHIR_JSON}', mime or 'none')
        if len(body) > MAX_BODY_BYTES:
            raise InputProblem(413, 'too-long', '', f'a body of at most {MAX_BODY_BYTES} bytes', f'{len(body)} bytes')

    def _notification(self, body: bytes, client: str) -> Reply:
        note = parse_notification(body)
        if note.status_type in ('handshake', 'heartbeat', 'query-status', 'query-event') or not note.encounters:
            self._emit(EventKind.FHIR_NOTIFICATION, f'FHIR {note.status_type} from {note.subscription or client}',
                       target=note.subscription, bundle_type=note.kind, fhir_version=note.version,
                       notification_type=note.status_type, subscription=note.subscription, encounters=[],
                       http_status=200, client=client)
            return Reply(200, outcome('information', 'informational', f'{note.status_type} received; nothing to do'))
        changes = []
        for index, (_, encounter) in enumerate(note.encounters):   # all checked before any is acted on
            try:
                changes.append(map_encounter(encounter, note, self._rooms, self._staff,
                                             hcw_system=self.settings.hcw_system))
            except InputProblem as problem:
                if len(note.encounters) > 1:
                    problem.found = f'Encounter {index + 1} of {len(note.encounters)}' + (
                        f': {problem.found}' if problem.found else '')
                raise
        done = [self._act(change) for change in changes]
        self._emit(EventKind.FHIR_NOTIFICATION, f'FHIR {note.status_type}: '
                   + '; '.join(f'{c.reference} {c.status} -> {d}' for c, d in zip(changes, done)),
                   target=', '.join(c.reference for c in changes), bundle_type=note.kind, fhir_version=note.version,
                   notification_type=note.status_type, subscription=note.subscription, http_status=200,
                   client=client, encounters=[{'encounter': c.reference, 'status': c.status, 'change': c.change,
                                               'case_id': c.patient_id, 'result': d} for c, d in zip(changes, done)])
        return Reply(200, outcome('information', 'informational', '; '.join(
            f'{c.reference} ({c.status}): {d}' for c, d in zip(changes, done))))

    def _act(self, change: EncounterChange) -> str:
        """Carry out one Encounter's change; return what happened, for people and the record."""
        if change.change == 'not_yet':
            return f'nothing to do yet for case {change.patient_id}'
        if change.change == 'arrival':
            earlier = self.record.patient_of(change.reference)
            if earlier is not None:
                return f'already received: case {earlier} (a repeat opens nothing)'
            other = self.record.reference_of(change.patient_id)
            if other is not None:
                return f'patient {change.patient_id} already has a case (from {other}): nothing new'
            # sent, then kept: a crash between sends it again on the retry (the supervisor's case per
            # patient makes a repeat harmless); kept first, a crash would lose the patient
            self._ports.publish_arrival(change.arrival, change.reference)
            self.record.add(change.reference, change.patient_id)
            return f'arrival of patient {change.patient_id} in {change.arrival.room} sent to the team'
        try:
            answer = self._ports.close_case(change.patient_id, change.change, change.reference, ACTOR,
                                            self.settings.timeout_s)
        except TimeoutError as exc:
            raise InputProblem(503, 'transient', '', 'the supervisor to answer (send the notification again)',
                               str(exc)) from None
        return f'{answer.result}: {answer.message}'

    def refuse(self, problem: InputProblem, client: str, *, refusal: str = 'bad_input',
               headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        """Record ``problem`` (``input_error``) and answer it with its status and an OperationOutcome."""
        self._emit(EventKind.INPUT_ERROR, f'FHIR gateway refused a request ({problem.status})',
                   target=problem.expression, reason=str(problem), http_status=problem.status,
                   issue_code=problem.code, field=problem.expression, expected=problem.expected,
                   found=problem.found[:500], refusal=refusal, client=client)
        return Reply(problem.status, outcome('error', problem.code, str(problem), problem.expression), headers)
