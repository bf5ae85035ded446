"""Ground-truth checks of a robot's report: success claims (false completion guard) and failure claims.

A robot's claim of success is accepted only if its own tools' journal supports it for *its task*
(:class:`~robot_team.catalog.TaskFacts`: the room and the HCW the gate named), the catalog's
:class:`~robot_team.catalog.Proof` of each tool (:func:`contradictions`): the RTLS was asked where
the task's HCW is and a goal reached them there, the last goal reached the room's door; the
scanned badge is that HCW's and the check-in was recorded; the entries shown are the care team
fetched. And only if the world shows it (:func:`world_contradictions`, the role's
:class:`~robot_team.catalog.WorldFact`, observed by the robot's tools when it claims success and
kept in the report's evidence): the RTLS sees the HCW at the room's door, the directory holds the
check-in, the room's screen shows the directory's care team. The robot node and the manager run
the same functions, the manager on the evidence that travelled with the report.
A claim of failure needs grounds too (:func:`failure_grounds`): a call of the
task that failed, or a result that shows the task cannot be done as asked (the catalog's
``negative`` findings); or nothing left to try. A robot that gives up while its tools showed
nothing wrong leaves an HCW who answered the page waiting and sends the manager to the next one.
Pure functions over :class:`~robot_team.tools.base.ToolResult` lists.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from robot_team.brains.base import BrainReport
from robot_team.contracts.reports import TaskStatus, TaskType
from robot_team.catalog import (
    AT_DOOR_M, STAMP_SLACK_S, TaskFacts, Tool, ToolDecl, WorldFact, negative_finding, role_of, same_care_team,
    tools_for)
from robot_team.tools.base import ToolResult


def _last_ok(journal: list[ToolResult], tool: str) -> ToolResult | None:
    for result in reversed(journal):
        if result.tool == tool and result.ok:
            return result
    return None


def _labelled(x: float, y: float) -> str:
    """Return a map position as the goal arguments that reach it, ``(x 12.5, y 19.5)`` (m, 'map').

    Said this way, with navigate_to_pose's own argument names, a small model copies the position
    into its goal; as a bare pair beside the last goal's, Qwen2.5-Coder-0.5B repeated the last goal
    (replays of a recorded baseline request after the pickup, with five HCW and door poses: the
    door 5 times of 5 with this wording, 0 of 5 with the bare pair).
    """
    return f'(x {x:g}, y {y:g})'


def _lists(result: ToolResult, hcw_id: str) -> dict | None:
    """Return the ``staff`` entry of ``hcw_id`` in ``result``'s output (an RTLS answer), or None."""
    return next((e for e in result.output.get('staff') or () if str(e.get('hcw_id')) == hcw_id), None)


def proof_call(decl: ToolDecl, journal: list[ToolResult], task: TaskFacts | None) -> ToolResult | None:
    """Return the call of ``decl``'s tool in ``journal`` that counts for its proof, or None.

    The last successful one that is about the task: with
    :attr:`~robot_team.catalog.Proof.lists_task_hcw`, whose answer lists the task's HCW (``task``
    None: the task is not known, any); with :attr:`~robot_team.catalog.Proof.shows`, whose entries
    are the members the related call returned. A tool that succeeded without such a call still
    has its proof to meet (the constrained offer offers it again).
    """
    for result in reversed(journal):
        if result.tool != decl.name or not result.ok:
            continue
        if decl.proof.lists_task_hcw and task is not None and _lists(result, task.hcw_id) is None:
            continue
        if decl.proof.shows is not None and _shown_differs(decl, result, journal):
            continue
        return result
    return None


def _shown_differs(decl: ToolDecl, result: ToolResult, journal: list[ToolResult]) -> list[str]:
    """Return how ``result``'s ``entries`` differ from what :attr:`Proof.shows` names (empty: nothing to compare)."""
    tool, key = decl.proof.shows
    source = _last_ok(journal, tool.value)
    if source is None:
        return []   # nothing fetched: the tool's prerequisite, refused before it ran
    return same_care_team(result.args.get('entries') or [], source.output.get(key) or [])


