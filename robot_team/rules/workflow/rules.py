"""The workflow's rules over task outlines, shared by the supervisor's gate and the manager's LLM bridge.

Pure functions of what they are given (:class:`TaskOutline`: a task as the rules see it;
:class:`StaffFacts`: what is known of an HCW); no state of their own. The gate
(:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`) applies them to its tasks, the manager's LLM
bridge (``robot_team.llm.decoding``, ``robot_team.llm.toolschema``) to its observation, so that it
offers only what the gate would approve.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.reports import OPERATIONAL_TASKS, WORKFLOW_ORDER, TaskType
from robot_team.rules.workflow.state import MANAGER


class TaskOutline(NamedTuple):
    """A task as :func:`reflection_wait` and :func:`delegation_refusal` see it (status: running, success, failure)."""

    task_id: str
    task_type: TaskType
    status: str
    issue: str
    robot: str = ''
    hcw_id: str = ''


class StaffFacts(NamedTuple):
    """What the gate knows of one HCW (rule 9): specialty (staff directory, else RTLS) and availability (RTLS)."""

    specialty: str
    availability: str = 'unknown'   # available | busy | off_shift | unknown (no RTLS answer yet)


def people_chose(assigned_hcw_id: str, escalations: Iterable[EscalationRecord]) -> set[str]:
    """Return the HCWs a person chose for the patient: the hospital's assignment and every ``reassign`` decision."""
    chosen = {e.hcw_id for e in escalations if e.decision == 'reassign' and e.hcw_id}
    return chosen | ({assigned_hcw_id} if assigned_hcw_id else set())


def escorted_hcw(tasks: list[TaskOutline]) -> str:
    """Return the HCW the latest navigation in ``tasks`` escorted, if it succeeded, else ``''``."""
    nav = _latest_outline(TaskType.NAVIGATION, tasks)
    return nav.hcw_id if nav is not None and nav.status == 'success' else ''


def task_hcw(kind: TaskType, hcw_id: str, tasks: list[TaskOutline]) -> str:
    """Return the HCW a task of ``kind`` delegated with ``hcw_id`` is about, given ``tasks`` (authorization order).

    A navigation is about the HCW it names; info collection and display about the HCW the
    latest navigation escorted (:func:`escorted_hcw`): whose badge is read, who joins the care
    team shown. The reflection is about no HCW.
    """
    if kind is TaskType.NAVIGATION:
        return hcw_id
    return escorted_hcw(tasks) if kind in OPERATIONAL_TASKS else ''


