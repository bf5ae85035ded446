"""The FHIR gateway: the hospital's Encounter notifications in, patients' arrivals and case ends out.

A thin ROS 2 wiring around :class:`robot_team.fhir.gateway.FhirGateway` (parsing, mapping,
authorization and answers; no rclpy) served over HTTP by :class:`robot_team.fhir.server.GatewayServer`.
Names are relative to the team namespace:

- ``ed/patient_arrivals`` (PatientArrival): published for an emergency Encounter that arrived
  (reliable, as the hospital's systems publish it);
- ``team/supervisor/close_case`` (CloseCase): called for an Encounter ``finished`` or ``cancelled``;
  the HTTP answer waits for the supervisor's (at most ``timeout_s``; else 503, and the sender retries);
- every request is an event on ``team/events`` (``fhir_notification`` or ``input_error``).

Parameters: ``fhir_host`` (default ``127.0.0.1``), ``fhir_port`` (required, 1-65535; 0 picks a
free port, for tests), ``fhir_path`` (``/fhir``), ``hcw_system`` (the HCW identifier system, ''
any), ``floor`` (floor description: a path or a name in ``config/floors/``), ``staff_db`` (the
staff directory, SQLite; empty: the directory seed ``config/staff.yaml``), ``timeout_s``,
``state_db`` (the record of Encounters received, SQLite, kept across a respawn:
:class:`robot_team.fhir.gateway.EncounterRecord`; '' in memory). The
bearer token comes from the environment (:data:`robot_team.fhir.gateway.TOKEN_ENV`), never from a
parameter (parameters are visible to anyone on the graph).
"""

from __future__ import annotations

import os
import threading

from rclpy.node import Node
from std_msgs.msg import Header

from robot_team.contracts import names
from robot_team.contracts.config import ConfigError, PatientSpec, load_staff_seed, share_dir
from robot_team.directory import StaffDirectory
from robot_team.contracts.events import EventKind
from robot_team.fhir.gateway import (TOKEN_ENV, CloseAnswer, EncounterRecord, FhirGateway, GatewayConfigError,
                                     GatewaySettings)
from robot_team.fhir.server import GatewayServer
from robot_team.contracts.floor import load_floor
from robot_team.msg import PatientArrival
from robot_team.ros.emitter import EventEmitter
from robot_team.ros.executor import TeamExecutor
from robot_team.ros.messages import reliable_qos
from robot_team.ros.stamps import now_s, s_to_stamp
from robot_team.ros.util import spin_node
from robot_team.srv import CloseCase


