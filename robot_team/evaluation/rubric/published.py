"""The published criteria: the seven metrics of Table II, each cell scored as the paper defines it.

Manager level, per task: :func:`delegation_accuracy`, :func:`completion_judgment`,
:func:`issue_handling` (navigation only), and :func:`reflection_quality` once per run; robot
level, per task: :func:`tool_usage`, :func:`local_reasoning`, :func:`report_compliance`.
:func:`score_view` scores one view's cells, N/A for a task type a human's ``abort`` closed before
it could start (:func:`closed_before_start`).
"""

from __future__ import annotations

from robot_team.catalog import KEY_TOOLS, TASK_OWNER, TOOL_OWNERS, RubricUse, rubric_tool
from robot_team.evaluation.rubric.evidence import (
    failure_supported, find_item, grounded, journal_leaves, last_ok_output, normalized, scalar_leaves, tool_journal)
from robot_team.evaluation.rubric.record import MANAGER, Record, Task, as_task_type, view_records
from robot_team.evaluation.rubric.scores import VIEWS, Cell, Metric, ReflectionJudge, ViewScore
from robot_team.contracts.events import EventKind, TeamEventModel
from robot_team.contracts.names import role_name
from robot_team.contracts.reports import OPERATIONAL_TASKS, TaskType
from robot_team.rules.workflow.rules import TaskOutline, delegation_refusal


PREFETCH_KEYS: dict[TaskType, frozenset[str]] = {
    TaskType.NAVIGATION: frozenset({'hcw_location', 'location', 'path', 'staff', 'door', 'route'}),
    TaskType.INFO_COLLECTION: frozenset({'badge_scan', 'badge_id', 'name', 'specialty', 'staff_record'}),
    TaskType.DISPLAY: frozenset({'members', 'care_team', 'layout'}),
}
"""Delegation context keys that carry a task's own result (a pre-fetched result passed by the manager)."""

PLACEHOLDERS = ('tbd', 'todo', 'placeholder', 'n/a', '...', 'lorem', 'xxx', 'none', '-')
PLACEHOLDER_FRAGMENTS = ('lorem ipsum', 'placeholder', '[insert', '<insert', 'to be determined', 'tbd')


# --- Scoring helpers ---------------------------------------------------------------------------

def _tool_owner(event: TeamEventModel) -> str | None:
    return event.data.get('owner') or TOOL_OWNERS.get(event.target)


def _caller(event: TeamEventModel) -> str:
    """The role of whoever called the refused tool (a fleet's robot counts as its role)."""
    return role_name(event.data.get('caller') or event.actor)


def _cell(metric: Metric, task: TaskType | None, findings: list[tuple[float, str]], ok: str) -> Cell:
    """Return the worst finding (reasons of equally bad findings joined), or 1 with ``ok``."""
    if not findings:
        return Cell(metric=metric, task=task, score=1.0, reason=ok)
    worst = min(score for score, _ in findings)
    reasons = list(dict.fromkeys(reason for score, reason in findings if score == worst))
    return Cell(metric=metric, task=task, score=worst, reason='; '.join(reasons))


# --- Manager level -----------------------------------------------------------------------------

def _requests(rec: Record, task_type: TaskType) -> list[tuple[int, TeamEventModel]]:
    return [(i, e) for i, e in rec.kind(EventKind.DELEGATION_REQUESTED, actor=MANAGER)
            if as_task_type(e.data.get('task_type')) is task_type]


def _prefetched(request: TeamEventModel, task_type: TaskType) -> list[str]:
    context = request.data.get('context') or {}
    return sorted(k for k in context if k in PREFETCH_KEYS[task_type]) if isinstance(context, dict) else []


def _handled_at(rec: Record, task: Task, view: str) -> int | None:
    """Return the index at which failed navigation ``task`` was handled (or its deadline missed)."""
    kinds = ({EventKind.DELEGATION_REQUESTED.value, EventKind.ESCALATION_REQUESTED.value} if view == 'attempted'
             else {EventKind.DELEGATION.value, EventKind.ESCALATION.value})
    for index in range(task.failure_at + 1, len(rec.events)):
        event, d = rec.events[index], rec.events[index].data
        if event.kind == EventKind.DEADLINE_MISSED.value and d.get('task_id') == task.task_id:
            return index
        if event.kind not in kinds:
            continue
        if event.kind in (EventKind.ESCALATION_REQUESTED.value, EventKind.ESCALATION.value):
            if d.get('task_id') == task.task_id:
                return index
        elif as_task_type(d.get('task_type')) is TaskType.NAVIGATION and str(d.get('hcw_id', '')) != task.hcw_id:
            return index
    return None