def task_hcw_refusal(kind: TaskType, hcw_id: str, tasks: list[TaskOutline], *, required_specialty: str,
                     chosen: set[str], staff: Mapping[str, StaffFacts] | None,
                     engaged: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """Return ``('hcw', explanation)`` if rule 9 refuses a ``kind`` delegation naming ``hcw_id``, else ``None``.

    - A navigation escorts an HCW: it must name one; a person's choice (``chosen``: the hospital's
      assignment, a ``reassign`` decision; :func:`people_chose`) stands; anyone else must be known
      to ``staff`` (the staff directory, or the RTLS), of ``required_specialty`` (compared without
      case; none given: any) and on shift (availability not ``off_shift``; ``busy`` is on shift:
      the page tells whether they can come). ``staff`` ``None``: no staff view, only the name is
      required.
    - A navigation may not name an HCW another open case has (``engaged``, HCW ID -> that case's
      patient: :func:`engaged_hcws`): a person is in one room at a time, whoever chose them.
    - Info collection and display are about the HCW the latest navigation escorted
      (:func:`task_hcw`): a delegation naming another is refused; naming none is fine.

    The one rule behind the supervisor's gate and the LLM manager's offer
    (``robot_team.llm.decoding``): an escort of technician #55 for a patient who needs a
    physician was accepted before it.
    """
    if kind is TaskType.NAVIGATION:
        if not hcw_id:
            return ('hcw', 'a navigation escorts an HCW: name the HCW (hcw_id)')
        if engaged and hcw_id in engaged:
            return ('hcw', f'HCW #{hcw_id} is with case {engaged[hcw_id]} (escorted, or being escorted, to its '
                           'room): a person is in one room at a time; name another HCW of the specialty, or wait '
                           'for that case to close')
        if hcw_id in chosen or staff is None:
            return None
        facts = staff.get(hcw_id)
        if facts is None:
            known = ', '.join(f'#{h}' for h in staff) or 'none yet'
            return ('hcw', f'HCW #{hcw_id} is not known to the staff directory or the location system '
                           f'(known: {known})')
        wanted = required_specialty.strip()
        if wanted and facts.specialty.strip().casefold() != wanted.casefold():
            return ('hcw', f"HCW #{hcw_id} is a {facts.specialty or 'HCW of unknown specialty'}; the patient needs "
                           f'a {wanted}: name an HCW of that specialty, or escalate for a person to choose')
        if facts.availability == 'off_shift':
            return ('hcw', f'HCW #{hcw_id} is off shift: name an HCW on shift, or escalate for a person to choose')
        return None
    escorted = task_hcw(kind, hcw_id, tasks)
    if kind in OPERATIONAL_TASKS and hcw_id and hcw_id != escorted:
        nav = _latest_outline(TaskType.NAVIGATION, tasks)
        return ('hcw', f'{kind.value} is about the HCW navigation escorted'
                       + (f' ({nav.task_id}): HCW #{escorted}' if escorted and nav is not None else ' (none yet)')
                       + f', not #{hcw_id}')
    return None


def engaged_hcws(cases: Mapping[str, list[TaskOutline]]) -> dict[str, str]:
    """Return the HCWs open cases have: HCW ID -> the case (patient ID) whose latest navigation runs or succeeded.

    ``cases``: each open case's tasks (case ID -> its outlines). An HCW being escorted to a
    patient's room, or escorted there, is with that patient until the case closes. One rule for
    the gate and the manager (its observation's ``engaged_hcws``).
    """
    engaged = {}
    for case, tasks in cases.items():
        nav = _latest_outline(TaskType.NAVIGATION, tasks)
        if nav is not None and nav.hcw_id and nav.status in ('running', 'success'):
            engaged[nav.hcw_id] = case
    return engaged


def manager_may_escalate(status: str, failure_waits: bool) -> bool:
    """Return whether the manager may escalate a task in ``status`` ('running', 'success', 'failure').

    ``failure_waits``: another task's failure waits to be handled (its issue-handling deadline
    runs). Then a task that succeeded may not be escalated: that would leave the failure unhandled
    while a human is paged about something else (seen from a 0.5B model); the failure itself, or
    the episode, may. Otherwise any task may (e.g. a concern about an escort that succeeded).
    Shared by the supervisor's gate and the manager's LLM bridge (which offers only these task IDs).
    """
    return status != 'success' or not failure_waits


def open_escalation_of(escalations, raised_by: str = MANAGER) -> EscalationRecord | None:
    """Return an open escalation raised by ``raised_by`` among ``escalations``, else None.

    The manager has one escalation open at a time: it may not escalate again (about any task, or
    the episode) until a human decided on it or it expired
    (:meth:`~robot_team.rules.workflow.policy.WorkflowPolicy.open_escalation`; the human is paged once,
    and the team holds for the decision). The manager's LLM bridge does not offer
    ``escalate_to_supervisor`` meanwhile.
    """
    return next((e for e in escalations if e.is_open and e.raised_by == raised_by), None)


def _latest_outline(task_type: TaskType, tasks: list[TaskOutline]) -> TaskOutline | None:
    """Return the latest task of ``task_type`` in ``tasks`` (authorization order), or None."""
    return next((t for t in reversed(tasks) if t.task_type is task_type), None)


def delegation_refusal(kind: TaskType, tasks: list[TaskOutline]) -> tuple[str, str] | None:
    """Return ``(rule, explanation)`` if the gate refuses delegating operational task ``kind`` now, else ``None``.

    The gate's order and running rules (:class:`~robot_team.rules.workflow.policy.WorkflowPolicy`) over
    ``tasks`` (every task, in authorization order): each earlier task type of the workflow must
    have succeeded last, and ``kind`` must not be running; a succeeded ``kind`` is repeated only to
    recover a later step that failed since it last succeeded (once that repeat succeeded, the
    failed step is next). Shared by the supervisor's gate and the manager's LLM bridge (which
    offers only the task types this accepts: guards at decode time).
    """
    for earlier in OPERATIONAL_TASKS[:OPERATIONAL_TASKS.index(kind)]:
        latest = _latest_outline(earlier, tasks)
        if latest is None:
            return ('order', f'{kind.value} must wait: {earlier.value} has not been delegated yet '
                             f'(workflow: {_order()}); delegate {earlier.value} first')
        if latest.status == 'running':
            return ('order', f'{kind.value} must wait: {earlier.value} {latest.task_id} is still '
                             f'running; wait for its report')
        if latest.status == 'failure':
            return ('order', f'{kind.value} must wait: {earlier.value} {latest.task_id} failed '
                             f'({latest.issue}); recover {earlier.value} first (retry, reassign or '
                             f'escalate)')
    latest = _latest_outline(kind, tasks)
    if latest is not None and latest.status == 'running':
        return ('running', f'{kind.value} {latest.task_id} is still running on {latest.robot}; '
                           f'wait for its report before delegating {kind.value} again')
    if latest is not None and latest.status == 'success':
        if not failed_since_success(kind, tasks):
            later = [_latest_outline(k, tasks) for k in OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:]]
            following = next((k.value for k, t in zip(OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:], later)
                              if t is None or t.status != 'success'), 'the reflection')
            return ('repeat_reason', f'{kind.value} already succeeded ({latest.task_id}) and no later step failed '
                                     f'since: '
                                     f'the workflow moves on to {following}; repeat {kind.value} only to recover '
                                     f'a later step that failed, with a reason')
    return None


