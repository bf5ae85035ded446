"""Tool calls for models without native tool calling: a strict JSON schema instead of ``tools``.

Small local models often write their tool calls as bare JSON without their chat template's
tool-call tags, so an OpenAI-compatible server returns them as text. In ``json_schema`` mode
(``tool_calls: json_schema`` in the LLM settings) the request carries no ``tools``; instead:

- ``response_format`` is ``{"type": "json_schema", "json_schema": {"name": "tool_calls",
  "strict": true, "schema": ...}}`` where the schema is the union of the offered tools: an
  object ``{"tool_calls": [call, ...]}`` whose items are each ``{"name": <one tool's name>,
  "arguments": <that tool's parameters>}`` (an empty list: nothing to do now). Closed sets stay
  enums; a number or boolean argument may also be a ``"$N.field"`` reference
  (:mod:`robot_team.llm.references`);
- the system prompt lists the tools (name, description, parameters), since a schema given as
  ``response_format`` is a constraint on decoding, not something the model reads;
- earlier turns are shown as the model wrote them: an assistant turn with tool calls becomes the
  JSON it replied, tool results become one user message.

The reply's JSON is parsed back into the same ``tool_calls`` a native endpoint returns
(:func:`parse_reply`), so guards and record are unchanged. A reply that is not such JSON
(text, empty, cut by ``max_tokens``, invalid JSON, the wrong shape) is returned as text with the
reason, for the client to record as an ``invalid_call``; tool names are not checked here: a
foreign or invented name reaches the brain, whose guards refuse it as they refuse a native call.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

SCHEMA_NAME = 'tool_calls'

REPLY_RULE = ('Reply with one JSON object only: {"tool_calls": [{"name": <tool>, "arguments": {...}}, ...]} '
              '(an empty list to wait). Tools:')

REFERENCE = {'type': 'string', 'pattern': r'^\$[0-9]+(\.[A-Za-z0-9_]+)*$'}
"""A ``$N.field`` reference to an earlier call's output in the same reply, allowed where a number or boolean is."""


FREE_TEXT_MAX_CHARS = 300
"""Longest free string (no enum, pattern or own bound) a reply may hold: a reply cut at its ``max_tokens``
is refused as unparsable anyway, so a bounded string keeps every reply the schema allows within it."""


_SCALAR = {'anyOf': [{'type': 'string', 'maxLength': FREE_TEXT_MAX_CHARS}, {'type': 'number'},
                     {'type': 'boolean'}, {'type': 'null'}]}
FREE_VALUE = {'anyOf': [*_SCALAR['anyOf'], {'type': 'array', 'items': _SCALAR, 'maxItems': 8},
                        {'type': 'object', 'additionalProperties': _SCALAR, 'maxProperties': 8}]}
"""What an open object (e.g. a report's ``data``) may hold per key: scalars, or one level of lists and
objects of scalars, so a reply cannot nest without end before its ``max_tokens`` (a small model
echoed its whole call into ``data``, nested until cut)."""


def _strict(node: Any) -> Any:
    """Return a parameters schema made strict: closed objects, references allowed for numbers and booleans.

    Free strings get ``maxLength`` :data:`FREE_TEXT_MAX_CHARS`, and open objects' values and
    untyped properties (any value) :data:`FREE_VALUE` (the reply must end within its token limit).
    """
    if isinstance(node, list):
        return [_strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in ('default', 'description')}
    if not out:   # any value (e.g. a described report item): bounded like an open object's values
        return copy.deepcopy(FREE_VALUE)
    if out.get('type') == 'object' and 'properties' in out and 'additionalProperties' not in out:
        out['additionalProperties'] = False
    if out.get('type') == 'object' and out.get('additionalProperties', 'properties' not in out) is True:
        out['additionalProperties'] = FREE_VALUE
    if out.get('type') in ('number', 'integer', 'boolean') and 'enum' not in out:
        return {'anyOf': [out, REFERENCE]}
    if out.get('type') == 'string' and not {'enum', 'const', 'pattern', 'maxLength'} & set(out):
        out['maxLength'] = FREE_TEXT_MAX_CHARS
    return out


def response_schema(tools: list[dict], max_calls: int | None = None) -> dict:
    """Return the strict JSON schema of a reply calling any of ``tools`` (OpenAI tool definitions).

    Shape: ``{"tool_calls": [{"name": ..., "arguments": {...}}, ...]}``; each item matches exactly
    one tool (its name as a one-value enum, its parameters closed); at most ``max_calls`` items
    (``None``: any number).
    """
    variants = []
    for tool in tools:
        fn = tool['function']
        params = _strict(copy.deepcopy(fn.get('parameters') or {'type': 'object', 'properties': {}}))
        variants.append({'type': 'object', 'properties': {'name': {'type': 'string', 'enum': [fn['name']]},
                                                          'arguments': params},
                         'required': ['name', 'arguments'], 'additionalProperties': False})
    item = variants[0] if len(variants) == 1 else {'anyOf': variants}
    calls: dict = {'type': 'array', 'items': item}
    if max_calls is not None:
        calls['maxItems'] = max_calls
    return {'type': 'object', 'properties': {'tool_calls': calls},
            'required': ['tool_calls'], 'additionalProperties': False}


def response_format(tools: list[dict], max_calls: int | None = None) -> dict:
    """Return the request's ``response_format`` for ``tools`` (strict structured outputs, :func:`response_schema`)."""
    return {'type': 'json_schema', 'json_schema': {'name': SCHEMA_NAME, 'strict': True,
                                                   'schema': response_schema(tools, max_calls)}}


