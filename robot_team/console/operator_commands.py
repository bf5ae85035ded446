"""``robot-team escalations list|watch|ack|resolve|raise``, ``robot-team instruct`` and ``robot-team console``.

Thin typer commands over :mod:`robot_team.human` (the supervisor's topics and services) and
:mod:`robot_team.console.app` (the console widget). Every command takes the team's
``--domain-id`` and ``--namespace``; ``--operator-id`` defaults to ``$ROBOT_TEAM_OPERATOR_ID``.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from robot_team.human import (
    acknowledge_escalation,
    list_escalations,
    raise_escalation,
    resolve_escalation,
    send_instruction,
    watch_escalations,
)

console = Console()

DomainId = Annotated[Optional[int], typer.Option(help='ROS_DOMAIN_ID of the running team.')]
Namespace = Annotated[str, typer.Option(help="The team's ROS namespace (as given to `robot-team run`).")]
OperatorId = Annotated[str, typer.Option(envvar='ROBOT_TEAM_OPERATOR_ID',
                                         help='Who you are (recorded; must be an authorised operator to '
                                              'acknowledge, resolve or instruct: config/escalations.yaml).')]
STATE_STYLE = {'open': 'red', 'acknowledged': 'yellow', 'resolved': 'green', 'expired': 'magenta'}

escalations_app = typer.Typer(help='Escalations of a running team: list, watch, acknowledge, resolve, raise.',
                              invoke_without_command=True, no_args_is_help=False)


@escalations_app.callback()
def escalations_main(
    ctx: typer.Context,
    domain_id: DomainId = None,
    listen: Annotated[float, typer.Option(help='Seconds to listen.')] = 2.0,
    namespace: Namespace = '/',
) -> None:
    """List the escalations of a running team (same as `escalations list`) unless a command is given."""
    if ctx.invoked_subcommand is None:
        list_command(domain_id, listen, namespace)


@escalations_app.command('list')
def list_command(domain_id: DomainId = None,
                 listen: Annotated[float, typer.Option(help='Seconds to listen.')] = 2.0,
                 namespace: Namespace = '/') -> None:
    """List the escalations of a running team, each in its latest state."""
    try:
        found = list_escalations(domain_id, listen, namespace)
    except ValueError as exc:
        _fail(exc, 2)
    table = Table('escalation', 'state', 'severity', 'case', 'task', 'raised by', 'reason', 'proposal',
                  'options', 'decision')
    for esc in found:
        state = esc.get('state') or ('resolved' if esc.get('decision') else 'open')
        decision = f"{esc.get('decision', '')} {esc.get('hcw_id') or ''}".strip()
        if decision and esc.get('operator_id'):
            decision += f" ({esc['operator_id']})"
        style = STATE_STYLE.get(state, 'white')
        table.add_row(esc['escalation_id'], f'[{style}]{state}[/{style}]', esc.get('severity', ''),
                      esc.get('patient_id', ''), esc.get('task_id', ''), esc.get('raised_by', ''),
                      esc.get('reason', ''), esc.get('proposal', '') or '-', ', '.join(esc.get('options', [])),
                      decision or '-')
    console.print(table)


@escalations_app.command('watch')
def watch_command(domain_id: DomainId = None, namespace: Namespace = '/',
                  duration: Annotated[Optional[float], typer.Option(help='Stop after this many seconds '
                                                                         '(default: until Ctrl-C).')] = None) -> None:
    """Print every escalation step of a running team as it happens (Ctrl-C to stop)."""

    def show(esc: dict) -> None:
        when = datetime.datetime.now().strftime('%H:%M:%S')
        state = esc['state']
        style = STATE_STYLE.get(state, 'white')
        extra = ''
        if state == 'acknowledged':
            extra = f" by {esc['acknowledged_by']}"
        elif state in ('resolved', 'expired'):
            extra = f": {esc['decision']}" + (f" #{esc['hcw_id']}" if esc['hcw_id'] else '') + \
                f" ({esc['operator_id']})" + (f" - {esc['note']}" if esc['note'] else '')
        console.print(f"{when} t={esc['stamp_s']:7.1f}s [bold]{esc['escalation_id']}[/bold] "
                      f"[{style}]{state}[/{style}]{extra} | {esc['severity']} {esc['kind']} on "
                      f"{esc['task_id'] or 'the team'} by {esc['raised_by']}: {esc['reason']}"
                      + (' [red](holds the team)[/red]' if esc['holds_team'] and state in ('open', 'acknowledged')
                         else ''))
    try:
        watch_escalations(show, domain_id, namespace, duration)
    except ValueError as exc:
        _fail(exc, 2)


@escalations_app.command('ack')
def ack_command(escalation_id: Annotated[str, typer.Argument(help="e.g. 'esc-1'")],
                operator_id: OperatorId = '',
                note: Annotated[str, typer.Option(help='Recorded with the acknowledgement.')] = '',
                domain_id: DomainId = None, namespace: Namespace = '/') -> None:
    """Acknowledge an escalation ("I have it"): re-notification stops; it still expires unless resolved."""
    _answer(lambda: acknowledge_escalation(escalation_id, operator_id=operator_id, note=note, domain_id=domain_id,
                                           namespace=namespace))


@escalations_app.command('resolve')
def resolve_command(
    escalation_id: Annotated[str, typer.Argument(help="e.g. 'esc-1'")],
    decision: Annotated[str, typer.Argument(help="accept (the manager's proposal), reassign, retry or abort")],
    hcw_id: Annotated[str, typer.Option(help="With 'reassign': the HCW to assign instead.")] = '',
    note: Annotated[str, typer.Option(help='Why (recorded).')] = '',
    operator_id: OperatorId = '',
    domain_id: DomainId = None,
    namespace: Namespace = '/',
) -> None:
    """Answer an escalation (calls team/supervisor/resolve_escalation in the team's namespace)."""
    _answer(lambda: resolve_escalation(escalation_id, decision, hcw_id=hcw_id, note=note, operator_id=operator_id,
                                       domain_id=domain_id, namespace=namespace))


@escalations_app.command('raise')
def raise_command(
    reason: Annotated[str, typer.Argument(help='What is wrong (recorded, shown to the operators).')],
    operator_id: OperatorId = '',
    task_id: Annotated[str, typer.Option(help="The task it is about (e.g. 'nav-1'); default: the team.")] = '',
    stop_and_hold: Annotated[bool, typer.Option('--stop-and-hold', help='Stop the robots and hold the whole team '
                                                                        'until an authorised operator resolves '
                                                                        'it.')] = False,
    severity: Annotated[str, typer.Option(help="normal, high or critical (default: the policy's).")] = '',
    domain_id: DomainId = None,
    namespace: Namespace = '/',
) -> None:
    """Raise an escalation yourself: a concern about a task, or stop-and-hold for the whole team."""
    _answer(lambda: raise_escalation(reason, operator_id=operator_id, task_id=task_id, severity=severity,
                                     kind='stop_and_hold' if stop_and_hold else 'concern', domain_id=domain_id,
                                     namespace=namespace))


def instruct_command(
    text: Annotated[str, typer.Argument(help='The instruction, in words (the manager gets it as advisory data).')],
    operator_id: OperatorId = '',
    task_id: Annotated[str, typer.Option(help='The task it is about (default: the whole team).')] = '',
    domain_id: DomainId = None,
    namespace: Namespace = '/',
) -> None:
    """Send a free-text instruction to a running team (never bypasses the workflow gate or the guards)."""
    _answer(lambda: send_instruction(text, operator_id=operator_id, task_id=task_id, domain_id=domain_id,
                                     namespace=namespace))


def console_command(
    operator_id: OperatorId = '',
    screenshot: Annotated[Optional[Path], typer.Option(help='Render once offscreen after the team state arrived, '
                                                            'write this PNG and exit.')] = None,
    timeout: Annotated[float, typer.Option(help='With --screenshot: longest wait for the team, s.')] = 15.0,
    domain_id: DomainId = None,
    namespace: Namespace = '/',
) -> None:
    """Open the supervisor console (the rqt plugin's widget) against a running team."""
    try:
        from robot_team.console.app import run_console  # optional: needs Qt (PySide6 or rqt's binding)
        code = run_console(domain_id=domain_id, namespace=namespace, operator_id=operator_id, screenshot=screenshot,
                           timeout_s=timeout)
    except (ImportError, TimeoutError, RuntimeError, ValueError) as exc:
        _fail(exc, 1)
    if screenshot is not None:
        console.print(f'screenshot: {screenshot}')
    raise typer.Exit(code)


def _answer(call) -> None:
    try:
        accepted, *rest = call()
    except (TimeoutError, ValueError) as exc:
        _fail(exc, 1)
    message = rest[-1]
    console.print(('[green]accepted[/green]: ' if accepted else '[red]refused[/red]: ') + message)
    if not accepted:
        raise typer.Exit(1)


def _fail(exc: Exception, code: int):
    console.print(f'[red]error:[/red] {exc}')
    raise typer.Exit(code) from exc