def _pickup_spots(located: ToolResult, journal: list[ToolResult], hcw: str) -> list[dict]:
    """Return where the RTLS saw HCW ``hcw`` (``x``, ``y`` in ``map``, m): ``located``'s entry, a page's ``meet_at``."""
    spots = [s for s in [_lists(located, hcw)] if s is not None]
    page = _last_ok(journal, Tool.PAGE_STAFF.value)
    meet_at = page.output.get('meet_at') or {} if page is not None else {}
    if str(page.output.get('hcw_id') if page is not None else '') == hcw and meet_at.get('x') is not None:
        spots.append(meet_at)
    return spots


def _proof_problems(decl: ToolDecl, claim: BrainReport, journal: list[ToolResult],
                    task: TaskFacts | None) -> list[str]:
    """Return why ``journal`` lacks what ``decl``'s :class:`~robot_team.catalog.Proof` requires of a success claim."""
    proof, problems = decl.proof, []
    ok = proof_call(decl, journal, task)
    shown = _last_ok(journal, decl.name) if proof.shows is not None and ok is None else None
    if shown is not None:   # shown, but not what was fetched
        problems.append(f'the entries shown are not the care team {proof.shows[0].value} returned: '
                        + '; '.join(_shown_differs(decl, shown, journal)))
    elif proof.flag:
        if ok is None or not ok.output.get(proof.flag):
            problems.append(proof.missing)
    elif proof.required and ok is None:
        problems.append(proof.missing)
    if proof.last_must_succeed and ok is not None:
        last = next((r for r in reversed(journal) if r.tool == decl.name), None)
        if last is not ok:
            problems.append(proof.not_last)
    if proof.claim_keys and ok is not None:
        for key in proof.claim_keys:
            if str(claim.data.get(key, '')) != str(ok.output.get(key, '')):
                problems.append(f"reported {key} {claim.data.get(key)!r} differs from the directory's "
                                f'{ok.output.get(key)!r}')
    if proof.task_hcw_key and ok is not None and task is not None:
        found = str(ok.output.get(proof.task_hcw_key, ''))
        if found != task.hcw_id:
            problems.append(f"{decl.name} answered HCW #{found or '?'}, not the task's HCW #{task.hcw_id or '-'}")
    if proof.visited_by is not None and ok is not None:
        page = _last_ok(journal, Tool.PAGE_STAFF.value)
        hcw = task.hcw_id if task is not None else (
            (page.output.get('hcw_id') if page is not None else '') or str(claim.data.get('hcw_id', '')))
        spots = _pickup_spots(ok, journal, hcw)
        goals = [r.output.get('goal', [None, None]) for r in journal if r.tool == proof.visited_by.value and r.ok]
        if spots and not any(
                g[0] is not None and abs(g[0] - w['x']) <= proof.visit_tolerance_m
                and abs(g[1] - w['y']) <= proof.visit_tolerance_m for g in goals for w in spots):
            problems.append(f"no goal reached HCW #{hcw} at {_labelled(spots[-1]['x'], spots[-1]['y'])}: the HCW "
                            'was not picked up')
    if proof.goal_of is not None and ok is not None:
        reached = _last_ok(journal, proof.goal_of.value)
        if reached is not None:
            goal = reached.output.get('goal', [None, None])
            if (abs(goal[0] - ok.output['x']) > proof.tolerance_m
                    or abs(goal[1] - ok.output['y']) > proof.tolerance_m):
                problems.append(f"the last goal ({goal[0]:g}, {goal[1]:g}) is not the door of {ok.output['room']} "
                                f"{_labelled(ok.output['x'], ok.output['y'])}")
    return problems


def unmet_proofs(task_type: TaskType, claim: BrainReport, journal: list[ToolResult],
                 task: TaskFacts | None = None) -> list[tuple[ToolDecl, list[str]]]:
    """Return, in the catalog's order, each tool of ``task_type`` whose proof ``journal`` does not meet, with why.

    The per-tool view of :func:`contradictions` (``claim`` a success claim, ``task`` what the task is about).
    """
    found = []
    for decl in tools_for(task_type):
        if decl.proof is not None:
            problems = _proof_problems(decl, claim, journal, task)
            if problems:
                found.append((decl, problems))
    return found