def type_text(schema: dict) -> str:
    """Return a parameters schema as a short signature: ``a|b`` for enums, ``[T]``, ``{k: T, opt?: T}``, ``str``."""
    if 'enum' in schema:
        return '|'.join(str(v) for v in schema['enum'])
    if 'anyOf' in schema:
        return '|'.join(type_text(s) for s in schema['anyOf'])
    kind = schema.get('type')
    if kind == 'array':
        return f"[{type_text(schema.get('items') or {})}]"
    if kind == 'object' and schema.get('properties'):
        required = set(schema.get('required') or [])
        parts = []
        for name, spec in schema['properties'].items():
            note = f" ({spec['description']})" if spec.get('description') else ''
            parts.append(f"{name}{'' if name in required else '?'}: {type_text(spec)}{note}")
        return '{' + ', '.join(parts) + '}'
    return {'string': 'str', 'integer': 'int', 'number': 'number', 'boolean': 'bool', 'object': 'object'}.get(
        kind, 'any')


def tools_text(tools: list[dict]) -> str:
    """Return the tools as the model reads them: one line each, ``name {arguments}: description``."""
    lines = [REPLY_RULE]
    for tool in tools:
        fn = tool['function']
        params = fn.get('parameters') or {'type': 'object', 'properties': {}}
        signature = type_text({**params, 'type': 'object'}) if params.get('properties') else \
            type_text(params) if params.get('anyOf') else '{}'
        lines.append(f"- {fn['name']} {signature}: {fn.get('description', '')}")
    return '\n'.join(lines)


def _as_written(message: dict) -> str:
    """Return an assistant message with tool calls as the JSON the model wrote in this mode."""
    calls = []
    for call in message.get('tool_calls') or []:
        raw = call['function'].get('arguments') or '{}'
        try:
            args = json.loads(raw)
        except ValueError:
            args = raw
        calls.append({'name': call['function']['name'], 'arguments': args})
    return json.dumps({'tool_calls': calls}, separators=(',', ':'), ensure_ascii=False)


def convert_messages(messages: list[dict], tools: list[dict]) -> list[dict]:
    """Return ``messages`` as sent in ``json_schema`` mode (see the module docstring); the input is not changed.

    The tools' text is appended to the first system message (one is added if there is none);
    assistant tool calls become their JSON; consecutive tool messages become one user message
    ``Results: name#id: content`` in call order.
    """
    names: dict[str, str] = {}
    out: list[dict] = []
    results: list[str] = []

    def flush():
        if results:
            out.append({'role': 'user', 'content': 'Results:\n' + '\n'.join(results)})
            results.clear()

    for message in messages:
        role = message.get('role')
        if role == 'tool':
            call_id = message.get('tool_call_id', '')
            results.append(f"{names.get(call_id, '?')}: {message.get('content', '')}")
            continue
        flush()
        if role == 'assistant' and message.get('tool_calls'):
            for call in message['tool_calls']:
                names[call.get('id', '')] = call['function']['name']
            out.append({'role': 'assistant', 'content': _as_written(message)})
        elif role == 'assistant':
            out.append({'role': 'assistant', 'content': message.get('content') or ''})
        else:
            out.append(dict(message))
    flush()
    text = tools_text(tools)
    if out and out[0].get('role') == 'system':
        out[0] = {**out[0], 'content': f"{out[0].get('content', '')}\n{text}"}
    else:
        out.insert(0, {'role': 'system', 'content': text})
    return out


class InvalidReply(ValueError):
    """A ``json_schema``-mode reply that is not the tool calls asked for; the message says what is wrong."""


def parse_reply(content: str | None, finish_reason: str | None = None, max_tokens: int | None = None) -> list[dict]:
    """Return the tool calls of a ``json_schema``-mode reply, shaped as a native endpoint's ``tool_calls``.

    Each call: ``{'id': 'call_<random>', 'type': 'function', 'function': {'name', 'arguments' (JSON
    text)}}``. An empty ``tool_calls`` list gives ``[]`` (the model chose to wait).

    Raises
    ------
    InvalidReply
        If ``content`` is empty, not JSON, cut by ``max_tokens`` (``finish_reason`` ``'length'``)
        or not ``{"tool_calls": [{"name": str, "arguments": object}, ...]}``.
    """
    text = (content or '').strip()
    cut = finish_reason == 'length'
    limit = f' (max_tokens {max_tokens})' if max_tokens else ''
    if not text:
        raise InvalidReply('the reply is empty' + (f': cut at the token limit{limit}' if cut else ''))
    try:
        value = json.loads(text)
    except ValueError as exc:
        if cut:
            raise InvalidReply(f'the reply was cut at the token limit{limit} before its JSON ended: {exc}') from None
        raise InvalidReply(f'the reply is not JSON ({exc}); expected {{"tool_calls": [...]}}') from None
    if not isinstance(value, dict) or not isinstance(value.get('tool_calls'), list):
        raise InvalidReply(f'expected a JSON object {{"tool_calls": [...]}}, got {text[:120]}')
    calls = []
    for k, item in enumerate(value['tool_calls']):
        if not isinstance(item, dict) or not isinstance(item.get('name'), str) or not item['name'].strip():
            raise InvalidReply(f'tool_calls[{k}] has no tool name: {json.dumps(item)[:120]}')
        args = item.get('arguments', {})
        if not isinstance(args, dict):
            raise InvalidReply(f"tool_calls[{k}] ({item['name']}): arguments must be a JSON object, got "
                               f'{json.dumps(args)[:80]}')
        calls.append({'id': f'call_{uuid.uuid4().hex[:12]}', 'type': 'function',
                      'function': {'name': item['name'], 'arguments': json.dumps(args, ensure_ascii=False)}})
    return calls