class FhirGatewayNode(Node):
    """The FHIR gateway node (``fhir_gateway``): an HTTP endpoint for FHIR Subscription notifications.

    Parameters
    ----------
    context, parameter_overrides
        As for :class:`rclpy.node.Node` (see the module docstring for the parameters).

    Raises
    ------
    ConfigError
        If the floor or staff directory cannot be read, the port is out of range, or the endpoint
        would bind off loopback without a token (recorded as ``input_error``; the token is never).
    OSError
        If the address cannot be bound (recorded as ``input_error``).

    Notes
    -----
    Threading model: HTTP requests run on the server's threads; each waits for the supervisor's
    answer on a :class:`threading.Event` set by the service client's done-callback, which the
    node's executor runs. So the executor must spin on other threads than the HTTP ones (it does:
    the runner's team executor, or :func:`main`'s multi-threaded one).
    """

    def __init__(self, *, context=None, parameter_overrides=None):
        super().__init__(names.FHIR_GATEWAY, context=context, parameter_overrides=parameter_overrides or [])
        self.events = EventEmitter(self, names.FHIR_GATEWAY)
        host = str(self.declare_parameter('fhir_host', '127.0.0.1').value)
        port = int(self.declare_parameter('fhir_port', 0).value)
        path = str(self.declare_parameter('fhir_path', '/fhir').value)
        hcw_system = str(self.declare_parameter('hcw_system', '').value)
        floor_name = str(self.declare_parameter('floor', 'ed_floor.yaml').value)
        staff_db = str(self.declare_parameter('staff_db', '').value)
        timeout_s = float(self.declare_parameter('timeout_s', 5.0).value)
        state_db = str(self.declare_parameter('state_db', '').value)
        self._arrivals = self.create_publisher(PatientArrival, names.PATIENT_ARRIVALS, reliable_qos())
        self._close = self.create_client(CloseCase, names.CLOSE_CASE)
        try:
            settings = GatewaySettings(host=host, port=port, path=path, hcw_system=hcw_system, timeout_s=timeout_s)
            rooms = list(load_floor(floor_name).rooms)
            staff = self._staff(staff_db)
            self.gateway = FhirGateway(settings, rooms, staff, self, self.events.emit, os.environ.get(TOKEN_ENV),
                                       EncounterRecord(state_db or None))
            self.server = GatewayServer(self.gateway)
        except (ConfigError, GatewayConfigError, ValueError, OSError) as exc:
            self.events.emit(EventKind.INPUT_ERROR, 'fhir_gateway cannot start', reason=str(exc), host=host,
                             port=port)
            raise ConfigError(f'fhir_gateway: {exc}') from exc
        self.server.start()
        self.events.emit(EventKind.NODE_STARTED, f'fhir_gateway listening on http://{host}:{self.server.port}{path}',
                         host=host, port=self.server.port, path=path, token_required=bool(os.environ.get(TOKEN_ENV)),
                         rooms=len(rooms), staff=len(staff), hcw_system=hcw_system)

    @staticmethod
    def _staff(staff_db: str) -> dict[str, str]:
        if staff_db:
            return {s.hcw_id: s.specialty for s in StaffDirectory(staff_db).staff()}
        seed = load_staff_seed(share_dir() / 'config' / 'staff.yaml')
        return {s.hcw_id: s.specialty for s in seed.staff}

    # --- GatewayPorts ---------------------------------------------------------------------------

    def publish_arrival(self, patient: PatientSpec, reference: str) -> None:
        """Publish ``patient``'s arrival on ``ed/patient_arrivals`` (stamped now, ROS time)."""
        self._arrivals.publish(PatientArrival(
            header=self._header(), patient_id=patient.patient_id, room=patient.room,
            presentation=patient.presentation, esi_level=patient.esi_level,
            assigned_hcw_id=patient.assigned_hcw_id, required_specialty=patient.required_specialty))

    def close_case(self, patient_id: str, status: str, reference: str, requested_by: str,
                   timeout_s: float) -> CloseAnswer:
        """Ask the supervisor to end ``patient_id``'s case; wait at most ``timeout_s`` wall s (TimeoutError)."""
        if not self._close.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError(f'{names.CLOSE_CASE} is not offered (is the supervisor running?)')
        done = threading.Event()
        future = self._close.call_async(CloseCase.Request(patient_id=patient_id, status=status, reference=reference,
                                                          requested_by=requested_by))
        future.add_done_callback(lambda _future: done.set())
        if not done.wait(timeout_s):
            future.cancel()
            raise TimeoutError(f'{names.CLOSE_CASE} did not answer within {timeout_s:g} s')
        answer = future.result()
        return CloseAnswer(accepted=answer.accepted, result=answer.result, message=answer.message,
                           escalation_id=answer.escalation_id)

    def stop(self) -> bool:
        """Stop serving HTTP (the episode ends); return True."""
        self.server.stop()
        return True

    def destroy_node(self):
        """Stop serving HTTP (if it started), then destroy the node."""
        if getattr(self, 'server', None) is not None:
            self.server.stop()
        return super().destroy_node()

    def _header(self) -> Header:
        return Header(stamp=s_to_stamp(now_s(self)))


def main(args=None) -> int:
    """Run the FHIR gateway (``ros2 run robot_team fhir_gateway``)."""
    # Multi-threaded: an HTTP request waits for the supervisor's answer, which a done-callback
    # on an executor thread delivers; the HTTP server has threads of its own.
    return spin_node('fhir_gateway', FhirGatewayNode, TeamExecutor, args)


if __name__ == '__main__':
    raise SystemExit(main())
