"""Ground-truth checks of success claims (false completion guard).

A robot's claim of success is accepted only if its own tools' journal supports it: the Nav2
goal to the room succeeded, the badge scan resolved to the reported HCW, the display service
accepted the layout. Pure functions over :class:`~robot_team.tools.base.ToolResult` lists.
"""

from __future__ import annotations

from robot_team.brains.base import BrainReport
from robot_team.reports import TaskStatus, TaskType
from robot_team.catalog import Tool, ToolDecl, tools_for
from robot_team.tools.base import ToolResult


def _last_ok(journal: list[ToolResult], tool: str) -> ToolResult | None:
    for result in reversed(journal):
        if result.tool == tool and result.ok:
            return result
    return None


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
            problems.append(f"no goal reached HCW #{hcw} at ({where['x']}, {where['y']}): the HCW was not picked up")
    if proof.goal_of is not None and ok is not None:
        reached = _last_ok(journal, proof.goal_of.value)
        if reached is not None:
            goal = reached.output.get('goal', [None, None])
            if (abs(goal[0] - ok.output['x']) > proof.tolerance_m
                    or abs(goal[1] - ok.output['y']) > proof.tolerance_m):
                problems.append(f"the last successful goal {goal[:2]} is not the door of {ok.output['room']}")
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