def _pending_failure_windows(rec: Record, view: str) -> list[tuple[int, int]]:
    """Return ``(from, to)`` index windows in which a navigation failure awaited handling."""
    windows = []
    for task in rec.of_type(TaskType.NAVIGATION):
        if task.failure_at is None or task.status != 'failure':
            continue
        end = _handled_at(rec, task, view)
        windows.append((task.failure_at, end if end is not None else len(rec.events)))
    return windows


def _role_misalignments(rec: Record, task_type: TaskType) -> list[tuple[int, TeamEventModel]]:
    """Return the manager's pre-fetch guard events (results put into a ``task_type`` delegation)."""
    out = []
    for index, event in rec.kind(EventKind.WORKFLOW_VIOLATION):
        delegation = event.data.get('delegation') or {}
        if event.data.get('who') == MANAGER and as_task_type(delegation.get('task_type')) is task_type:
            out.append((index, event))
    return out


def delegation_accuracy(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score whether ``task_type`` was delegated to the robot that owns it (0.5: the manager pre-fetched)."""
    role, findings = TASK_OWNER[task_type], []
    metric = Metric.DELEGATION_ACCURACY
    requests = _requests(rec, task_type)
    stripped = _role_misalignments(rec, task_type)
    if view == 'attempted':
        for _, request in requests:
            robot = request.data.get('robot', request.target)
            if role_name(robot) != role:
                findings.append((0.0, f'asked {robot} to do {task_type.value} (owner: {role})'))
        for event in rec.refusals:
            if _caller(event) == MANAGER and _tool_owner(event) == role:
                findings.append((0.5, f"the manager also called {role}'s tool {event.target} itself (refused)"))
        for _, event in stripped:
            found = '; '.join(event.data.get('found') or []) or event.reason
            findings.append((0.5, f'the manager passed a pre-fetched result to {role} ({found}; removed)'))
        windows = _pending_failure_windows(rec, view)
        for index, event in rec.kind(EventKind.WORKFLOW_VIOLATION):
            if event.data.get('who') == MANAGER or as_task_type(event.data.get('task_type')) is not task_type:
                continue
            if not any(a < index <= b for a, b in windows):
                findings.append((0.5, f'delegated out of workflow order first (refused: {event.reason})'))
        sent = requests
    else:
        delegated = [t for t in rec.of_type(task_type) if t.delegated_at is not None]
        if not delegated:
            return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} was never delegated')
        for task in delegated:
            if role_name(task.robot) != role:
                findings.append((0.0, f'{task.task_id} went to {task.robot} (owner: {role})'))
        # the request each delegation went out from: the latest one of that type before it; the
        # manager's guard strips pre-fetched results between the two
        sent = []
        for task in delegated:
            before = [(i, r) for i, r in requests if i < task.delegated_at]
            if before and not any(before[-1][0] < i < task.delegated_at for i, _ in stripped):
                sent.append(before[-1])
    if not requests:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} was never delegated')
    for _, request in sent:
        keys = _prefetched(request, task_type)
        if keys:
            findings.append((0.5, f"the manager passed a pre-fetched result to {role} ({', '.join(keys)})"))
    return _cell(metric, task_type, findings, f'delegated to {role}, the owner, with no pre-fetched result')


def completion_judgment(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score the manager's judgment of each report of ``task_type`` against the grounded status."""
    metric, findings = Metric.COMPLETION_JUDGMENT, []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value} to judge')
    for task in tasks:
        if task.judged is None:
            findings.append((0.0, f'{task.task_id} ({task.status}) was never judged'))
        elif task.judged != task.status:
            findings.append((0.0, f'{task.task_id} judged a {task.judged}, but it was a {task.status}'
                             + (f" ({task.report.get('issue')})" if task.report and task.report.get('issue') else '')))
    successes = [t for t in tasks if t.judged == 'success' and t.status == 'success' and t.judged_at is not None]
    if successes:
        first = min(t.judged_at for t in successes)
        done = next(t for t in successes if t.judged_at == first)
        if view == 'attempted':
            redo = [e for i, e in _requests(rec, task_type) if i > first]
        else:
            redo = [rec.events[t.delegated_at] for t in rec.of_type(task_type)
                    if t.delegated_at is not None and t.delegated_at > first]
        for event in redo:
            why = (event.reason or event.data.get('reason') or '').strip()
            findings.append((0.5, f'redid {task_type.value} after {done.task_id} had clearly succeeded'
                             + (f' (reason given: {why})' if why else ' without a reason')))
    ok = '; '.join(f'{t.task_id} judged a {t.judged}, as grounded' for t in tasks)
    return _cell(metric, task_type, findings, ok)


