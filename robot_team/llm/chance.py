"""The chance baseline: an OpenAI-compatible endpoint on loopback that answers every request at random.

Each reply is drawn uniformly at random among what the request's schema allows (a *random
chooser*, the floor any model must beat): no model, no prompt reading beyond harvesting values to
copy. :class:`ChanceServer` is the loopback :class:`~robot_team.llm.fakeserver.ScriptedServer`
with one :class:`ChancePolicy` per caller (the ``X-Robot-Team-Robot`` header):

- ``json_schema`` mode (the request has a ``response_format`` with a ``json_schema``): a JSON value
  sampled from that schema (:class:`SchemaSampler`) is the reply's content;
- native tool mode (the request has ``tools``): one offered tool, uniformly (or the one
  ``tool_choice`` names), its arguments sampled from its ``parameters``; the reply is that one
  call (every reply is a call);
- neither: a text reply, one candidate string.

What the sampler does (JSON Schema 2020-12, the keywords the team's schemas use): ``enum``,
``const``, ``anyOf``/``oneOf`` and type lists (nullable types) choose uniformly; an optional
property is present with probability 1/2; an array's length is uniform from ``minItems`` to at most
:data:`EXTRA_ITEMS` more (within ``maxItems``; ``prefixItems`` each by its own schema); an open
object (no ``properties``, ``additionalProperties`` not false) gets up to :data:`EXTRA_KEYS` keys
named after keys seen in the messages. A string without an enum is one of the request's candidate
strings (:func:`harvest`: JSON string values and keys inside messages, quoted values, tokens with a
digit such as IDs and room names, words of the non-system messages) or :data:`FIXED_WORDS`, cut to
``maxLength`` (padded to ``minLength``); a string with a ``pattern`` is a candidate the pattern
matches, ``$N``/``$N.key`` references included (``re.search``, as JSON Schema's ``pattern``). A
number without an enum is, with probability :data:`MESSAGE_NUMBER_P`, one that appears in the
messages and fits the bounds (so positions can be copied from tool results), else uniform within
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (:data:`DEFAULT_SPAN` wide past
a one-sided bound, :data:`DEFAULT_RANGE` when unbounded; ``multipleOf`` kept), rounded to
:data:`NUMBER_DIGITS` decimals. ``$ref`` to ``#/$defs/...`` or ``#/definitions/...`` is
followed, ``allOf`` merged. ``format`` is an annotation (not asserted, as in 2020-12's default).
A keyword the sampler cannot honour (``not``, ``if``, ``contains``, ``patternProperties``...), an
unsatisfiable schema or a pattern no candidate matches raises :class:`SchemaSampleError`: the
server then answers HTTP 500 naming it (visible on the record as an ``llm_error``), never a reply
outside the schema.

Seeds: reply ``k`` (from 0) to caller ``robot`` is drawn from ``random.Random('chance:<seed>:<robot>:<k>')``
(string seeds hash with SHA-512: the same in every process), so one episode with one seed replays
the same choices as far as each caller's requests are the same, whatever the order in which the
callers' requests interleave. The served model's name says so: ``chance-seed-<seed>``
(:func:`chance_model_name`).
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable

from robot_team.llm.fakeserver import ScriptedServer
from robot_team.llm.settings import LLMSettings

MODEL_PREFIX = 'chance-seed-'
"""The served model's name is this prefix and the seed (:func:`chance_model_name`)."""

FIXED_WORDS = ('ok', 'done', 'failed', 'unknown', 'none')
"""Strings always among a string's candidates, besides those harvested from the messages."""

OPTIONAL_P = 0.5
"""Probability that an optional property is present."""

MESSAGE_NUMBER_P = 0.5
"""Probability that a number is one that appears in the messages (when one fits the bounds)."""

EXTRA_ITEMS = 3
"""An array has ``minItems`` to ``minItems + EXTRA_ITEMS`` items (within ``maxItems``)."""

EXTRA_KEYS = 3
"""An open object has up to this many keys (within ``minProperties``/``maxProperties``)."""

DEFAULT_RANGE = (-100.0, 100.0)
"""Numbers without bounds: uniform in this range."""

