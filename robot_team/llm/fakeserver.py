"""A scripted OpenAI-compatible chat-completions server on loopback, for tests and benchmarks.

It answers ``POST /v1/chat/completions`` like any OpenAI-compatible endpoint, so the real
``openai`` client talks to it over HTTP. Replies are scripted per caller: the
``X-Robot-Team-Robot`` header (set by :class:`~robot_team.llm.client.ChatClient`) selects the
robot's *policy*, a function from the request body to a reply (a scripted, deterministic
"LLM" that can read the tool results in the conversation). Faults (HTTP errors, delays,
garbage bodies) can be queued per robot and are served before the policy is asked.

:attr:`ScriptedServer.in_flight` counts the requests being answered (a delayed fault stops
waiting as soon as its client goes away, so a cancelled request leaves the count at once);
:meth:`ScriptedServer.stop` also closes the open connections: the endpoint is gone, as when a
server dies mid-run.

No network beyond 127.0.0.1; standard library only.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from robot_team.llm.tokens import count_completion, count_prompt

Policy = Callable[[dict], dict]
"""A scripted model: request body (dict) -> reply message dict (see :func:`tool_calls` and :func:`text`)."""


def tool_calls(*calls: tuple[str, dict | str], content: str | None = None) -> dict:
    """Return an assistant message calling ``calls`` (``(name, arguments)``; a str is sent verbatim)."""
    return {'role': 'assistant', 'content': content, 'tool_calls': [
        {'id': f'call_{uuid.uuid4().hex[:12]}', 'type': 'function',
         'function': {'name': name, 'arguments': args if isinstance(args, str) else json.dumps(args)}}
        for name, args in calls]}


def text(content: str) -> dict:
    """Return an assistant message with text only (no tool call)."""
    return {'role': 'assistant', 'content': content}


@dataclass
class Fault:
    """One scripted endpoint fault, served instead of a reply.

    ``status``: HTTP status to answer (e.g. 429, 500); ``delay_s``: wait before answering
    (longer than the client's timeout makes a timeout; the wait ends early if the client goes
    away); ``body``: raw body to send (garbage); ``dies``: the endpoint dies on this request
    (:meth:`ScriptedServer.stop`: nothing answers it or any later request), so a test can end
    the endpoint at a given request of a given robot, whatever the wall time.
    """

    status: int = 500
    delay_s: float = 0.0
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    dies: bool = False


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that leaves out a client's hang-up, which the client records itself."""

    def handle_error(self, request, client_address) -> None:
        """Print the traceback of an error, except a connection the client closed mid-request.

        The team's client cancels a request whose step no longer needs it (recorded on its side as
        an ``llm_error``); the reset it leaves here is no error of the server's.
        """
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """Loopback OpenAI-compatible server; use as a context manager.

    Parameters
    ----------
    policies
        Robot name -> :data:`Policy`. A robot without a policy gets HTTP 404.
    usage
        ``'none'``: replies carry no ``usage`` (the client counts with tiktoken); ``'tiktoken'``:
        the server counts like the client does and reports it.

    Attributes
    ----------
    requests : list[tuple[str, dict]]
        Every request received: (robot, body), in arrival order.
    abandoned : int
        Requests whose client went away before the answer (a delayed fault cut short).
    base_url : str
        ``http://127.0.0.1:<port>/v1`` once started.
    """

    def __init__(self, policies: dict[str, Policy] | None = None, usage: str = 'none'):
        self.policies: dict[str, Policy] = dict(policies or {})
        self.faults: dict[str, list[Fault]] = {}
        self.requests: list[tuple[str, dict]] = []
        self.usage = usage
        self.abandoned = 0
        self._active = 0
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ''

    def add_fault(self, robot: str, *faults: Fault) -> None:
        """Queue ``faults`` for ``robot``'s next requests."""
        with self._lock:
            self.faults.setdefault(robot, []).extend(faults)

    @property
    def in_flight(self) -> int:
        """Return the number of requests being answered now."""
        with self._lock:
            return self._active

    def requests_of(self, robot: str) -> list[dict]:
        """Return the bodies of ``robot``'s requests."""
        with self._lock:
            return [body for who, body in self.requests if who == robot]

    def policy_for(self, robot: str) -> Policy | None:
        """Return the policy that answers ``robot`` (None: HTTP 404); a subclass may make one per caller."""
        with self._lock:
            return self.policies.get(robot)

    def start(self) -> 'ScriptedServer':
        """Start serving on 127.0.0.1 (a free port) in a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # quiet
                pass

            def setup(self):
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self):
                with server._lock:
                    server._connections.discard(self.connection)
                super().finish()

            def do_POST(self):  # noqa: N802 - http.server's naming
                with server._lock:
                    server._active += 1
                try:
                    self._answer()
                finally:
                    with server._lock:
                        server._active -= 1

            def _client_gone(self, wait_s: float) -> bool:
                """Wait up to ``wait_s`` for the client to close the connection; return whether it did."""
                readable, _, _ = select.select([self.connection], [], [], wait_s)
                if not readable:
                    return False
                try:
                    return self.connection.recv(1, socket.MSG_PEEK) == b''
                except OSError:
                    return True

            def _answer(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length)
                robot = self.headers.get('X-Robot-Team-Robot', '')
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    return self._send(400, {'error': {'message': 'request is not JSON'}})
                with server._lock:
                    server.requests.append((robot, body))
                    queue = server.faults.get(robot) or []
                    fault = queue.pop(0) if queue else None
                if fault is not None and fault.dies:
                    server.stop()   # from this handler's thread: serve_forever runs in its own
                    self.close_connection = True
                    return None
                if fault is not None:
                    end = time.monotonic() + fault.delay_s
                    while time.monotonic() < end:
                        if self._client_gone(min(0.05, max(0.0, end - time.monotonic()))):
                            with server._lock:
                                server.abandoned += 1
                            self.close_connection = True
                            return None
                    payload = fault.body if fault.body is not None else {'error': {
                        'message': f'scripted fault {fault.status}', 'type': 'server_error'}}
                    return self._send(fault.status, payload, fault.headers)
                policy = server.policy_for(robot)
                if policy is None:
                    return self._send(404, {'error': {'message': f'no scripted policy for {robot!r}'}})
                try:
                    message = policy(body)
                except Exception as exc:  # noqa: BLE001 - a broken script answers 500, visibly
                    return self._send(500, {'error': {'message': f'policy crashed: {type(exc).__name__}: {exc}'}})
                return self._send(200, server._completion(body, message))

            def _send(self, status, payload, headers=None):
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):   # the client gave up (timeout)
                    pass

        self._httpd = _QuietServer(('127.0.0.1', 0), Handler)
        self._httpd.daemon_threads = True
        self.base_url = f'http://127.0.0.1:{self._httpd.server_address[1]}/v1'
        self._thread = threading.Thread(target=self._httpd.serve_forever, name='scripted-llm', daemon=True)
        self._thread.start()
        return self

    def _completion(self, body: dict, message: dict) -> dict:
        reply: dict[str, Any] = {
            'id': f'chatcmpl-{uuid.uuid4().hex[:16]}', 'object': 'chat.completion', 'created': int(time.time()),
            'model': body.get('model', 'scripted'),
            'choices': [{'index': 0, 'message': message,
                         'finish_reason': 'tool_calls' if message.get('tool_calls') else 'stop'}]}
        if self.usage == 'tiktoken':
            prompt = count_prompt(body.get('messages', []), body.get('tools'))
            completion = count_completion(message)
            reply['usage'] = {'prompt_tokens': prompt, 'completion_tokens': completion,
                              'total_tokens': prompt + completion}
        return reply

    def stop(self) -> None:
        """Stop serving and close the open connections (the endpoint is gone)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> 'ScriptedServer':
        """Start the server."""
        return self.start()

    def __exit__(self, *exc) -> None:
        """Stop the server."""
        self.stop()