_DECISIONS_ATTEMPTED = (EventKind.DELEGATION_REQUESTED, EventKind.ESCALATION_REQUESTED, EventKind.REFLECTION,
                        EventKind.REFLECTION_REJECTED, EventKind.EPISODE_FINISHED, EventKind.TOOL_REFUSED)
_DECISIONS_FLOOR = (EventKind.DELEGATION, EventKind.ESCALATION, EventKind.REFLECTION, EventKind.EPISODE_FINISHED)


def first_decision(rec: Record, start: int, view: str,
                   task_id: str) -> tuple[int | None, TeamEventModel | None]:
    """Return the manager's first decision after index ``start`` (or ``task_id``'s missed deadline)."""
    kinds = {k.value for k in (_DECISIONS_ATTEMPTED if view == 'attempted' else _DECISIONS_FLOOR)}
    for index in range(start + 1, len(rec.events)):
        event = rec.events[index]
        if event.kind == EventKind.DEADLINE_MISSED.value and event.data.get('task_id') == task_id \
                and event.data.get('deadline', 'issue_handling') == 'issue_handling':
            return index, event
        if event.kind not in kinds:
            continue
        if event.kind == EventKind.ESCALATION.value:
            return index, event
        if event.kind == EventKind.TOOL_REFUSED.value:
            if _caller(event) == MANAGER:
                return index, event
            continue
        if event.actor == MANAGER:
            return index, event
    return None, None


