"""A chat client around the real ``openai`` client: retries, token and cost accounting, events, cassettes.

:class:`ChatClient` sends one chat-completions request with tools and returns the assistant
message as a plain dict. It retries timeouts, rate limits (429), server errors (5xx),
connection errors and garbage replies with exponential backoff; other client errors (400,
401, 404...) are not retried. Every request, reply and error is recorded as an event
(``llm_request``, ``llm_reply``, ``llm_error``) with the robot, model, tokens in and out, cost,
latency, message count and tool calls; requests carry what was sent (message digests plus the
messages not sent before) and replies the full reply (:mod:`robot_team.llm.record`). Token counts
come from the reply's ``usage``, else from tiktoken (:mod:`robot_team.llm.tokens`). ``max_tokens``
is always sent. With ``tool_calls: json_schema`` the tools go as a strict ``response_format``
and the reply's JSON is parsed into the same tool calls (:mod:`robot_team.llm.jsonschema_calls`);
a reply that is not such JSON is recorded as an ``invalid_call`` and returned as text.

Requests run through ``openai.AsyncOpenAI`` on the calling thread (:mod:`robot_team.llm.inflight`)
so that :meth:`ChatClient.cancel` and :meth:`ChatClient.close` end a request in flight from any
thread at once (recorded as an ``llm_error`` with ``cancelled: true``, never retried, raised as
:class:`LLMCancelled`): a request never outlives its episode.

Record/replay: with a cassette (JSONL, one ``{"key", "robot", "request", "reply"}`` per line),
``record`` mode appends every successful exchange with a real endpoint; ``replay`` mode
answers from the file without any network (by request hash; when a conversation differs,
e.g. in sim timestamps, the robot's next unused recording in order).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, ContextManager

from robot_team.contracts.events import EventKind, invalid_call
from robot_team.llm import jsonschema_calls, record
from robot_team.llm.inflight import RequestCancelled, Requests
from robot_team.llm.settings import STALL_TIMEOUT_S, LLMSettings, ResolvedLLM
from robot_team.llm.tokens import count_completion, count_prompt, encoding

Emit = Callable[..., Any]
"""Event emitter: ``emit(kind, summary, *, target='', reason='', **data)`` (an EventEmitter's ``emit``)."""


def no_emit(*_args, **_kwargs) -> None:
    """Record nothing: the :data:`Emit` of a brain made without an event emitter."""
    return None


class LLMUnavailable(RuntimeError):
    """The endpoint did not give a usable reply after the retries (or refused the request)."""


class LLMCancelled(RuntimeError):
    """The request was cancelled (the episode ended, or the brain was replaced): stop, do not fall back."""


class GarbageReply(ValueError):
    """A reply that is not a chat completion with one assistant message."""


class ChatResult:
    """One assistant reply and its accounting.

    Attributes
    ----------
    message : dict
        ``{'role': 'assistant', 'content': str | None, 'tool_calls': [{'id', 'type',
        'function': {'name', 'arguments'}}]}`` (``tool_calls`` only when there are some).
    prompt_tokens, completion_tokens : int
    tokens_source : str
        ``'endpoint'`` (the reply's usage) or ``'tiktoken'``.
    cost_usd : float
    latency_s : float
        Wall seconds of the successful attempt.
    attempts : int
    """

    def __init__(self, message: dict, prompt_tokens: int, completion_tokens: int, tokens_source: str,
                 cost_usd: float, latency_s: float, attempts: int, model: str):
        self.message = message
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.tokens_source = tokens_source
        self.cost_usd = cost_usd
        self.latency_s = latency_s
        self.attempts = attempts
        self.model = model

    @property
    def tool_calls(self) -> list[dict]:
        """Return the reply's tool calls (possibly empty)."""
        return self.message.get('tool_calls') or []


def _request_key(robot: str, model: str, messages: list[dict], tools: list[dict] | None) -> str:
    canonical = json.dumps({'robot': robot, 'model': model, 'messages': messages, 'tools': tools},
                           sort_keys=True, separators=(',', ':'), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


class Cassette:
    """Recorded exchanges (JSONL) shared by every robot of a process.

    Parameters
    ----------
    path
        The JSONL file.
    mode
        ``'record'`` (append) or ``'replay'`` (read; missing file raises).

    Raises
    ------
    FileNotFoundError
        In replay mode, if ``path`` does not exist.
    """

    _instances: dict[tuple[str, str], 'Cassette'] = {}
    _class_lock = threading.Lock()

    def __init__(self, path: str | Path, mode: str):
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._entries: list[dict] = []
        self._used: set[int] = set()
        if mode == 'replay':
            for line in self.path.read_text(encoding='utf-8').splitlines():
                if line.strip():
                    self._entries.append(json.loads(line))
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def open(cls, path: str | Path, mode: str) -> 'Cassette':
        """Return the process-wide cassette of ``path`` in ``mode`` (one per file and mode)."""
        key = (str(Path(path).resolve()), mode)
        with cls._class_lock:
            if key not in cls._instances:
                cls._instances[key] = cls(path, mode)
            return cls._instances[key]

    def record(self, key: str, robot: str, request: dict, reply: dict) -> None:
        """Append one exchange."""
        line = json.dumps({'key': key, 'robot': robot, 'request': request, 'reply': reply}, default=str)
        with self._lock, self.path.open('a', encoding='utf-8') as f:
            f.write(line + '\n')

    def find(self, key: str, robot: str) -> tuple[dict, bool] | None:
        """Return ``(reply, exact)`` for a request: by hash, else ``robot``'s next unused recording."""
        with self._lock:
            for index, entry in enumerate(self._entries):
                if index not in self._used and entry['key'] == key:
                    self._used.add(index)
                    return entry['reply'], True
            for index, entry in enumerate(self._entries):
                if index not in self._used and entry.get('robot') == robot:
                    self._used.add(index)
                    return entry['reply'], False
        return None


class ChatClient:
    """Chat completions for one robot, through the ``openai`` client.

    Parameters
    ----------
    settings
        Team-wide LLM settings; the robot's overrides are applied.
    robot
        Who asks (recorded in every event; sent as header ``X-Robot-Team-Robot``).
    emit
        Event emitter (``None``: record nothing).
    sleep
        Called with the backoff delay in seconds (tests may pass a no-op); default: a wait that
        :meth:`cancel` interrupts.
    hold
        Called around each :meth:`chat` (its attempts and backoff): returns a context manager,
        e.g. a sim-clock hold in lockstep (:mod:`robot_team.llm.lockstep`). Default: none.

    Attributes
    ----------
    totals : dict
        ``requests``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``, ``errors``.
    holds_sim_time : bool
        Whether each request holds sim time (a ``hold`` was given: the lockstep LLM clock), so the
        model's wall speed costs no sim time and no wall budget applies: a request is then cut off
        only as stalled, after :data:`~robot_team.llm.settings.STALL_TIMEOUT_S` (or the endpoint's
        ``timeout_s`` if longer), not at the endpoint's ``timeout_s``.
    timeout_s : float
        The per-request timeout in force, wall s.
    """

    def __init__(self, settings: LLMSettings, robot: str, emit: Emit | None = None,
                 sleep: Callable[[float], None] | None = None, hold: Callable[[], ContextManager] | None = None):
        self.settings = settings
        self._hold = hold or contextlib.nullcontext
        self.holds_sim_time = hold is not None
        self._record = record.ExchangeRecord()
        self.resolved: ResolvedLLM = settings.for_robot(robot)
        self.timeout_s = (max(self.resolved.timeout_s, STALL_TIMEOUT_S) if self.holds_sim_time
                          else self.resolved.timeout_s)
        self.robot = robot
        self._emit = emit
        self._requests = Requests(self._make_openai)
        self._sleep = sleep or self._requests.wait
        self.cassette = (Cassette.open(settings.cassette, settings.cassette_mode)
                         if settings.cassette and settings.cassette_mode != 'off' else None)
        self.totals = {'requests': 0, 'prompt_tokens': 0, 'completion_tokens': 0, 'cost_usd': 0.0, 'errors': 0}
        # Pay the start-up costs (openai's import, the token encoding, the HTTP client) now, while the
        # node starts, not in the first request, while sim time runs and the supervisor's deadlines with it.
        encoding()
        if not (self.cassette is not None and self.cassette.mode == 'replay'):
            self._requests.prepare()

    def _make_openai(self):
        import openai   # optional dependency (robot_team[llm]): a team of protocol brains never loads it
        r = self.resolved
        client = openai.AsyncOpenAI(
            api_key=r.api_key.get_secret_value() if r.api_key else 'not-needed',
            base_url=r.base_url or None, timeout=self.timeout_s, max_retries=0,
            default_headers={'X-Robot-Team-Robot': self.robot})
        client.chat.completions   # noqa: B018 - imports the lazily loaded resources now
        return client

    def cancel(self) -> None:
        """End the request in flight (and refuse new ones until :meth:`reset`); any thread."""
        self._requests.cancel()

    def reset(self) -> None:
        """Accept requests again after :meth:`cancel` (a robot's next task)."""
        self._requests.reset()

    def close(self) -> None:
        """Cancel for good and release the HTTP client and its event loop; any thread."""
        self._requests.close()

    def chat(self, messages: list[dict], tools: list[dict] | None = None, *,
             tool_choice: str | None = None, offered: dict | None = None) -> ChatResult:
        """Send ``messages`` (and ``tools``, OpenAI function schemas) and return the reply.

        ``offered`` (:meth:`robot_team.llm.decoding.Offer.record`) is recorded in each
        ``llm_request`` event: what the model chose from.

        Raises
        ------
        LLMUnavailable
            If every attempt failed (timeouts, 429, 5xx, connection errors, garbage), a
            non-retryable error came back (e.g. 400, 401), or a replay has no recording left.
        """
        with self._hold():
            return self._chat(messages, tools, tool_choice, offered)

    def _chat(self, messages: list[dict], tools: list[dict] | None, tool_choice: str | None,
              offered: dict | None = None) -> ChatResult:
        r = self.resolved
        schema_mode = bool(tools) and r.tool_calls == 'json_schema'
        request: dict[str, Any] = {'model': r.model, 'temperature': r.temperature, 'max_tokens': r.max_tokens}
        if schema_mode:
            request['messages'] = jsonschema_calls.convert_messages(messages, tools)
            request['response_format'] = jsonschema_calls.response_format(tools, r.calls_per_request)
        else:
            request['messages'] = messages
            if tools:
                request['tools'] = tools
                if tool_choice:
                    request['tool_choice'] = tool_choice
        key = _request_key(self.robot, r.model, request['messages'], request.get('tools') or
                           request.get('response_format'))
        estimate = count_prompt(request['messages'], request.get('tools'))
        base = {'robot': self.robot, 'model': r.model, 'n_messages': len(messages), 'n_tools': len(tools or [])}
        offer = {} if offered is None else {'offered': offered}
        last_error = ''
        for attempt in range(1, r.max_retries + 2):
            if self._requests.cancelled:
                raise LLMCancelled(f'{self.robot}: LLM requests cancelled (last error: {last_error or "none"})')
            self._event(EventKind.LLM_REQUEST, f'{self.robot} asks {r.model} ({len(messages)} messages)',
                        **base, **offer, attempt=attempt, prompt_tokens=estimate, completion_tokens=0, cost_usd=0.0,
                        latency_s=0.0, tool_calls=[], tool_call_mode=r.tool_calls if tools else None,
                        **self._record.request_fields(request))
            start = time.perf_counter()
            try:
                raw, source = self._send(request, key)
                message, usage, finish = _parse(raw, allow_empty=schema_mode)
            except Exception as exc:  # noqa: BLE001 - classified below
                latency = time.perf_counter() - start
                retryable, last_error = _classify(exc)
                if isinstance(exc, RequestCancelled) or self._requests.cancelled:
                    self.totals['errors'] += 1
                    self._event(EventKind.LLM_ERROR, f'{self.robot}: request to {r.model} cancelled',
                                reason=f'cancelled: {last_error}', **base, attempt=attempt, retryable=False,
                                cancelled=True, retry_in_s=None, prompt_tokens=0, completion_tokens=0,
                                cost_usd=0.0, latency_s=round(latency, 4), tool_calls=[])
                    raise LLMCancelled(f'{self.robot}: request to {r.model} cancelled') from None
                delay = min(r.backoff_max_s, r.backoff_s * 2 ** (attempt - 1))
                will_retry = retryable and attempt <= r.max_retries
                self.totals['errors'] += 1
                self._event(EventKind.LLM_ERROR, f'{self.robot}: {r.model} failed ({last_error})',
                            reason=last_error, **base, attempt=attempt, retryable=retryable,
                            retry_in_s=delay if will_retry else None, prompt_tokens=0, completion_tokens=0,
                            cost_usd=0.0, latency_s=round(latency, 4), tool_calls=[])
                if not will_retry:
                    break
                self._sleep(delay)
                continue
            latency = time.perf_counter() - start
            written, invalid = message.get('content'), ''
            if schema_mode:
                message, invalid = _schema_calls(message, finish, r.max_tokens)
            if usage and isinstance(usage.get('prompt_tokens'), int):
                prompt, completion, counted = usage['prompt_tokens'], int(usage.get('completion_tokens') or 0), \
                    'endpoint'
            else:
                prompt, completion, counted = estimate, count_completion(message), 'tiktoken'
            cost = r.price.cost(prompt, completion)
            self.totals['requests'] += 1
            self.totals['prompt_tokens'] += prompt
            self.totals['completion_tokens'] += completion
            self.totals['cost_usd'] += cost
            calls = [c['function']['name'] for c in message.get('tool_calls') or []]
            self._event(EventKind.LLM_REPLY, f"{self.robot} got {', '.join(calls) or 'text'} from {r.model}",
                        **base, attempt=attempt, prompt_tokens=prompt, completion_tokens=completion,
                        tokens_source=counted, cost_usd=round(cost, 8), latency_s=round(latency, 4),
                        tool_calls=calls, source=source,
                        **record.reply_fields(message, finish, usage, written if schema_mode else None))
            if invalid:
                invalid_call(self._emit, self.robot, '', 'invalid_reply', invalid, written or '',
                             finish_reason=finish, model=r.model)
            return ChatResult(message, prompt, completion, counted, cost, latency, attempt, r.model)
        raise LLMUnavailable(f'{r.model} at {r.base_url or "api.openai.com"} gave no usable reply: {last_error}')

    def _send(self, request: dict, key: str) -> tuple[dict, str]:
        if self.cassette is not None and self.cassette.mode == 'replay':
            found = self.cassette.find(key, self.robot)
            if found is None:
                raise LLMUnavailable(f'replay: no recording left for {self.robot} in {self.cassette.path}')
            return found[0], 'replay' if found[1] else 'replay (conversation differs)'
        completion = self._requests.run(lambda client: client.chat.completions.create(**request))
        if not hasattr(completion, 'model_dump'):
            raise GarbageReply(f'reply is not a chat completion: {str(completion)[:120]!r}')
        raw = completion.model_dump(mode='json', exclude_none=True)
        if self.cassette is not None and self.cassette.mode == 'record':
            _parse(raw, allow_empty='response_format' in request)
            self.cassette.record(key, self.robot, request, raw)
        return raw, 'endpoint'

    def _event(self, kind: EventKind, summary: str, reason: str = '', **data) -> None:
        if self._emit is not None:
            self._emit(kind, summary, target=data.get('model', ''), reason=reason, **data)


def _schema_calls(message: dict, finish: str | None, max_tokens: int) -> tuple[dict, str]:
    """Return a json_schema-mode reply as a native one (tool calls parsed from its JSON) and the reason it is invalid.

    An invalid reply comes back as its text (no tool calls) with the reason ('' when valid).
    """
    if message.get('tool_calls'):   # an endpoint that answered with native calls anyway: take them as they are
        return message, ''
    try:
        calls = jsonschema_calls.parse_reply(message.get('content'), finish, max_tokens)
    except jsonschema_calls.InvalidReply as exc:
        return {'role': 'assistant', 'content': message.get('content') or ''}, str(exc)
    out = {'role': 'assistant', 'content': None}
    if calls:
        out['tool_calls'] = calls
    else:
        out['content'] = ''   # an empty list: the model chose to wait
    return out, ''


def _parse(raw: dict, allow_empty: bool = False) -> tuple[dict, dict | None, str | None]:
    """Return (assistant message, usage, finish reason) from a completion dict; raise GarbageReply if malformed.

    ``allow_empty``: a message with neither content nor tool calls is returned (content '')
    instead of raising (json_schema mode records it as an invalid reply).
    """
    if not isinstance(raw, dict) or not isinstance(raw.get('choices'), list) or not raw['choices']:
        raise GarbageReply(f'reply has no choices: {json.dumps(raw, default=str)[:120]}')
    message = raw['choices'][0].get('message')
    if not isinstance(message, dict):
        raise GarbageReply('reply choice has no message')
    calls = []
    for call in message.get('tool_calls') or []:
        fn = call.get('function') if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get('name'), str):
            raise GarbageReply(f'malformed tool call: {json.dumps(call, default=str)[:120]}')
        args = fn.get('arguments')
        calls.append({'id': str(call.get('id') or f'call_{len(calls)}'), 'type': 'function',
                      'function': {'name': fn['name'], 'arguments': args if isinstance(args, str)
                                   else json.dumps(args or {})}})
    clean = {'role': 'assistant', 'content': message.get('content') if isinstance(message.get('content'), str)
             else None}
    if calls:
        clean['tool_calls'] = calls
    if clean['content'] is None and not calls:
        if not allow_empty:
            raise GarbageReply('reply has neither content nor tool calls')
        clean['content'] = ''
    usage = raw.get('usage') if isinstance(raw.get('usage'), dict) else None
    finish = raw['choices'][0].get('finish_reason')
    return clean, usage, finish if isinstance(finish, str) else None


def _classify(exc: Exception) -> tuple[bool, str]:
    """Return (retryable, description) for an exception raised by a request."""
    import openai   # optional dependency, loaded by the request that raised
    if isinstance(exc, (LLMUnavailable, RequestCancelled)):
        return False, str(exc)
    if isinstance(exc, openai.APITimeoutError):
        return True, 'timeout'
    if isinstance(exc, openai.APIConnectionError):
        return True, f'connection error: {exc}'
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        retryable = code in (408, 409, 429) or code >= 500
        return retryable, f'HTTP {code}: {str(exc)[:160]}'
    if isinstance(exc, (GarbageReply, json.JSONDecodeError, openai.APIResponseValidationError, ValueError,
                        TypeError, KeyError, AttributeError)):
        return True, f'garbage reply: {type(exc).__name__}: {str(exc)[:160]}'
    return False, f'{type(exc).__name__}: {exc}'