DEFAULT_SPAN = 100.0
"""Numbers with one bound: uniform from that bound to this far past it."""

NUMBER_DIGITS = 3
"""Decimals of a number drawn uniformly (not of one copied from the messages)."""

MAX_DEPTH = 40
"""Nesting (and ``$ref`` hops) past which a schema is refused as too deep (a recursive schema)."""

MAX_RESAMPLES = 50
"""Draws tried for ``uniqueItems`` and exclusive bounds before the schema is refused."""

REFERENCE_INDICES = (1, 2, 3)
"""``$N`` indices offered as candidates of a string with a pattern (references to earlier calls of a reply)."""

UNSUPPORTED = frozenset({'not', 'if', 'then', 'else', 'contains', 'minContains', 'maxContains', 'patternProperties',
                         'propertyNames', 'dependentRequired', 'dependentSchemas', 'dependencies',
                         'unevaluatedProperties', 'unevaluatedItems', '$dynamicRef', '$recursiveRef'})
"""Keywords the sampler cannot honour: a schema using one is refused (:class:`SchemaSampleError`)."""

ANNOTATIONS = frozenset({'description', 'title', 'default', 'examples', '$comment', 'deprecated', 'readOnly',
                         'writeOnly', 'format', '$schema', '$id', '$anchor', 'discriminator'})
"""Keywords that do not constrain a value (``format``: an annotation in 2020-12's default vocabulary)."""

TYPES = ('object', 'array', 'string', 'number', 'integer', 'boolean', 'null')


class SchemaSampleError(ValueError):
    """A schema the sampler cannot draw a value from: an unsupported keyword, no value allowed, too deep.

    The message names the keyword or the part of the schema.
    """


def chance_model_name(seed: int) -> str:
    """Return the model name the chance endpoint of ``seed`` serves: ``chance-seed-<seed>``."""
    return f'{MODEL_PREFIX}{check_seed(seed)}'