def contradictions(task_type: TaskType, claim: BrainReport, journal: list[ToolResult],
                   task: TaskFacts | None = None) -> list[str]:
    """Return why ``claim`` is not supported by ``journal`` (empty: supported or not a success claim).

    Each tool of ``task_type`` with a :class:`~robot_team.catalog.Proof` in the catalog is checked,
    proofs that a tool must have succeeded first, then what its output must agree with. ``task``:
    what the task is about (its room and HCW): the proofs bound to it hold only for *its* HCW, and
    a task whose role needs an HCW (:attr:`~robot_team.catalog.RoleDecl.needs_hcw`) must name one.
    ``None``: the task is not known (the published rubric reads a record this way); the guards
    always give it.
    """
    if claim.status is not TaskStatus.SUCCESS:
        return []
    unnamed = [f'{task_type.value} names no HCW: a success is about one'] \
        if task is not None and not task.hcw_id and _role(task_type).needs_hcw else []
    unmet = sorted(unmet_proofs(task_type, claim, journal, task),   # stable: the catalog's order within each group
                   key=lambda found: not (found[0].proof.required or found[0].proof.last_must_succeed))
    return unnamed + [problem for _, problems in unmet for problem in problems]


def _role(task_type: TaskType):
    """Return the role declaration of operational ``task_type``."""
    return next(role_of(decl.owner) for decl in tools_for(task_type))


def world_problems(fact: WorldFact, task: TaskFacts, observed: Mapping[str, Any] | None) -> list[str]:
    """Return why ``observed`` (what the robot's tools saw of ``fact``) does not show ``task``'s success.

    ``observed`` is what the role's tools class's ``observe`` returned (JSON-ready), or None when
    nothing was observed:

    - :attr:`~robot_team.catalog.WorldFact.HCW_AT_ROOM`: ``{hcw_id, room, located: {area, x, y} |
      None, door: {x, y}, entry: {x, y}}``: the RTLS sees the task's HCW in the room or within
      :data:`~robot_team.catalog.AT_DOOR_M` of its door;
    - :attr:`~robot_team.catalog.WorldFact.CHECKED_IN`: ``{room, check_ins: [{hcw_id, badge_id,
      stamp_s}]}``: the directory holds the HCW's check-in at the room stamped since the task began;
    - :attr:`~robot_team.catalog.WorldFact.SCREEN_SHOWS_CARE_TEAM`: ``{room, screen: {entries,
      stamp_s} | None, care_team: [members]}``: the room's screen, changed since the task began,
      shows exactly the directory's care team (:func:`~robot_team.catalog.same_care_team`).
    """
    if not observed:
        return [f'{fact.value}: nothing was observed']
    if str(observed.get('room', '')) != task.room:
        return [f"{fact.value}: observed at {observed.get('room')!r}, not the task's room {task.room!r}"]
    try:
        if fact is WorldFact.HCW_AT_ROOM:
            return _hcw_at_room(task, observed)
        if fact is WorldFact.CHECKED_IN:
            stamps = [float(c.get('stamp_s', 0.0)) for c in observed.get('check_ins') or ()
                      if str(c.get('hcw_id')) == task.hcw_id]
            if not any(stamp >= task.started_s - STAMP_SLACK_S for stamp in stamps):
                return [f'the staff directory holds no check-in of HCW #{task.hcw_id or "-"} at {task.room} since '
                        f'{task.started_s:.1f} s']
            return []
        screen = observed.get('screen')
        if not screen:
            return [f'the {task.room} screen shows nothing']
        if float(screen.get('stamp_s', 0.0)) < task.started_s - STAMP_SLACK_S:
            return [f'the {task.room} screen has not changed since the task began']
        differs = same_care_team(screen.get('entries') or [], observed.get('care_team') or [])
        return [f"the {task.room} screen does not show the directory's care team: " + '; '.join(differs)] \
            if differs else []
    except (TypeError, ValueError, AttributeError) as exc:
        return [f'{fact.value}: malformed observation ({type(exc).__name__}: {exc})']


