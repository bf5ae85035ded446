"""The FHIR gateway's HTTP endpoint: the standard library's threading HTTP server in a thread (no rclpy).

:class:`GatewayServer` binds ``settings.host:settings.port`` and hands every request to
:meth:`FhirGateway.handle <robot_team.fhir.gateway.FhirGateway.handle>`; it never logs request
headers (the bearer token stays out of every log) and answers a request it cannot read with 400.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from robot_team.fhir.encounters import InputProblem
from robot_team.fhir.gateway import FHIR_JSON, MAX_BODY_BYTES, FhirGateway, Reply

READ_TIMEOUT_S = 10.0
"""Wall s a client may take to send its request (a stalled one is dropped)."""


class _Handler(BaseHTTPRequestHandler):
    """One request: read the body, ask the gateway, write its reply."""

    server_version = 'robot_team-fhir-gateway'
    protocol_version = 'HTTP/1.1'
    timeout = READ_TIMEOUT_S

    def _serve(self) -> None:
        gateway: FhirGateway = self.server.gateway   # type: ignore[attr-defined]
        try:
            length = int(self.headers.get('Content-Length') or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            reply = gateway.refuse(InputProblem(413 if length > 0 else 400, 'too-long' if length > 0 else 'structure',
                                                '', f'a Content-Length of at most {MAX_BODY_BYTES} bytes',
                                                str(self.headers.get('Content-Length'))), self.client_address[0])
            self._write(reply, close=True)
            return
        body = self.rfile.read(length) if length else b''
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._write(gateway.handle(self.command, self.path, headers, body, self.client_address[0]))

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _serve

    def _write(self, reply: Reply, close: bool = False) -> None:
        self.send_response(reply.status)
        self.send_header('Content-Type', FHIR_JSON)
        self.send_header('Content-Length', str(len(reply.body)))
        for name, value in reply.headers:
            self.send_header(name, value)
        if close:
            self.send_header('Connection', 'close')
            self.close_connection = True
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format, *args) -> None:   # noqa: A002 (the base class's name)
        """Log nothing here: every request is in the team's record (and headers never are)."""


class GatewayServer:
    """Serve a :class:`FhirGateway` over HTTP on a daemon thread.

    Parameters
    ----------
    gateway
        What answers each request; its ``settings`` give the address and port.

    Attributes
    ----------
    port : int
        The port bound (the one asked for, or the free one picked for port 0).

    Raises
    ------
    OSError
        If the address cannot be bound (in use, not this machine's).

    Notes
    -----
    :meth:`start` returns at once; :meth:`stop` shuts the server down and waits for its thread.
    Requests run on the server's own threads (``ThreadingHTTPServer``); the gateway serializes them.
    """

    def __init__(self, gateway: FhirGateway):
        self.gateway = gateway
        self._httpd = ThreadingHTTPServer((gateway.settings.host, gateway.settings.port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.gateway = gateway   # type: ignore[attr-defined]
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={'poll_interval': 0.2},
                                        name='fhir-gateway-http', daemon=True)

    def start(self) -> 'GatewayServer':
        """Start serving on a daemon thread; return self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (waits for the serving thread, at most 5 wall s)."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join(timeout=5.0)
        self._httpd.server_close()