def check_seed(seed: Any, what: str = 'seed') -> int:
    """Return ``seed`` if it is a seed: an integer >= 0 (not a bool).

    Raises
    ------
    ValueError
        If it is not, naming ``what`` (e.g. ``'--seed'``) and the value.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f'{what} is {seed!r}: expected an integer >= 0')
    return seed


# --- What a request offers to copy ----------------------------------------------------------------

@dataclass(frozen=True)
class Candidates:
    """Values a request's messages offer to copy, each once, in order of first appearance.

    Attributes
    ----------
    strings : tuple[str, ...]
        Candidate strings (see :func:`harvest`), :data:`FIXED_WORDS` not included.
    numbers : tuple[float | int, ...]
        Numbers that appear in the messages.
    keys : tuple[str, ...]
        Object keys of the JSON inside the messages (names for an open object's keys).
    """

    strings: tuple[str, ...] = ()
    numbers: tuple[float | int, ...] = ()
    keys: tuple[str, ...] = ()


_QUOTED = re.compile(r'"([^"\n]{1,80})"|`([^`\n]{1,80})`|\'([^\'\s]{1,80})\'')
_TOKEN = re.compile(r'#?[A-Za-z0-9_][A-Za-z0-9_.#/-]*')
_WORD = re.compile(r'[A-Za-z][A-Za-z_-]{2,}')
_NUMBER = re.compile(r'(?<![\w.])-?\d+(?:\.\d+)?(?![\w])')
_IDENTIFIER = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
MAX_CANDIDATE_CHARS = 200
"""Longer strings found in the messages are not candidates."""


def _texts(message: dict) -> list[str]:
    """Return the text of a chat message: its content (a string or text parts) and its tool calls' arguments."""
    content = message.get('content')
    texts: list = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts += [part.get('text') for part in content if isinstance(part, dict)]
    for call in message.get('tool_calls') or []:
        if isinstance(call, dict) and isinstance(call.get('function'), dict):
            texts.append(call['function'].get('arguments'))
    return [t for t in texts if isinstance(t, str) and t]


def _json_values(text: str) -> list[Any]:
    """Return the JSON objects and arrays that appear in ``text`` (outermost ones, in order)."""
    decoder = json.JSONDecoder()
    found, index = [], 0
    while True:
        starts = [i for i in (text.find('{', index), text.find('[', index)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        found.append(value)
        index = end


def _walk(value: Any, strings: dict, numbers: dict, keys: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            keys.setdefault(str(key), None)
            strings.setdefault(str(key), None)
            _walk(item, strings, numbers, keys)
    elif isinstance(value, list):
        for item in value:
            _walk(item, strings, numbers, keys)
    elif isinstance(value, str):
        if value and len(value) <= MAX_CANDIDATE_CHARS:
            strings.setdefault(value, None)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        numbers.setdefault(value, None)


def harvest(messages: Iterable[dict]) -> Candidates:
    """Return what ``messages`` (chat messages) offer to copy: strings, numbers and keys (see :class:`Candidates`).

    Strings: the string values and keys of the JSON inside any message (tool results, replies written as
    JSON), quoted values (``"..."``, backticks, single-quoted words), tokens holding a digit (IDs such as
    ``#80`` and ``80``, rooms such as ``ER-12``, task IDs), and the words of every message but the system's.
    Numbers: those of the JSON, and numbers written in the text. Nothing is a decision of the team: this is
    the chance model copying what it read.
    """
    strings: dict[str, None] = {}
    numbers: dict[float | int, None] = {}
    keys: dict[str, None] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        for text in _texts(message):
            for value in _json_values(text):
                _walk(value, strings, numbers, keys)
            for match in _QUOTED.finditer(text):
                strings.setdefault(next(g for g in match.groups() if g is not None), None)
            for token in _TOKEN.findall(text):
                token = token.rstrip('.-/')
                if any(c.isdigit() for c in token):
                    strings.setdefault(token, None)
                    if token.startswith('#') and len(token) > 1:
                        strings.setdefault(token[1:], None)
            if message.get('role') != 'system':
                for word in _WORD.findall(text):
                    strings.setdefault(word, None)
            for number in _NUMBER.findall(text):
                value = float(number)
                numbers.setdefault(int(value) if value.is_integer() and '.' not in number else value, None)
    return Candidates(strings=tuple(s for s in strings if len(s) <= MAX_CANDIDATE_CHARS), numbers=tuple(numbers),
                      keys=tuple(keys))


# --- Sampling a JSON value within a schema ------------------------------------------------------------

def _json_type(value: Any) -> str:
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'integer' if value.is_integer() else 'number'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, list):
        return 'array'
    return 'object'


def _has_type(value: Any, kind: str | list) -> bool:
    """Return whether ``value`` is of JSON type ``kind`` (or one of a list; an integer is a number)."""
    kinds = kind if isinstance(kind, list) else [kind]
    actual = _json_type(value)
    return actual in kinds or (actual == 'integer' and 'number' in kinds)


def _merge(base: dict, other: dict, where: str) -> dict:
    """Return ``base`` and ``other`` as one schema (both must hold); annotations of ``base`` are dropped.

    ``properties`` are merged (a shared property must be the same schema), ``required`` joined.

    Raises
    ------
    SchemaSampleError
        If both constrain the same keyword differently.
    """
    out = dict(other)
    for key, value in base.items():
        if key in ANNOTATIONS or key not in out:
            if key not in ANNOTATIONS:
                out[key] = value
            continue
        if key == 'properties':
            merged = dict(out[key])
            for name, spec in value.items():
                if name in merged and merged[name] != spec:
                    raise SchemaSampleError(f'{where}: property {name!r} has two different schemas')
                merged[name] = spec
            out[key] = merged
        elif key == 'required':
            out[key] = list(dict.fromkeys([*value, *out[key]]))
        elif key == 'type':
            ours = value if isinstance(value, list) else [value]
            theirs = out[key] if isinstance(out[key], list) else [out[key]]
            both = [t for t in theirs if t in ours or (t == 'integer' and 'number' in ours)]
            both += ['integer' for t in ours if t == 'integer' and 'number' in theirs and 'integer' not in both]
            if not both:
                raise SchemaSampleError(f'{where}: types {ours} and {theirs} have no value in common')
            out[key] = both[0] if len(both) == 1 else both
        elif out[key] != value:
            raise SchemaSampleError(f'{where}: keyword {key!r} is constrained twice differently '
                                    f'({json.dumps(value)[:60]} and {json.dumps(out[key])[:60]})')
    return out


class SchemaSampler:
    """Draws JSON values at random within a JSON schema (see the module docstring for how).

    Parameters
    ----------
    rng
        The random source (every draw comes from it, in a fixed order: same seed, same values).
    candidates
        What the request offers to copy (:func:`harvest`).
    root
        The schema ``$ref`` pointers resolve against (default: the schema given to :meth:`sample`).
    """

    def __init__(self, rng: random.Random, candidates: Candidates = Candidates(), root: dict | None = None):
        self.rng = rng
        self.candidates = candidates
        self.root = root
        self._strings = tuple(dict.fromkeys([*candidates.strings, *FIXED_WORDS]))

    def sample(self, schema: Any) -> Any:
        """Return a value ``schema`` allows (a JSON-serializable Python value).

        Raises
        ------
        SchemaSampleError
            If the schema uses a keyword the sampler cannot honour, allows no value the sampler can
            find, or nests deeper than :data:`MAX_DEPTH`.
        """
        if self.root is None and isinstance(schema, dict):
            self.root = schema
        return self._sample(schema, 0, '#')

    # -- dispatch --

    def _sample(self, schema: Any, depth: int, where: str) -> Any:
        if depth > MAX_DEPTH:
            raise SchemaSampleError(f'{where}: the schema nests deeper than {MAX_DEPTH} levels (a recursive $ref?)')
        if schema is True:
            return self._free()
        if schema is False:
            raise SchemaSampleError(f'{where}: the schema false allows no value')
        if not isinstance(schema, dict):
            raise SchemaSampleError(f'{where}: a schema must be an object or a boolean, got {json.dumps(schema)[:60]}')
        unsupported = sorted(UNSUPPORTED & set(schema))
        if unsupported:
            raise SchemaSampleError(f"{where}: keyword {unsupported[0]!r} is not supported by the chance sampler")
        if '$ref' in schema:
            rest = {k: v for k, v in schema.items() if k != '$ref'}
            target = self._resolve(schema['$ref'], where)
            return self._sample(_merge(rest, target, where) if rest else target, depth + 1, schema['$ref'])
        if 'allOf' in schema:
            merged = {k: v for k, v in schema.items() if k != 'allOf'}
            for k, part in enumerate(schema['allOf']):
                part = self._deref(part, where, depth)
                merged = _merge(merged, part, f'{where}/allOf/{k}')
            return self._sample(merged, depth + 1, where)
        for key in ('anyOf', 'oneOf'):
            if key in schema:
                return self._branch(schema, key, depth, where)
        if 'const' in schema:
            return copy.deepcopy(schema['const'])
        if 'enum' in schema:
            values = [v for v in schema['enum'] if 'type' not in schema or _has_type(v, schema['type'])]
            if not values:
                raise SchemaSampleError(f'{where}: the enum offers no value of its type')
            return copy.deepcopy(self.rng.choice(values))
        kind = schema.get('type')
        if isinstance(kind, list):
            return self._branch({**schema, 'anyOf': [{'type': k} for k in kind]}, 'anyOf', depth, where,
                                drop=('type',))
        if kind is None:
            kind = self._infer(schema)
            if kind is None:
                return self._free()
        handler = {'object': self._object, 'array': self._array, 'string': self._string, 'number': self._number,
                   'integer': self._number, 'boolean': lambda s, d, w: self.rng.random() < 0.5,
                   'null': lambda s, d, w: None}.get(kind)
        if handler is None:
            raise SchemaSampleError(f'{where}: unknown type {kind!r} (expected one of {", ".join(TYPES)})')
        return handler(schema, depth, where)

    def _resolve(self, ref: str, where: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith('#'):
            raise SchemaSampleError(f'{where}: $ref {ref!r} is not supported (only pointers into the same schema)')
        node: Any = self.root
        for part in [p for p in ref[1:].split('/') if p]:
            part = part.replace('~1', '/').replace('~0', '~')
            if not isinstance(node, dict) or part not in node:
                raise SchemaSampleError(f'{where}: $ref {ref!r} points at nothing')
            node = node[part]
        return node

    def _deref(self, schema: Any, where: str, depth: int) -> Any:
        while isinstance(schema, dict) and '$ref' in schema and len(schema) == 1:
            depth += 1
            if depth > MAX_DEPTH:
                raise SchemaSampleError(f'{where}: $ref chain deeper than {MAX_DEPTH}')
            schema = self._resolve(schema['$ref'], where)
        return schema

    def _branch(self, schema: dict, key: str, depth: int, where: str, drop: tuple = ()) -> Any:
        """Sample one of the alternatives of ``key`` (uniformly; an alternative that allows nothing is skipped)."""
        rest = {k: v for k, v in schema.items() if k != key and k not in drop}
        branches = list(schema[key])
        if not branches:
            raise SchemaSampleError(f'{where}: {key} has no alternative')
        order = list(range(len(branches)))
        self.rng.shuffle(order)
        errors = []
        for k in order:
            branch = self._deref(branches[k], where, depth)
            if branch is True:
                branch = {}
            if branch is False:
                errors.append(f'{key}/{k}: false')
                continue
            try:
                return self._sample(_merge(rest, branch, f'{where}/{key}/{k}') if rest else branch, depth + 1,
                                    f'{where}/{key}/{k}')
            except SchemaSampleError as exc:
                errors.append(str(exc))
        raise SchemaSampleError(f'{where}: no alternative of {key} allows a value: ' + '; '.join(errors))

    @staticmethod
    def _infer(schema: dict) -> str | None:
        keys = set(schema)
        if keys & {'properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties'}:
            return 'object'
        if keys & {'items', 'prefixItems', 'minItems', 'maxItems', 'uniqueItems'}:
            return 'array'
        if keys & {'minLength', 'maxLength', 'pattern'}:
            return 'string'
        if keys & {'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'}:
            return 'number'
        return None

    def _free(self) -> Any:
        """Return any scalar: a candidate string, a number, a boolean or null (uniformly by type)."""
        kind = self.rng.choice(('string', 'number', 'boolean', 'null'))
        return self._sample({'type': kind}, 0, '#(any value)')

    # -- types --

    def _object(self, schema: dict, depth: int, where: str) -> dict:
        props: dict = schema.get('properties') or {}
        required = list(dict.fromkeys(schema.get('required') or []))
        extra = schema.get('additionalProperties', True)
        lo = int(schema.get('minProperties', 0))
        hi = schema.get('maxProperties')
        keys = [name for name in props if name in required or self.rng.random() < OPTIONAL_P]
        keys += [name for name in required if name not in props]
        optional = [name for name in props if name not in keys]
        while hi is not None and len(keys) > hi:
            dropped = [k for k in keys if k not in required]
            if not dropped:
                raise SchemaSampleError(f'{where}: {len(required)} required properties exceed maxProperties {hi}')
            keys.remove(self.rng.choice(dropped))
        while len(keys) < lo and optional:
            keys.append(optional.pop(self.rng.randrange(len(optional))))
        out: dict = {}
        for name in keys:
            spec = props.get(name, extra if extra is not True else {})
            if spec is False:
                raise SchemaSampleError(f'{where}: property {name!r} is required but not allowed')
            out[name] = self._sample(spec if spec != {} else True, depth + 1, f'{where}/properties/{name}')
        if 'properties' not in schema and extra is not False:
            room = (hi if hi is not None else len(out) + EXTRA_KEYS) - len(out)
            low = max(0, lo - len(out))
            count = self.rng.randint(low, max(low, min(room, EXTRA_KEYS)))
            names = [k for k in dict.fromkeys([*self.candidates.keys, 'note', 'value', 'detail', 'item'])
                     if k not in out and _IDENTIFIER.match(k)]
            for name in self.rng.sample(names, min(count, len(names))):
                out[name] = self._sample(extra if extra is not True else True, depth + 1,
                                         f'{where}/additionalProperties')
        if len(out) < lo:
            raise SchemaSampleError(f'{where}: minProperties {lo} cannot be met')
        return out

    def _array(self, schema: dict, depth: int, where: str) -> list:
        prefix = list(schema.get('prefixItems') or [])
        items = schema.get('items', True)
        lo = int(schema.get('minItems', 0))
        hi = schema.get('maxItems')
        top = lo + EXTRA_ITEMS
        if 'items' not in schema and prefix:
            top = max(lo, len(prefix))          # beyond the prefix only what the schema left unconstrained
        if items is False:
            top = min(top, len(prefix))
        if hi is not None:
            top = min(top, int(hi))
        if top < lo:
            raise SchemaSampleError(f'{where}: minItems {lo} cannot be met (at most {top} items allowed)')
        for _ in range(MAX_RESAMPLES):
            n = self.rng.randint(lo, top)
            out = [self._sample(prefix[k] if k < len(prefix) else (items if items != {} else True), depth + 1,
                                f'{where}/{"prefixItems" if k < len(prefix) else "items"}/{k}') for k in range(n)]
            if not schema.get('uniqueItems') or len({json.dumps(v, sort_keys=True) for v in out}) == len(out):
                return out
        raise SchemaSampleError(f'{where}: no {lo} to {top} unique items found in {MAX_RESAMPLES} draws')

    def _string(self, schema: dict, depth: int, where: str) -> str:
        lo = int(schema.get('minLength', 0))
        hi = schema.get('maxLength')
        pool = list(self._strings)
        pattern = schema.get('pattern')
        if pattern is not None:
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise SchemaSampleError(f'{where}: pattern {pattern!r} is not a regular expression: {exc}') from None
            references = [f'${n}' for n in REFERENCE_INDICES]
            references += [f'${n}.{key}' for n in REFERENCE_INDICES for key in self.candidates.keys
                           if _IDENTIFIER.match(key)]
            pool = [s for s in dict.fromkeys([*pool, *references])
                    if regex.search(s) and lo <= len(s) and (hi is None or len(s) <= hi)]
            if not pool:
                raise SchemaSampleError(f'{where}: no candidate string matches pattern {pattern!r} '
                                        f'(length {lo} to {hi if hi is not None else "any"})')
            return self.rng.choice(pool)
        if hi is not None and int(hi) < lo:
            raise SchemaSampleError(f'{where}: maxLength {hi} is below minLength {lo}')
        cut = list(dict.fromkeys(v[:int(hi)] if hi is not None else v for v in pool))
        fitting = [v for v in cut if len(v) >= lo]
        if fitting:
            return self.rng.choice(fitting)
        base = self.rng.choice(cut) or 'x'     # none long enough: one repeated to minLength
        return (base * (lo // len(base) + 1))[:lo]

    def _bounds(self, schema: dict, where: str) -> tuple[float | None, bool, float | None, bool]:
        """Return (low, low exclusive, high, high exclusive); draft-4 boolean exclusives are read too."""
        lo, hi = schema.get('minimum'), schema.get('maximum')
        lo_ex = hi_ex = False
        ex_lo, ex_hi = schema.get('exclusiveMinimum'), schema.get('exclusiveMaximum')
        if isinstance(ex_lo, bool):
            lo_ex = ex_lo and lo is not None
        elif ex_lo is not None and (lo is None or ex_lo >= lo):
            lo, lo_ex = ex_lo, True
        if isinstance(ex_hi, bool):
            hi_ex = ex_hi and hi is not None
        elif ex_hi is not None and (hi is None or ex_hi <= hi):
            hi, hi_ex = ex_hi, True
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
            raise SchemaSampleError(f'{where}: no number lies within the bounds ({lo}, {hi})')
        return lo, lo_ex, hi, hi_ex

    def _number(self, schema: dict, depth: int, where: str) -> float | int:
        integer = schema.get('type') == 'integer'
        lo, lo_ex, hi, hi_ex = self._bounds(schema, where)
        step = schema.get('multipleOf')

        def fits(x: float) -> bool:
            return ((lo is None or x > lo or (x == lo and not lo_ex))
                    and (hi is None or x < hi or (x == hi and not hi_ex))
                    and (not integer or float(x).is_integer())
                    and (not step or abs(x / step - round(x / step)) < 1e-9))
        copied = [x for x in self.candidates.numbers if fits(x)]
        if copied and self.rng.random() < MESSAGE_NUMBER_P:
            x = self.rng.choice(copied)
            return int(x) if integer else x
        if lo is None and hi is None:
            low, high = DEFAULT_RANGE
        else:
            low = lo if lo is not None else hi - DEFAULT_SPAN
            high = hi if hi is not None else lo + DEFAULT_SPAN
        if integer or step:
            unit = step or 1
            first = math.ceil(low / unit)
            last = math.floor(high / unit)
            choices = [k for k in (first, first + 1, last - 1, last) if fits(k * unit)]
            if not choices:
                raise SchemaSampleError(f'{where}: no {"integer" if integer else "multiple of " + str(step)} '
                                        f'lies within the bounds ({lo}, {hi})')
            first, last = min(choices), max(choices)
            for _ in range(MAX_RESAMPLES):
                x = self.rng.randint(first, last) * unit
                if fits(x):
                    return int(x) if integer else x
            raise SchemaSampleError(f'{where}: no number found within the bounds ({lo}, {hi})')
        for _ in range(MAX_RESAMPLES):
            x = round(self.rng.uniform(low, high), NUMBER_DIGITS)
            if fits(x):
                return x
        x = (low + high) / 2
        if fits(x):
            return x
        raise SchemaSampleError(f'{where}: no number found within the bounds ({lo}, {hi})')


def sample_value(schema: Any, rng: random.Random, candidates: Candidates = Candidates()) -> Any:
    """Return a value drawn at random within ``schema`` (see :class:`SchemaSampler`).

    Raises
    ------
    SchemaSampleError
        As :meth:`SchemaSampler.sample`.
    """
    return SchemaSampler(rng, candidates).sample(schema)


# --- The endpoint ---------------------------------------------------------------------------------------

def _call_id(rng: random.Random) -> str:
    return f'call_{rng.getrandbits(48):012x}'


def chance_reply(body: dict, rng: random.Random) -> dict:
    """Return the random chooser's assistant message for one chat-completions request ``body``.

    ``json_schema`` response format: ``content`` is a JSON value drawn from its schema; ``tools``: one
    ``tool_calls`` entry, a tool drawn uniformly (or the one ``tool_choice`` names; ``tool_choice``
    ``'none'``: text) with arguments drawn from its ``parameters``; otherwise text, one candidate string.

    Raises
    ------
    SchemaSampleError
        If the schema cannot be sampled (the server answers HTTP 500 naming it).
    """
    candidates = harvest(body.get('messages') or [])
    fmt = body.get('response_format') or {}
    if isinstance(fmt, dict) and fmt.get('type') == 'json_schema':
        schema = (fmt.get('json_schema') or {}).get('schema')
        if schema is None:
            raise SchemaSampleError("response_format json_schema has no 'schema'")
        value = SchemaSampler(rng, candidates).sample(schema)
        return {'role': 'assistant', 'content': json.dumps(value, ensure_ascii=False)}
    tools = [t for t in body.get('tools') or [] if isinstance(t, dict) and isinstance(t.get('function'), dict)]
    choice = body.get('tool_choice')
    if tools and choice != 'none':
        if isinstance(choice, dict) and (choice.get('function') or {}).get('name'):
            named = [t for t in tools if t['function'].get('name') == choice['function']['name']]
            if not named:
                raise SchemaSampleError(f"tool_choice names {choice['function']['name']!r}, which is not offered")
            tools = named
        tool = rng.choice(tools)['function']
        params = tool.get('parameters') or {'type': 'object', 'properties': {}}
        args = SchemaSampler(rng, candidates).sample(params)
        return {'role': 'assistant', 'content': None, 'tool_calls': [
            {'id': _call_id(rng), 'type': 'function',
             'function': {'name': tool['name'], 'arguments': json.dumps(args, ensure_ascii=False)}}]}
    if isinstance(fmt, dict) and fmt.get('type') == 'json_object':
        return {'role': 'assistant', 'content': '{}'}
    return {'role': 'assistant', 'content': rng.choice(tuple(dict.fromkeys([*candidates.strings, *FIXED_WORDS])))}


class ChancePolicy:
    """One caller's random chooser: reply ``k`` drawn from ``random.Random('chance:<seed>:<robot>:<k>')``.

    Callable as a :data:`~robot_team.llm.fakeserver.Policy` (request body -> assistant message).

    Attributes
    ----------
    seed : int
    robot : str
        The caller (the ``X-Robot-Team-Robot`` header).
    replies : int
        Requests answered so far (the next reply's ``k``).
    """

    def __init__(self, seed: int, robot: str):
        self.seed = check_seed(seed)
        self.robot = robot
        self.replies = 0
        self._lock = threading.Lock()

    def rng(self, k: int) -> random.Random:
        """Return the random source of reply ``k`` (from 0)."""
        return random.Random(f'chance:{self.seed}:{self.robot}:{k}')

    def __call__(self, body: dict) -> dict:
        """Return the next reply to ``body`` (see :func:`chance_reply`)."""
        with self._lock:
            k = self.replies
            self.replies += 1
        return chance_reply(body, self.rng(k))


class ChanceServer(ScriptedServer):
    """The chance endpoint: a loopback OpenAI-compatible server answering every caller at random; a context manager.

    Parameters
    ----------
    seed
        The seed (integer >= 0): every caller's stream derives from it (:class:`ChancePolicy`).
    usage
        As :class:`~robot_team.llm.fakeserver.ScriptedServer` (``'none'``: the client counts tokens).

    Attributes
    ----------
    seed : int
    model : str
        The served model's name, ``chance-seed-<seed>`` (the requests name it; the replies echo it).
    base_url : str
        ``http://127.0.0.1:<port>/v1`` once started.
    startup_s : float
        Always 0.0 (nothing to load); for reports shaped like the local endpoint's.

    Raises
    ------
    ValueError
        From the constructor, if ``seed`` is not an integer >= 0.
    """

    def __init__(self, seed: int = 0, usage: str = 'none'):
        super().__init__({}, usage=usage)
        self.seed = check_seed(seed)
        self.model = chance_model_name(self.seed)
        self.startup_s = 0.0

    def policy_for(self, robot: str) -> ChancePolicy:
        """Return ``robot``'s chooser, made at its first request."""
        with self._lock:
            policy = self.policies.get(robot)
            if policy is None:
                policy = self.policies[robot] = ChancePolicy(self.seed, robot)
            return policy

    def replies(self) -> dict[str, int]:
        """Return the requests answered per caller."""
        with self._lock:
            return {robot: policy.replies for robot, policy in self.policies.items()}

    def start(self) -> 'ChanceServer':
        """Start serving on 127.0.0.1 (a free port)."""
        super().start()
        return self

    def __enter__(self) -> 'ChanceServer':
        """Start the server."""
        return self.start()


def chance_settings(base_url: str, settings: LLMSettings | None = None, model: str = '') -> LLMSettings:
    """Return LLM settings that send every brain to the chance endpoint at ``base_url``.

    Model ``model`` (default ``chance-seed-0``), ``tool_calls: json_schema`` (the schema is the offer:
    each reply is drawn within it), no API key; other values (retries, steps, decoding, KB...) from
    ``settings`` (default: the configured ones). Per-robot endpoint, model and tool-call overrides
    are dropped: one endpoint serves every brain. Its model is priced at 0 unless ``prices`` lists it.
    """
    base = settings or LLMSettings()
    robots = {name: over.model_copy(update={'model': None, 'base_url': None, 'api_key': None, 'tool_calls': None})
              for name, over in base.robots.items()}
    return base.model_copy(update={'base_url': base_url, 'api_key': None, 'model': model or chance_model_name(0),
                                   'tool_calls': 'json_schema', 'robots': robots})
