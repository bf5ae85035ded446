"""Every LLM exchange and every invalid call on the event record.

What was sent: an ``llm_request`` event carries the request's messages as digests (one short
SHA-256 per message, in order) plus, under ``new_messages``, every message the same client had
not sent before (digest -> message); tool definitions likewise (``tools_digest``, and ``tools``
the first time). The whole conversation of any request can so be rebuilt from the record alone
(:func:`exchanges`) while a long conversation is not repeated in every event. What came back:
the ``llm_reply`` event carries the full reply (``reply``: text, tool calls with their
arguments, finish reason) and the endpoint's ``usage``.

Invalid calls: a call the team could not act on (arguments that do not parse or validate, a
value outside a closed set, a reply that is no tool call at all in ``json_schema`` mode) is an
``invalid_call`` event with the validation error (:func:`invalid_call`). Calls to a tool the
caller does not own (or that does not exist) are ``tool_refused``, invalid reports
``report_rejected`` and invalid reflections ``reflection_rejected``, as before.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable

from robot_team.contracts.events import EventKind

DIGEST_CHARS = 16
"""Hex characters of a message digest (64 bits of SHA-256: unique within any run)."""


def digest(value: Any) -> str:
    """Return the short SHA-256 digest of ``value``'s canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(value, sort_keys=True, separators=(',', ':'), default=str, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_CHARS]


class ExchangeRecord:
    """The record fields of one client's requests and replies (one per :class:`~robot_team.llm.client.ChatClient`).

    Not thread-safe on its own; a client sends one request at a time.
    """

    def __init__(self):
        self._sent: set[str] = set()

    def request_fields(self, request: dict) -> dict:
        """Return the ``llm_request`` fields of ``request`` (the body sent to the endpoint).

        ``messages``: the digest of each message in order; ``new_messages``: digest -> message for
        those this client never sent before; ``tools_digest`` and, when new, ``tools``; ``params``:
        every other field of the body (model, temperature, max_tokens, tool_choice, response_format).
        """
        messages = list(request.get('messages') or [])
        digests = [digest(m) for m in messages]
        new = {}
        for key, message in zip(digests, messages):
            if key not in self._sent and key not in new:
                new[key] = message
        self._sent.update(new)
        fields: dict[str, Any] = {'messages': digests, 'new_messages': new,
                                  'params': {k: v for k, v in request.items() if k not in ('messages', 'tools')}}
        tools = request.get('tools')
        if tools:
            key = digest(tools)
            fields['tools_digest'] = key
            if key not in self._sent:
                fields['tools'] = tools
                self._sent.add(key)
        return fields


def reply_fields(message: dict, finish_reason: str | None, usage: dict | None, raw_content: str | None = None) -> dict:
    """Return the ``llm_reply`` fields: ``reply`` (text, tool calls with arguments, finish reason), ``usage``.

    ``raw_content`` is the reply text as the endpoint sent it when it differs from the message's
    (``json_schema`` mode: the JSON the tool calls were parsed from).
    """
    calls = [{'id': c.get('id', ''), 'name': c['function']['name'], 'arguments': c['function'].get('arguments', '')}
             for c in message.get('tool_calls') or []]
    reply = {'content': message.get('content'), 'tool_calls': calls, 'finish_reason': finish_reason}
    if raw_content is not None and raw_content != message.get('content'):
        reply['raw_content'] = raw_content
    return {'reply': reply, 'usage': usage or {}}


def exchanges(events: Iterable) -> list[dict]:
    """Rebuild every LLM exchange from a record: the messages and tools sent, the reply or the error.

    ``events``: :class:`~robot_team.contracts.events.TeamEventModel` in record order. Returns one dict per
    ``llm_request`` attempt: ``robot``, ``attempt``, ``messages`` (full), ``tools`` (full or None),
    ``params``, and ``reply`` (the ``llm_reply`` fields) or ``error`` (the ``llm_error`` reason), or
    neither when the exchange never ended (cut by the episode's end).

    Raises
    ------
    KeyError
        If a request names a message or tool set the record never carried (a gap in the record).
    """
    known: dict[str, dict[str, Any]] = {}
    pending: dict[str, dict] = {}
    out: list[dict] = []
    for event in events:
        d = event.data
        robot = d.get('robot', event.actor)
        if event.kind == EventKind.LLM_REQUEST.value and 'messages' in d:
            seen = known.setdefault(robot, {})
            seen.update(d.get('new_messages') or {})
            if d.get('tools') is not None:
                seen[d['tools_digest']] = d['tools']
            entry = {'robot': robot, 'attempt': d.get('attempt'), 'messages': [seen[k] for k in d['messages']],
                     'tools': seen[d['tools_digest']] if d.get('tools_digest') else None,
                     'params': d.get('params', {})}
            out.append(entry)
            pending[robot] = entry
        elif event.kind == EventKind.LLM_REPLY.value and robot in pending:
            pending.pop(robot).update(reply=d.get('reply'), usage=d.get('usage'))
        elif event.kind == EventKind.LLM_ERROR.value and robot in pending:
            pending[robot]['error'] = event.reason
    return out