def issue_handling(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score whether, right after each navigation failure, the manager proposed an alternative or escalated."""
    metric = Metric.ISSUE_HANDLING
    if task_type is not TaskType.NAVIGATION:
        return Cell(metric=metric, task=task_type, score=None, reason='applies to navigation only (N/A)')
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason='navigation never reported: no issue handled')
    failed = [t for t in tasks if t.status == 'failure' and t.failure_at is not None]
    if not failed:
        return Cell(metric=metric, task=task_type, score=None, reason='no navigation failure to handle (N/A)')
    findings, handled = [], []
    for task in failed:
        _, event = first_decision(rec, task.failure_at, view, task.task_id)
        d = event.data if event is not None else {}
        if event is None:
            findings.append((0.0, f'{task.task_id} failed and the manager did nothing after it'))
        elif event.kind == EventKind.DEADLINE_MISSED.value:
            findings.append((0.0, f'{task.task_id} failed and the manager let the issue-handling deadline pass'))
        elif event.kind in (EventKind.ESCALATION_REQUESTED.value, EventKind.ESCALATION.value):
            if d.get('task_id') == task.task_id and d.get('raised_by', MANAGER) == MANAGER:
                handled.append(f'escalated {task.task_id}')
            else:
                findings.append((0.0, f'after {task.task_id} failed: escalation of {d.get("task_id")!r} by '
                                 f'{d.get("raised_by", MANAGER)}, not the manager handling it'))
        elif event.kind in (EventKind.DELEGATION_REQUESTED.value, EventKind.DELEGATION.value):
            hcw = str(d.get('hcw_id', ''))
            if as_task_type(d.get('task_type')) is not TaskType.NAVIGATION:
                findings.append((0.0, f'after {task.task_id} failed the manager went on to '
                                 f'{d.get("task_type")} instead of handling the issue'))
            elif hcw and hcw == task.hcw_id:
                findings.append((0.0, f'after {task.task_id} failed the manager retried the same HCW #{hcw}: '
                                 f'no alternative, no escalation'))
            else:
                handled.append(f'proposed alternative HCW #{hcw} for {task.task_id}')
        else:
            findings.append((0.0, f'after {task.task_id} failed the manager did {event.kind} '
                             f'({event.summary}) instead of handling the issue'))
    return _cell(metric, task_type, findings, '; '.join(handled) + ' right after the failure report')


def _placeholder(text: str) -> bool:
    low = str(text).strip().lower()
    return low in PLACEHOLDERS or not low or any(f in low for f in PLACEHOLDER_FRAGMENTS if f != 'tbd') \
        or low.startswith('tbd')


def _reflection_findings(rec: Record, reflection: dict) -> list[tuple[float, str]]:
    """Check a reflection's structure against the record."""
    findings = []
    outcomes = [o for o in reflection.get('task_outcomes') or [] if isinstance(o, dict)]
    recovery = list(reflection.get('recovery_attempts') or [])
    lessons = list(reflection.get('lessons_learned') or [])
    texts = [o.get('summary', '') for o in outcomes] + recovery + lessons
    if not outcomes and not recovery and not lessons:
        return [(0.0, 'empty reflection')]
    if any(_placeholder(t) for t in texts):
        findings.append((0.0, 'placeholder text instead of content'))
    for name, section in (('task outcomes', outcomes), ('recovery attempts', recovery), ('lessons learned', lessons)):
        if not section:
            findings.append((0.5, f'section {name} missing'))
    covered = {as_task_type(o.get('task_type')) for o in outcomes}
    for task_type in OPERATIONAL_TASKS:
        if task_type not in covered:
            findings.append((0.5, f'no outcome for {task_type.value}'))
            continue
        tasks = rec.of_type(task_type)
        claimed = next(o for o in outcomes if as_task_type(o.get('task_type')) is task_type).get('status')
        actual = tasks[-1].status if tasks and tasks[-1].reported else 'failure'
        if claimed and claimed != actual:
            findings.append((0.5, f'outcome of {task_type.value} says {claimed}, the record says {actual}'))
    return findings


def _record_summary(rec: Record) -> dict:
    return {'tasks': [{'task_id': t.task_id, 'task_type': t.task_type.value, 'robot': t.robot, 'hcw_id': t.hcw_id,
                       'status': t.status, 'issue': (t.report or {}).get('issue', '')} for t in rec.tasks.values()],
            'escalations': [{k: e.data.get(k) for k in ('escalation_id', 'task_id', 'raised_by')} | {
                'reason': e.reason} for _, e in rec.kind(EventKind.ESCALATION)],
            'human_decisions': [{k: e.data.get(k) for k in ('escalation_id', 'decision', 'hcw_id')}
                                for _, e in rec.kind(EventKind.HUMAN_DECISION)]}


def reflection_quality(rec: Record, view: str, judge: ReflectionJudge | None = None) -> Cell:
    """Score the manager's reflection: its own work, all three outcomes, recovery, lessons, no placeholder."""
    metric, findings = Metric.REFLECTION_QUALITY, []
    accepted = [e for _, e in rec.kind(EventKind.REFLECTION)]
    attempts: list[tuple[TeamEventModel, dict | None]] = [(e, e.data) for e in accepted]
    if view == 'attempted':
        for _, event in rec.kind(EventKind.REFLECTION_REJECTED):
            attempts.append((event, event.data.get('reflection')))
    if not attempts:
        return Cell(metric=metric, task=None, score=0.0, reason='no reflection was written')
    for event, reflection in attempts:
        if event.actor != MANAGER:
            findings.append((0.0, f'written by {event.actor}, not by the manager itself'))
        elif reflection is None:
            findings.append((0.5, f'reflection submitted before the workflow allowed it (refused: {event.reason})'))
        else:
            label = 'refused reflection: ' if event.kind == EventKind.REFLECTION_REJECTED.value else ''
            findings += [(s, label + r) for s, r in _reflection_findings(rec, reflection)]
    if judge is not None and accepted and accepted[-1].actor == MANAGER:
        score, reason = judge(accepted[-1].data, _record_summary(rec))
        if score < 1.0:
            findings.append((score, f'LLM judge: {reason}'))
    return _cell(metric, None, findings, 'by the manager: outcomes of all three tasks, recovery attempts and '
                 'lessons learned, no placeholder')


# --- Robot level -------------------------------------------------------------------------------

def tool_usage(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score whether the task's tool was used, and only by its owner."""
    metric, role, findings = Metric.TOOL_USAGE, TASK_OWNER[task_type], []
    tasks = [t for t in rec.of_type(task_type) if t.delegated_at is not None or t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'{task_type.value} never ran: no tool used')
    called = {tool for t in tasks for tool in t.tools_called}
    for task in tasks:
        if not task.tools_called:
            findings.append((0.0, f'{role} used no tool on {task.task_id}'))
    for tool in KEY_TOOLS[task_type]:
        if tool not in called:
            findings.append((0.0, f'{role} never called {tool}'))
    if view == 'attempted':
        for event in rec.refusals:
            caller, tool_owner = _caller(event), _tool_owner(event)
            if tool_owner == role and caller != role:
                findings.append((0.0, f'{caller} tried {role}\'s tool {event.target} (refused)'))
            elif caller == role and tool_owner != role:
                findings.append((0.0, f'{role} tried {event.target}, which it does not own (refused)'))
    used = ', '.join(sorted(called))
    return _cell(metric, task_type, findings, f'{used} used by {role} only')


def _reasoning_items(task_type: TaskType, report: dict) -> list[tuple[str, bool]]:
    """Return each item the report needs and whether it is present and grounded in the tools' output."""
    data, journal = report.get('data') or {}, tool_journal(report)
    issue, failed = (report.get('issue') or '').strip(), report.get('status') != 'success'
    issue_item = ('issue grounded in the tools' if failed else 'no issue',
                  (bool(issue) and failure_supported(task_type, journal, data)) if failed else not issue)
    if task_type is TaskType.NAVIGATION:
        location_tool = rubric_tool(RubricUse.LOCATION)
        return [('HCW location', grounded(find_item(data, 'location'), journal_leaves(journal, (location_tool,)))),
                ('path', grounded(find_item(data, 'path'), journal_leaves(journal))),
                issue_item]
    if failed:
        return [issue_item]
    if task_type is TaskType.INFO_COLLECTION:
        record = last_ok_output(journal, rubric_tool(RubricUse.IDENTITY)) or {}

        def same(item, key):
            value = find_item(data, item)
            return value is not None and normalized(value) == normalized(record.get(key))
        return [('ID', same('id', 'hcw_id')), ('name', same('name', 'name')),
                ('specialty/role', same('specialty', 'specialty') or same('specialty', 'role'))]
    fetched = last_ok_output(journal, rubric_tool(RubricUse.CARE_TEAM)) or {}
    members = find_item(data, 'members')
    layout = str(find_item(data, 'layout') or '')
    names = [m.get('name', '') for m in members or [] if isinstance(m, dict)]
    built = bool(layout.strip()) and bool(names) and all(n and n.lower() in layout.lower() for n in names)
    return [('fetched care team', grounded(members, scalar_leaves(fetched.get('members')))),
            ('layout plan built from it', built)]


def local_reasoning(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score whether each report holds what the task needs, grounded in the tool output."""
    metric, findings, good = Metric.LOCAL_REASONING, [], []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value}')
    for task in tasks:
        if view == 'attempted' and task.false_completion is not None:
            findings.append((0.0, f'{task.task_id}: claimed success against its own tools '
                             f'({task.false_completion.reason})'))
            continue
        if task.report is None:
            if view == 'attempted':
                findings.append((0.0, f'{task.task_id}: the report did not validate'))
            continue
        items = _reasoning_items(task_type, task.report)
        missing = [name for name, ok in items if not ok]
        if len(missing) == len(items):
            findings.append((0.0, f'{task.task_id}: missing or ungrounded: {", ".join(missing)}'))
        elif missing:
            findings.append((0.5, f'{task.task_id}: missing or ungrounded: {", ".join(missing)}'))
        else:
            good.append(f'{task.task_id}: ' + ', '.join(name for name, _ in items))
    if not good and not findings:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no valid report on {task_type.value}')
    return _cell(metric, task_type, findings, 'grounded in the tools: ' + '; '.join(good))


def report_compliance(rec: Record, task_type: TaskType, view: str) -> Cell:
    """Score whether every report states its issue status explicitly ('issue reported' or 'no issue')."""
    metric, findings, good = Metric.REPORT_COMPLIANCE, [], []
    tasks = [t for t in rec.of_type(task_type) if t.reported]
    if not tasks:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no report on {task_type.value}')
    for task in tasks:
        if view == 'attempted':
            for event in task.rejected:
                findings.append((0.0, f'{task.task_id}: report rejected ({event.reason})'))
            if task.false_completion is not None:
                findings.append((0.0, f'{task.task_id}: claimed "no issue" although '
                                 f'{task.false_completion.reason}'))
        report = task.report
        if report is None:
            continue
        status, issue = report.get('status'), (report.get('issue') or '').strip()
        if status == 'failure' and not issue:
            findings.append((0.0, f'{task.task_id}: failure without an issue'))
        elif status not in ('success', 'failure'):
            findings.append((0.0, f'{task.task_id}: no explicit status ({status!r})'))
        else:
            good.append(f'{task.task_id}: ' + (f'issue reported ({issue})' if issue else 'no issue'))
    if not good and not findings:
        return Cell(metric=metric, task=task_type, score=0.0, reason=f'no valid report on {task_type.value}')
    return _cell(metric, task_type, findings, '; '.join(good))


# --- A view ------------------------------------------------------------------------------------

def closed_before_start(events: list[TeamEventModel]) -> dict[TaskType, str]:
    """Return the operational task types a human's ``abort`` closed before they could start, with why.

    A type counts when nothing of it was ever requested or delegated and, at the first human
    decision that closed the episode (the supervisor's ``human_decision`` event with
    ``closed: true``), the gate's order rule (:func:`robot_team.rules.workflow.rules.delegation_refusal`,
    rule 5) refused it: an earlier step had not succeeded. After that decision only the reflection
    may start (rule 4), so the type's cells do not apply. A type the gate already allowed when the
    human closed the episode is not in the result: the manager could have delegated it and did not.
    Read from the whole record (both views: what the floor allowed, whoever decided).
    """
    rec = Record(list(events))
    closing = next((i for i, e in rec.kind(EventKind.HUMAN_DECISION) if e.data.get('closed')), None)
    if closing is None:
        return {}
    decision = rec.events[closing]
    started = {t.task_type for t in rec.tasks.values() if t.delegated_at is not None}
    started |= {as_task_type(e.data.get('task_type')) for _, e in rec.kind(EventKind.DELEGATION_REQUESTED)}
    before = sorted((t for t in rec.tasks.values() if t.delegated_at is not None and t.delegated_at < closing),
                    key=lambda t: t.delegated_at)   # in authorization order, as the gate saw them then
    outline = [TaskOutline(t.task_id, t.task_type,
                           t.status if t.report_at is not None and t.report_at < closing else 'running',
                           (t.report or {}).get('issue', '')) for t in before]
    closed = {}
    for task_type in OPERATIONAL_TASKS:
        refusal = delegation_refusal(task_type, outline)
        if task_type not in started and refusal is not None and refusal[0] == 'order':
            closed[task_type] = (f"a human closed the episode ({decision.data.get('decision')} on "
                                 f"{decision.data.get('escalation_id')}) while {task_type.value} could not start "
                                 f"yet ({refusal[1]}) (N/A)")
    return closed


def score_view(events: list[TeamEventModel], view: str, *, judge: ReflectionJudge | None = None,
               _records: tuple[Record, Record] | None = None) -> ViewScore:
    """Score the rubric's 19 cells (17 applicable on the published scenario) in ``view``.

    The cells of a task type a human's ``abort`` closed before it could start are N/A
    (:func:`closed_before_start`).

    Raises
    ------
    ValueError
        If ``view`` is not ``'attempted'`` or ``'floor'``.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown view '{view}': expected one of {', '.join(VIEWS)}")
    rec, robots = _records or view_records(events, view)
    cells = []
    for task_type in OPERATIONAL_TASKS:
        cells += [delegation_accuracy(rec, task_type, view), completion_judgment(rec, task_type, view),
                  issue_handling(rec, task_type, view)]
    cells.append(reflection_quality(rec, view, judge))
    for task_type in OPERATIONAL_TASKS:
        cells += [tool_usage(robots, task_type, view), local_reasoning(robots, task_type, view),
                  report_compliance(robots, task_type, view)]
    closed = closed_before_start(events)
    cells = [Cell(metric=c.metric, task=c.task, score=None, reason=closed[c.task])
             if c.task in closed and c.score is not None else c for c in cells]
    return ViewScore(view=view, cells=cells)
