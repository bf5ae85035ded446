"""LLM settings: one pydantic-settings object for every robot's LLM brain.

Values come, highest priority first, from: constructor arguments; ``ROBOT_TEAM_LLM_*``
environment variables (nested fields with ``__``, e.g. ``ROBOT_TEAM_LLM_ROBOTS__MANAGER__MODEL``);
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` for the endpoint and key; ``config/llm.yaml`` (or the
file named by ``ROBOT_TEAM_LLM_CONFIG``); the defaults below.

Units: times in seconds (wall clock), prices in USD per million tokens.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, YamlConfigSettingsSource

from robot_team.contracts.config import share_dir


class ModelPrice(BaseModel):
    """List price of one model, USD per million tokens."""

    input_per_mtok: float = Field(0.0, ge=0, description='USD per 1M prompt (input) tokens.')
    output_per_mtok: float = Field(0.0, ge=0, description='USD per 1M completion (output) tokens.')

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Return the cost in USD of one request."""
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1e6


ToolCallMode = Literal['native', 'json_schema']
"""How a model is asked for tool calls: ``native`` (the request's ``tools``; the endpoint returns
``tool_calls``) or ``json_schema`` (``response_format`` with a strict JSON schema, the union of the
offered tools; the reply's JSON is parsed into the same tool calls: :mod:`robot_team.llm.jsonschema_calls`)."""


class ModelOptions(BaseModel):
    """How to talk to one model (``model_options`` in ``config/llm.yaml``, keyed by model name or prefix)."""

    tool_calls: ToolCallMode | None = Field(None, description="'native' or 'json_schema' (models whose chat "
                                            'template does not produce tool calls).')
    max_tokens: int | None = Field(None, ge=1, description='Most completion tokens per request (always sent).')
    calls_per_request: int | None = Field(None, ge=1, description='json_schema mode: most tool calls per reply '
                                          '(1: one decision per request, for a model that does not plan with '
                                          '$N references); none: no limit.')


class RobotOverride(BaseModel):
    """Per-robot overrides (any field left ``None`` keeps the model's or the team-wide value)."""

    model: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout_s: float | None = Field(None, gt=0)
    tool_calls: ToolCallMode | None = None
    max_tokens: int | None = Field(None, ge=1)


class ResolvedLLM(BaseModel):
    """The endpoint settings one robot actually uses (see :meth:`LLMSettings.for_robot`)."""

    robot: str
    model: str
    temperature: float
    base_url: str | None
    api_key: SecretStr | None
    timeout_s: float
    max_retries: int
    backoff_s: float
    backoff_max_s: float
    price: ModelPrice
    tool_calls: ToolCallMode = 'native'
    max_tokens: int = 512
    calls_per_request: int | None = None


class LocalServerSettings(BaseModel):
    """The built-in local endpoint (``--brain local``, ``robot-team llm serve``): llama.cpp's server.

    See :mod:`robot_team.llm.local`. It listens on loopback only.
    """

    threads: int = Field(2, ge=1, description='CPU threads for generation and prompt processing.')
    ctx_size: int = Field(16384, ge=512, description='KV cache size in tokens, shared by the parallel slots.')
    parallel: int = Field(4, ge=1, description='Parallel slots (one per robot keeps each prompt cache warm).')
    port: int = Field(0, ge=0, le=65535, description='TCP port on 127.0.0.1 (0: a free one).')
    cache_dir: str | None = Field(None, description='Where the assembled GGUF is kept (default: '
                                  '$ROBOT_TEAM_MODEL_CACHE, else <venv>/share/robot_team/models, else '
                                  '$XDG_CACHE_HOME/robot_team/models).')
    max_tokens: int = Field(256, ge=1, description='Most completion tokens per request to the local model.')
    max_steps: int = Field(7, ge=1, description='Most requests per robot task (or manager decision) with the '
                           'local model: a small model that repeats itself reports failure sooner. An escort '
                           'takes 6 with one call each (locate_staff, page_staff, room_door_pose, two '
                           'navigate_to_pose goals, submit_report): 7 leaves one for an optional call '
                           '(plan_path).')
    timeout_s: float = Field(300.0, gt=0, description='Per-request timeout, wall s (a CPU model is slow).')
    model: str = Field('qwen2.5-coder-0.5b-instruct-q4_k_m', min_length=1, description=(
        "The model it serves: a shipped model's name or alias (robot_team.llm.local.MODELS: "
        "'qwen2.5-coder-0.5b-instruct-q4_k_m' or '0.5b', 'qwen2.5-coder-1.5b-instruct-q4_k_m' or '1.5b'), "
        'or a path to a .gguf file.'))


