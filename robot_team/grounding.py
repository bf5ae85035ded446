"""Ground-truth checks of a robot's report: success claims (false completion guard) and failure claims.

A robot's claim of success is accepted only if its own tools' journal supports it: the Nav2
goal to the room succeeded, the badge scan resolved to the reported HCW, the display service
accepted the layout. A claim of failure needs grounds too (:func:`failure_grounds`): a call of the
task that failed, or a result that shows the task cannot be done as asked (the catalog's
``negative`` findings); or nothing left to try. A robot that gives up while its tools showed
nothing wrong leaves an HCW who answered the page waiting and sends the manager to the next one.
Pure functions over :class:`~robot_team.tools.base.ToolResult` lists.
"""

from __future__ import annotations

from robot_team.brains.base import BrainReport
from robot_team.reports import TaskStatus, TaskType
from robot_team.catalog import Tool, ToolDecl, negative_finding, tools_for
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


def _proof_problems(decl: ToolDecl, claim: BrainReport, journal: list[ToolResult]) -> list[str]:
    """Return why ``journal`` lacks what ``decl``'s :class:`~robot_team.catalog.Proof` requires of a success claim."""
    proof, problems = decl.proof, []
    ok = _last_ok(journal, decl.name)
    if proof.flag:
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
    if proof.visited_by is not None and ok is not None:
        page = _last_ok(journal, Tool.PAGE_STAFF.value)
        hcw = (page.output.get('hcw_id') if page is not None else '') or str(claim.data.get('hcw_id', ''))
        where = next((s for s in ok.output.get('staff', []) if s.get('hcw_id') == hcw), None)
        goals = [r.output.get('goal', [None, None]) for r in journal if r.tool == proof.visited_by.value and r.ok]
        if where is not None and not any(
                g[0] is not None and abs(g[0] - where['x']) <= proof.visit_tolerance_m
                and abs(g[1] - where['y']) <= proof.visit_tolerance_m for g in goals):
            problems.append(f"no goal reached HCW #{hcw} at {_labelled(where['x'], where['y'])}: the HCW was not "
                            'picked up')
    if proof.goal_of is not None and ok is not None:
        reached = _last_ok(journal, proof.goal_of.value)
        if reached is not None:
            goal = reached.output.get('goal', [None, None])
            if (abs(goal[0] - ok.output['x']) > proof.tolerance_m
                    or abs(goal[1] - ok.output['y']) > proof.tolerance_m):
                problems.append(f"the last goal ({goal[0]:g}, {goal[1]:g}) is not the door of {ok.output['room']} "
                                f"{_labelled(ok.output['x'], ok.output['y'])}")
    return problems


def unmet_proofs(task_type: TaskType, claim: BrainReport,
                 journal: list[ToolResult]) -> list[tuple[ToolDecl, list[str]]]:
    """Return, in the catalog's order, each tool of ``task_type`` whose proof ``journal`` does not meet, with why.

    The per-tool view of :func:`contradictions` (``claim`` a success claim).
    """
    found = []
    for decl in tools_for(task_type):
        if decl.proof is not None:
            problems = _proof_problems(decl, claim, journal)
            if problems:
                found.append((decl, problems))
    return found


def contradictions(task_type: TaskType, claim: BrainReport, journal: list[ToolResult]) -> list[str]:
    """Return why ``claim`` is not supported by ``journal`` (empty: supported or not a success claim).

    Each tool of ``task_type`` with a :class:`~robot_team.catalog.Proof` in the catalog is checked,
    proofs that a tool must have succeeded first, then what its output must agree with.
    """
    if claim.status is not TaskStatus.SUCCESS:
        return []
    unmet = sorted(unmet_proofs(task_type, claim, journal),   # stable: the catalog's order within each group
                   key=lambda found: not (found[0].proof.required or found[0].proof.last_must_succeed))
    return [problem for _, problems in unmet for problem in problems]


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