def _hcw_at_room(task: TaskFacts, observed: Mapping[str, Any]) -> list[str]:
    """:func:`world_problems` of :attr:`~robot_team.catalog.WorldFact.HCW_AT_ROOM`."""
    if str(observed.get('hcw_id', '')) != task.hcw_id:
        return [f"the RTLS was asked about HCW #{observed.get('hcw_id')}, not the task's #{task.hcw_id or '-'}"]
    seen = observed.get('located')
    if not seen:
        return [f'the RTLS does not locate HCW #{task.hcw_id}']
    near = [math.hypot(float(seen['x']) - float(p['x']), float(seen['y']) - float(p['y']))
            for p in (observed.get('door'), observed.get('entry')) if p]
    if seen.get('area') == task.room or (near and min(near) <= AT_DOOR_M):
        return []
    where = _labelled(float(seen['x']), float(seen['y']))
    return [f"the RTLS sees HCW #{task.hcw_id} in {seen.get('area') or '?'} {where}, not at {task.room}"]


def world_contradictions(task_type: TaskType, task: TaskFacts, world: Mapping[str, Any] | None) -> list[str]:
    """Return why what the world showed (``world``: the report's ``world`` evidence) contradicts a success.

    One :func:`world_problems` per :class:`~robot_team.catalog.WorldFact` the role declares
    (:attr:`~robot_team.catalog.RoleDecl.world`), keyed by the fact's value in ``world``.
    """
    world = world or {}
    return [p for fact in _role(task_type).world for p in world_problems(fact, task, world.get(fact.value))]


def success_problems(task_type: TaskType, claim: BrainReport, journal: list[ToolResult], task: TaskFacts,
                     world: Mapping[str, Any] | None) -> list[str]:
    """Return every reason a success ``claim`` on ``task`` is refused: its tools' proofs, then the world's.

    The one check the robot node runs on its brain's claim and the manager on the report's
    evidence (empty: accepted, or not a success claim).
    """
    if claim.status is not TaskStatus.SUCCESS:
        return []
    return contradictions(task_type, claim, journal, task) or world_contradictions(task_type, task, world)


UNGROUNDED_FAILURE = ('no call of this task failed and no result shows that it cannot be done: keep working '
                      'on it (a failure report is accepted after a failed call, or on the last request)')
"""Why a failure report without grounds is refused (:func:`failure_refusal`)."""


def failure_grounds(hcw_id: str, journal: list[ToolResult]) -> list[str]:
    """Return what in ``journal`` grounds a failure report on a task with HCW ``hcw_id`` (empty: nothing).

    Each call that failed (``ok`` false: a tool error, or a call the Toolbox refused), and each
    successful call whose output is a negative finding the catalog declares
    (:attr:`~robot_team.catalog.ToolDecl.negative`: the RTLS does not know the HCW, the badge is
    another HCW's, the room has no care team), in journal order.
    """
    grounds = []
    for result in journal:
        if not result.ok:
            grounds.append(f'{result.tool} failed: {result.error}' if result.error else f'{result.tool} failed')
            continue
        finding = negative_finding(result.tool, result.args, result.output, hcw_id)
        if finding:
            grounds.append(f'{result.tool}: {finding}')
    return grounds


def failure_refusal(hcw_id: str, journal: list[ToolResult], *, nothing_else: bool) -> str:
    """Return why a failure report on a task with HCW ``hcw_id`` is refused now (``''``: accepted).

    Accepted when :func:`failure_grounds` finds grounds in ``journal``, or when ``nothing_else``
    can be tried (the task's last request, or no tool left to offer). The one rule behind the LLM
    robot's refusal of an ungrounded failure report and the constrained offer of ``submit_report``
    (``robot_team.llm.decoding.report_tool``).
    """
    return '' if nothing_else or failure_grounds(hcw_id, journal) else UNGROUNDED_FAILURE