STALL_TIMEOUT_S = 600.0
"""Wall seconds after which an LLM request that holds sim time (the lockstep LLM clock) is given up as
stalled: the lockstep clock's hold expires then too (:data:`robot_team.llm.lockstep.DEFAULT_MAX_HOLD_S`).
Under lockstep the endpoint's ``timeout_s`` is not a budget (a busy machine's slower answer costs
no sim time and must change no decision); only a server that stopped answering is cut off."""


def _config_file() -> Path | None:
    explicit = os.environ.get('ROBOT_TEAM_LLM_CONFIG')
    if explicit:
        return Path(explicit)
    try:
        path = share_dir() / 'config' / 'llm.yaml'
    except Exception:  # noqa: BLE001 - no data folder: defaults only
        return None
    return path if path.exists() else None


class LLMSettings(BaseSettings):
    """Settings of the LLM brains (endpoint, model, retries, prices, fallback, record/replay).

    Examples
    --------
    >>> LLMSettings(_env_file=None, base_url='http://127.0.0.1:8000/v1', api_key='x', model='m')
    ... # doctest: +SKIP
    """

    model_config = SettingsConfigDict(env_prefix='ROBOT_TEAM_LLM_', env_nested_delimiter='__', extra='ignore')

    base_url: str | None = Field(None, description='OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, '
                                                   'else api.openai.com).')
    api_key: SecretStr | None = Field(None, description='API key (default: $OPENAI_API_KEY).')
    model: str = 'gpt-4o-mini'
    temperature: float = Field(0.0, ge=0, le=2)
    timeout_s: float = Field(30.0, gt=0, description='Per-request timeout, wall s, on the realtime LLM clock '
                             '(lockstep: STALL_TIMEOUT_S, if longer).')
    max_retries: int = Field(3, ge=0, description='Retries after a timeout, 429, 5xx, connection error or garbage.')
    backoff_s: float = Field(0.5, ge=0, description='First retry delay, wall s; doubles on each retry.')
    backoff_max_s: float = Field(8.0, ge=0, description='Longest retry delay, wall s.')
    fallback: Literal['protocol', 'fail'] = Field(
        'protocol', description="When the endpoint stays down: 'protocol' brain, or 'fail' (report failure).")
    robot_takeover_after: int = Field(
        1, ge=0, description='Robot brains: when this many tasks ended non-compliant (no valid report within '
        'the budget), the protocol brain takes over the robot\'s role for the rest of the episode, starting '
        'with the task that reached the count, recorded as a takeover (its work: source fallback); earlier '
        'non-compliant tasks, or all with 0 (never), are reported as failures with the issue.')
    manager_takeover_after: int = Field(
        1, ge=0, description='Manager brain: when this many decisions ended with nothing usable (text after the '
        'nudge, or only invalid calls) while only the manager could act (no task running, no escalation open), '
        'the protocol brain takes over the manager\'s role for the rest of the episode, recorded as a takeover; '
        '0: never (the supervisor\'s decision deadline escalates instead).')
    max_report_retries: int = Field(2, ge=0, description='Invalid reports sent back with the error before failing.')
    max_steps: int = Field(12, ge=1, description='Most LLM requests per robot task (or per manager decision).')
    task_budget_s: float = Field(120.0, gt=0, description='Robot brains on the realtime LLM clock: wall s of LLM '
                                 'work per task; past it, no new request and the robot reports failure (keep it '
                                 'below the task deadline divided by the sim speed: 600 / 5). On the lockstep '
                                 'clock (sim time waits for the LLM) the budget is max_steps requests of '
                                 'max_tokens each, never wall s.')
    history_turns: int = Field(1, ge=1, description='Manager: past turns sent per request (the record is '
                               'restated in every turn).')
    decoding: Literal['constrained', 'free'] = Field(
        'constrained', description="'constrained': each request offers only what the guards accept now "
        "(robot_team.llm.decoding); 'free': the full schemas (the published free-running team).")
    tool_calls: ToolCallMode = Field('native', description="Default tool-call mode: 'native' or 'json_schema' "
                                     '(a model listed in model_options, or a robot override, may differ).')
    max_tokens: int = Field(512, ge=1, description='Default most completion tokens per request (always sent).')
    robots: dict[str, RobotOverride] = Field(default_factory=dict)
    model_options: dict[str, ModelOptions] = Field(default_factory=dict, description='Per model (exact name, else '
                                                   'the longest listed prefix): tool_calls, max_tokens.')
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    cassette: str | None = Field(None, description='JSONL file of request -> reply pairs (record/replay).')
    cassette_mode: Literal['off', 'record', 'replay'] = 'off'
    real_time_factor: float = Field(5.0, gt=0, description='Default sim speed for LLM runs (sim s per wall s) '
                                    'with the realtime LLM clock.')
    lockstep_step_s: float = Field(2.0, ge=0, description='Lockstep LLM clock: sim seconds charged per LLM request '
                                   '(the clock source steps sim time by this much when a hold ends).')
    local: LocalServerSettings = Field(default_factory=LocalServerSettings)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource):
        """Read arguments, then the environment, then ``config/llm.yaml``."""
        sources = [init_settings, env_settings, dotenv_settings]
        path = _config_file()
        if path is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)

    def model_post_init(self, __context) -> None:
        """Fill the endpoint and key from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` when not set."""
        if self.base_url is None and os.environ.get('OPENAI_BASE_URL'):
            self.base_url = os.environ['OPENAI_BASE_URL']
        if self.api_key is None and os.environ.get('OPENAI_API_KEY'):
            self.api_key = SecretStr(os.environ['OPENAI_API_KEY'])

    def price(self, model: str) -> ModelPrice:
        """Return the price of ``model`` (exact name, else the longest listed prefix; 0 if unlisted)."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(prefixes, key=len)] if prefixes else ModelPrice()

    def options(self, model: str) -> ModelOptions:
        """Return the options of ``model`` (exact name, else the longest listed prefix; empty if unlisted)."""
        if model in self.model_options:
            return self.model_options[model]
        prefixes = [name for name in self.model_options if model.startswith(name)]
        return self.model_options[max(prefixes, key=len)] if prefixes else ModelOptions()

    def for_robot(self, robot: str) -> ResolvedLLM:
        """Return the settings robot ``robot`` uses: its overrides, then its model's options, then the defaults."""
        over = self.robots.get(robot) or RobotOverride()
        model = over.model or self.model
        options = self.options(model)
        return ResolvedLLM(
            tool_calls=over.tool_calls or options.tool_calls or self.tool_calls,
            max_tokens=over.max_tokens or options.max_tokens or self.max_tokens,
            calls_per_request=options.calls_per_request,
            robot=robot, model=model,
            temperature=self.temperature if over.temperature is None else over.temperature,
            base_url=over.base_url or self.base_url, api_key=over.api_key or self.api_key,
            timeout_s=over.timeout_s or self.timeout_s, max_retries=self.max_retries, backoff_s=self.backoff_s,
            backoff_max_s=self.backoff_max_s, price=self.price(model))