def failed_since_success(kind: TaskType, tasks: list[TaskOutline]) -> list[TaskOutline]:
    """Return the later steps' latest tasks that failed since ``kind`` last succeeded, in workflow order.

    What a repeat of the succeeded ``kind`` may recover (the gate's repeat rule,
    :func:`delegation_refusal`); ``[]`` when ``kind``'s latest task did not succeed. A later step's
    failure before that success was what it recovered. ``tasks``: every task, in authorization order.
    """
    latest = _latest_outline(kind, tasks)
    if latest is None or latest.status != 'success':
        return []
    since = tasks.index(latest)
    later = (_latest_outline(k, tasks) for k in OPERATIONAL_TASKS[OPERATIONAL_TASKS.index(kind) + 1:])
    return [t for t in later if t is not None and t.status == 'failure' and tasks.index(t) > since]


def reflection_wait(tasks: list[TaskOutline], *, closed: bool) -> str | None:
    """Return why the reflection must wait (the gate's rule 8), or ``None`` if it may start.

    Rule 8 of :class:`~robot_team.rules.workflow.policy.WorkflowPolicy`. A failed step ends the
    onboarding only when the episode is closed: a person's ``retry`` or ``reassign`` is work for
    the team, not its end (a random manager reflected right after the human reassigned the failed
    escort to another physician, and the patient was left unserved with the outcome ``failure``).
    Shared by the supervisor's gate and the manager's LLM bridge (which offers the reflection tool
    only when this returns ``None``). Does not check for an earlier reflection.

    Parameters
    ----------
    tasks
        Every task, in authorization order.
    closed
        Whether the episode was closed with ``abort`` (a person's, or an unanswered escalation's safe
        default).
    """
    running = [t.task_id for t in tasks if t.status == 'running']
    if running:
        return f"reflection must wait until no task runs; still running: {', '.join(running)}"
    if closed:
        return None
    operational = [t for t in tasks if t.task_type in OPERATIONAL_TASKS]
    latest = {kind: next((t for t in reversed(operational) if t.task_type is kind), None)
              for kind in OPERATIONAL_TASKS}
    if all(t is not None and t.status == 'success' for t in latest.values()):
        return None
    last = operational[-1] if operational else None
    if last is not None and last.status == 'failure':
        return (f'reflection must wait: {last.task_id} ({last.task_type.value}) failed ({last.issue}); recover it '
                f"(a person's decision on it says how) or escalate {last.task_id}: the onboarding ends in a "
                f'reflection only when done or closed by abort')
    missing = [kind.value for kind, t in latest.items() if t is None or t.status != 'success']
    return f"reflection must wait: {', '.join(missing)} not yet successful (workflow: {_order()})"


def _order() -> str:
    return ' -> '.join(t.value for t in WORKFLOW_ORDER)
