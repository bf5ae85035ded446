"""The run report (``report.json``), built from the event record alone.

Shape (JSON)::

    {scenario, brain, mode, outcome, expected_outcome, outcome_as_expected,
     tasks: [{task_id, name, robot, status, issue, summary, judged_status, evidence}],
     escalations: [{escalation_id, task_id, raised_by, reason, decision, hcw_id, operator_id}],
     reflection, guards: {kind: count}, sim_time_s, wall_time_s, real_time_factor,
     events: {count, files, sequence_gaps, complete}, llm,
     decisions: {llm, protocol, fallback, human}, takeovers, safe_defaults: [...],
     unserved_patients: [{patient_id, room, esi_level, assigned_hcw_id, arrived_s}],
     cases: [{patient_id, esi_level, room, arrival_s, started_s, closed_s, outcome, expected_outcome,
              door_to_provider_s, waited_for_robot_s, escalations, takeovers, decisions}]}

``outcome`` is the last ``episode_finished`` event's: ``success``, ``failure``, ``escalated``,
``held_for_human`` (the sim time limit reached while the team was held on an escalation a person
was asked about and has not answered: :func:`time_limit_outcome`), ``timeout`` (the sim time
limit, otherwise), ``interrupted`` (SIGINT/SIGTERM), ``start_error``.
``decisions`` counts decisions per source (:mod:`robot_team.contracts.decisions`); ``safe_defaults`` lists
what the supervisor applied when the manager missed a deadline. ``unserved_patients`` lists the
patients a person was asked to take because their case waited the onboarding deadline for the
case in progress (``patient_unserved`` events, once per patient; ``arrived_s`` sim s).
``cases`` has one entry per case (:func:`case_results`), in arrival order.

``evidence`` condenses each task's ground truth: Nav2 goal results for navigation, the badge
scan and directory record for info collection, the display service reply for display.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Callable

from robot_team.catalog import EVIDENCE_TOOLS, ROLES, TOOLS_BY_NAME
from robot_team.contracts.decisions import count_decisions, count_takeovers
from robot_team.contracts.events import EventKind, TeamEventModel, sequence_gaps
from robot_team.contracts.files import write_atomically
from robot_team.contracts.names import SUPERVISOR, Role

GUARD_KINDS = (EventKind.TOOL_REFUSED, EventKind.DELEGATION_REFUSED, EventKind.WORKFLOW_VIOLATION,
               EventKind.FALSE_COMPLETION, EventKind.REPORT_REJECTED, EventKind.REFLECTION_REJECTED,
               EventKind.DEADLINE_MISSED, EventKind.INPUT_ERROR, EventKind.NODE_CRASHED, EventKind.BRAIN_ERROR,
               EventKind.INVALID_CALL)


HELD_FOR_HUMAN = 'held_for_human'
"""The outcome of an episode whose time limit found the team held on an open escalation (a person asked)."""


def time_limit_outcome(events: list[TeamEventModel]) -> tuple[str, str]:
    """Return the outcome of an episode stopped at its time limit, and why, from its record ``events``.

    :data:`HELD_FOR_HUMAN` when the team is held (``team_held`` not released) on an escalation that
    is still open: announced to people (``escalation``), neither decided by a person
    (``human_decision``) nor expired (``escalation_expired``). The team waits, safely, for the
    person it paged; a run that simply ran out of time is ``timeout``.
    """
    opened, closed, held = [], set(), {}
    for event in events:
        escalation = str(event.data.get('escalation_id', ''))
        if event.kind == EventKind.ESCALATION.value and escalation not in opened:
            opened.append(escalation)
        elif event.kind in (EventKind.HUMAN_DECISION.value, EventKind.ESCALATION_EXPIRED.value):
            closed.add(escalation)
        elif event.kind == EventKind.TEAM_HELD.value:
            held[escalation] = event.reason
        elif event.kind == EventKind.TEAM_RELEASED.value:
            held.pop(escalation, None)
    waiting = [e for e in opened if e not in closed and e in held]
    if waiting:
        return HELD_FOR_HUMAN, (f"the team is held on {', '.join(waiting)}, announced to people and not answered "
                                f'({held[waiting[0]]})')
    return 'timeout', 'no episode end within the time limit, and no open escalation holds the team'


def _evidence(task_type: str, journal: list[dict]) -> dict:
    """Condense a tool journal into the task's ground truth (each evidence tool under its catalog key)."""
    evidence: dict = {}
    for entry in journal:
        if entry.get('tool') not in EVIDENCE_TOOLS.get(task_type, ()):
            continue
        decl = TOOLS_BY_NAME[entry['tool']]
        item = {'ok': entry.get('ok'), 'output': entry.get('output'), 'error': entry.get('error', '')}
        if decl.many:
            evidence.setdefault(decl.evidence_key, []).append(item)
        else:
            evidence[decl.evidence_key] = item
    return evidence


def evidence_of(task_type: str, evidence: dict) -> dict:
    """Condense a report's ``evidence`` (its ``tool_journal``) into the task's ground truth (as in the report)."""
    return _evidence(task_type, (evidence or {}).get('tool_journal', []))


def truth_text(evidence: dict) -> str:
    """Return a task's condensed ground truth (:func:`evidence_of`) in a few words, e.g. 'badge ED-0090 -> Dr. X'.

    Each role's catalog declaration (:attr:`~robot_team.catalog.RoleDecl.truth`) words its own task's.
    """
    for role in ROLES:
        text = role.truth(evidence)
        if text:
            return text
    return '-'


def build_report(events: list[TeamEventModel], *, scenario: str, brain: str, mode: str,
                 expected_outcome: str | None, wall_time_s: float, files: dict | None = None,
                 case_expected: dict[str, str | None] | None = None) -> dict:
    """Return the run report for ``events`` (see the module docstring for its shape).

    ``case_expected``: each case's expected outcome by patient ID (default: ``expected_outcome``).
    """
    by_kind: dict[str, list[TeamEventModel]] = {}
    for event in events:
        by_kind.setdefault(event.kind, []).append(event)
    finished = by_kind.get(EventKind.EPISODE_FINISHED.value, [])
    outcome = finished[-1].data.get('outcome', 'failure') if finished else 'timeout'
    judgments = {e.data.get('task_id'): e.data.get('judged_status') for e in by_kind.get(EventKind.JUDGMENT.value, [])}
    tasks = []
    for event in by_kind.get(EventKind.TASK_REPORT.value, []):
        d = event.data
        tasks.append({
            'task_id': d.get('task_id'), 'name': d.get('task_type'), 'robot': d.get('robot', event.actor),
            'status': d.get('status'), 'issue': d.get('issue', ''), 'summary': d.get('summary', ''),
            'judged_status': judgments.get(d.get('task_id')),
            'evidence': _evidence(d.get('task_type', ''), d.get('evidence', {}).get('tool_journal', []))})
    escalations: dict[str, dict] = {}
    for event in by_kind.get(EventKind.ESCALATION.value, []):
        d = event.data
        escalations[d.get('escalation_id', '')] = {
            'escalation_id': d.get('escalation_id'), 'task_id': d.get('task_id'), 'raised_by': d.get('raised_by'),
            'reason': event.reason or d.get('reason', ''), 'sim_time_s': round(event.stamp_s, 3),
            'decision': None, 'hcw_id': None, 'operator_id': None}
    for event in by_kind.get(EventKind.HUMAN_DECISION.value, []):
        d = event.data
        entry = escalations.setdefault(d.get('escalation_id', ''), {'escalation_id': d.get('escalation_id')})
        entry.update(decision=d.get('decision'), hcw_id=d.get('hcw_id'), operator_id=d.get('operator_id'))
    reflections = by_kind.get(EventKind.REFLECTION.value, [])
    reflection = None
    if reflections:
        reflection = {k: reflections[-1].data.get(k) for k in ('task_outcomes', 'recovery_attempts', 'lessons_learned')}
    end = finished[-1] if finished else (events[-1] if events else None)
    sim_time = round(end.stamp_s, 3) if end else 0.0
    gaps = sequence_gaps(events)
    guard_counts = Counter(e.kind for e in events if e.kind in {k.value for k in GUARD_KINDS})
    return {
        'scenario': scenario, 'brain': brain, 'mode': mode, 'outcome': outcome,
        'expected_outcome': expected_outcome,
        'outcome_as_expected': None if expected_outcome is None else outcome == expected_outcome,
        'tasks': tasks, 'escalations': list(escalations.values()), 'reflection': reflection,
        'guards': dict(guard_counts), 'sim_time_s': sim_time, 'wall_time_s': round(wall_time_s, 3),
        'real_time_factor': round(sim_time / wall_time_s, 2) if wall_time_s > 0 else None,
        'events': {'count': len(events), 'files': files or {}, 'sequence_gaps': gaps, 'complete': not gaps},
        'llm': llm_usage(events),
        'decisions': count_decisions(events), 'takeovers': count_takeovers(events),
        'safe_defaults': [{k: e.data.get(k) for k in ('directive', 'directive_id', 'escalation_id', 'deadline', 'cue')}
                          | {'reason': e.reason, 'sim_time_s': round(e.stamp_s, 3)}
                          for e in by_kind.get(EventKind.SAFE_DEFAULT.value, [])],
        'unserved_patients': unserved_patients(events),
        'cases': case_results(events, case_expected or {}, expected_outcome),
    }


def case_report(events: list[TeamEventModel], case_id: str, *, scenario: str, brain: str, mode: str,
                expected: dict[str, str | None] | None = None) -> dict:
    """Return one case's report from the run's ``events`` so far (a deployment writes one as each case closes).

    Shape: ``case_id``, ``outcome`` (the manager's ``case_closed``; None while open),
    ``scenario``, ``brain``, ``mode``, ``case`` (its :func:`case_results` entry: arrival, start,
    close, door-to-provider time...), and of the case's own events (:func:`case_events`):
    ``tasks``, ``escalations``, ``reflection``, ``guards``, ``decisions``, ``takeovers``,
    ``safe_defaults``, ``llm``, ``events`` (``count``, ``sequence_gaps`` of the whole record so far).

    Raises
    ------
    KeyError
        If ``events`` record no case ``case_id`` (no ``case_opened``/``case_waiting``).
    """
    entry = next((c for c in case_results(events, expected or {}) if c['patient_id'] == case_id), None)
    if entry is None:
        raise KeyError(f'case {case_id!r}: the record has no such case (no case_opened or case_waiting event)')
    own = case_events(events, case_id)
    whole = build_report(own, scenario=scenario, brain=brain, mode=mode, expected_outcome=entry['expected_outcome'],
                         wall_time_s=0.0)
    gaps = sequence_gaps(events)
    return {'case_id': case_id, 'outcome': entry['outcome'], 'scenario': scenario, 'brain': brain, 'mode': mode,
            'case': entry, **{key: whole[key] for key in ('tasks', 'escalations', 'reflection', 'guards', 'decisions',
                                                          'takeovers', 'safe_defaults', 'llm')},
            'events': {'count': len(own), 'sequence_gaps': gaps, 'complete': not gaps}}


def case_report_path(out_dir: Path, case_id: str) -> Path:
    """Return where a run in ``out_dir`` keeps case ``case_id``'s report: ``cases/<case>.json`` (a safe file name)."""
    safe = ''.join(c if c.isalnum() or c in '._-' else '_' for c in case_id) or '_'
    return Path(out_dir) / 'cases' / f'{safe}.json'


def write_case_report(events: list[TeamEventModel], case_id: str, out_dir: Path, **fields) -> Path:
    """Write :func:`case_report` of ``case_id`` (``fields``: its keyword arguments) to :func:`case_report_path`.

    Atomic (:func:`~robot_team.contracts.files.write_atomically`): a program that watches
    ``cases/`` (or reads a report as soon as it exists) never reads a partial one.

    Raises
    ------
    KeyError
        If ``events`` record no case ``case_id`` (as :func:`case_report`).
    OSError
        If the file cannot be written.
    """
    report = case_report(events, case_id, **fields)
    path = case_report_path(out_dir, case_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomically(path, json.dumps(report, indent=2, default=str))


class OpenRecord:
    """An open-ended run's record as it goes (a deployment's): the journal and each case's report.

    Every event :meth:`add` takes is appended to ``out_dir/events.jsonl`` at once (a run that is
    killed loses nothing written; the finished run's whole record, in order, replaces it), and
    each case the manager closes (``case_closed``) gets its report from :meth:`write_reports`
    (:func:`write_case_report`, ``fields`` its keyword arguments: ``scenario``, ``brain``,
    ``mode``, ``expected``). The runner (``robot-team run``) and the launch recorder
    (:class:`robot_team.bringup.episode.EpisodeRecorder`) both keep one.

    Thread-safe: :meth:`add` runs in the executor's thread, :meth:`write_reports` in another.

    Raises
    ------
    OSError
        If ``events.jsonl`` cannot be created in ``out_dir``.
    """

    def __init__(self, out_dir: Path, **fields):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._fields = fields
        self._lock = threading.Lock()
        self._journal = open(self.out_dir / 'events.jsonl', 'w', encoding='utf-8')   # a new record
        self._closed: list[str] = []      # cases closed whose report is not written yet
        self.reports: dict[str, str] = {}
        """Each case's report written so far: case -> path."""

    def add(self, event: TeamEventModel) -> None:
        """Journal ``event``; note the case it closes (the manager's ``case_closed``)."""
        with self._lock:
            if self._journal is not None:
                self._journal.write(event.model_dump_json() + '\n')
                self._journal.flush()
            if event.kind == EventKind.CASE_CLOSED.value and event.actor == Role.MANAGER.value:
                self._closed.append(str(event.data.get('case_id', '')))

    def write_reports(self, events: Callable[[], list[TeamEventModel]], emit: Callable[..., object]) -> None:
        """Write the report of each case closed since the last call, from the record ``events()`` returns.

        A report that cannot be written (no such case in the record, a file error) is recorded
        through ``emit`` (an :class:`~robot_team.ros.emitter.EventEmitter`'s ``emit``) as ``input_error``.
        """
        with self._lock:
            pending, self._closed = self._closed, []
        if not pending:
            return
        record = events()
        for case_id in pending:
            try:
                path = write_case_report(record, case_id, self.out_dir, **self._fields)
            except (KeyError, OSError) as exc:   # recorded, not dropped: the record says what was missing
                emit(EventKind.INPUT_ERROR, f'no report for case {case_id}', target=case_id, reason=str(exc),
                     case_id=case_id)
                continue
            self.reports[case_id] = str(path)

    def close(self) -> None:
        """Close the journal (the run's whole record is written next)."""
        with self._lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None


def case_of(event: TeamEventModel, task_case: dict[str, str]) -> str:
    """Return the case (patient ID) ``event`` belongs to: its ``case_id``, else its task's case; '' none."""
    case = event.data.get('case_id')
    if case:
        return str(case)
    return task_case.get(str(event.data.get('task_id', '')), '')


def task_cases(events: list[TeamEventModel]) -> dict[str, str]:
    """Return each task's case (task ID -> patient ID), as the gate's ``delegation_authorized`` names it."""
    return {str(e.data.get('task_id', '')): str(e.data['case_id']) for e in events
            if e.kind == EventKind.DELEGATION_AUTHORIZED.value and e.data.get('case_id')}


def case_events(events: list[TeamEventModel], case_id: str) -> list[TeamEventModel]:
    """Return the events of case ``case_id`` and those of no case (the floor's, the nodes'), in order."""
    task_case = task_cases(events)
    return [e for e in events if case_of(e, task_case) in (case_id, '')]


def case_results(events: list[TeamEventModel], expected: dict[str, str | None],
                 default_expected: str | None = None) -> list[dict]:
    """Return one entry per case ``events`` record, in arrival order (times: sim s).

    Each: ``patient_id``, ``esi_level``, ``room``; ``arrival_s`` (the hospital's ``patient_arrival``,
    else the supervisor's receipt); ``started_s`` (``case_opened``: the gate serves it; None if never);
    ``closed_s`` and ``outcome`` (the manager's ``case_closed``; None while open);
    ``expected_outcome`` (``expected``, else ``default_expected``); ``door_to_provider_s``: arrival to
    the first HCW walking into the case's room after the case started (the simulator's
    ``hcw_entering``/``hcw_arrived``: ground truth), or to the case's first navigation the manager
    accepted as a success if earlier (an HCW already in the room, escorted there for an earlier
    patient: that success was checked against the RTLS); None if neither; ``waited_for_robot_s``
    (arrival to start, and the waits of the open case for a robot busy with another case's task:
    the manager's ``waiting_for_robot`` to its next delegation); ``escalations`` (opened about the
    case), ``ended_by_record`` (``cancelled`` or ``finished``: the hospital's record ended the case,
    ``case_ended_by_record``, and its outcome is ``escalated``, as any case a person closed with
    ``abort``; None otherwise), ``takeovers`` and ``decisions``
    by source (:func:`~robot_team.contracts.decisions.count_decisions`)
    of the case's events (:func:`case_of`).
    """
    cases: dict[str, dict] = {}
    arrivals: dict[str, float] = {}
    escalations: dict[str, set] = {}        # case -> the IDs of the escalations opened about it
    entries: list[tuple[float, str]] = []   # (time, room) of HCWs walking into rooms
    escorted: dict[str, float] = {}         # case -> its first navigation judged a success
    parked: dict[str, float] = {}           # case -> since when it waits for a busy robot
    ended_by_record: dict[str, str] = {}    # case -> the hospital's record's status that ended it
    robot_waits: dict[str, float] = {}      # case -> time it waited for busy robots, s
    for event in events:
        d = event.data
        if event.actor == Role.MANAGER.value and d.get('case_id'):
            if event.kind == EventKind.OBSERVATION.value and d.get('cue') == 'waiting_for_robot':
                parked.setdefault(str(d['case_id']), event.stamp_s)
            elif event.kind == EventKind.DELEGATION.value and str(d['case_id']) in parked:
                case_id = str(d['case_id'])
                robot_waits[case_id] = robot_waits.get(case_id, 0.0) + event.stamp_s - parked.pop(case_id)
        if event.kind == EventKind.SIM.value and d.get('what') == 'patient_arrival':
            arrivals.setdefault(str(d.get('patient_id', '')), event.stamp_s)
        elif event.kind == EventKind.SIM.value and d.get('what') in ('hcw_entering', 'hcw_arrived'):
            entries.append((event.stamp_s, str(d.get('room', ''))))
        elif event.kind in (EventKind.CASE_WAITING.value, EventKind.CASE_OPENED.value) and event.actor == SUPERVISOR:
            entry = cases.setdefault(str(d.get('case_id', '')), {
                'patient_id': d.get('case_id'), 'esi_level': d.get('esi_level', 0), 'room': d.get('room', ''),
                'arrival_s': d.get('arrived_s'), 'started_s': None, 'closed_s': None, 'outcome': None})
            if event.kind == EventKind.CASE_OPENED.value:
                entry['started_s'] = round(event.stamp_s, 3)
        elif (event.kind == EventKind.JUDGMENT.value and d.get('task_type') == 'navigation'
              and d.get('judged_status') == 'success' and d.get('case_id')):
            escorted.setdefault(str(d['case_id']), event.stamp_s)
        elif event.kind == EventKind.ESCALATION.value and d.get('patient_id'):
            escalations.setdefault(str(d['patient_id']), set()).add(d.get('escalation_id'))
        elif event.kind == EventKind.CASE_ENDED_BY_RECORD.value and d.get('result') in ('closed',
                                                                                        'closes_when_opened'):
            ended_by_record[str(d.get('case_id', ''))] = d.get('status')
        elif event.kind == EventKind.CASE_CLOSED.value and event.actor == Role.MANAGER.value:
            entry = cases.get(str(d.get('case_id', '')))
            if entry is not None:
                entry.update(closed_s=round(event.stamp_s, 3), outcome=d.get('outcome'))
    task_case = task_cases(events)
    by_case: dict[str, list[TeamEventModel]] = {}
    for event in events:
        by_case.setdefault(case_of(event, task_case), []).append(event)
    for case_id, entry in cases.items():
        arrival = arrivals.get(case_id, entry['arrival_s'])
        entry['arrival_s'] = None if arrival is None else round(arrival, 3)
        entry['expected_outcome'] = expected.get(case_id, default_expected)
        start = entry['started_s']
        came = [t for t, room in entries if room == entry['room'] and start is not None and t >= start]
        came += [escorted[case_id]] if case_id in escorted else []
        entry['door_to_provider_s'] = round(min(came) - arrival, 3) if came and arrival is not None else None
        entry['waited_for_robot_s'] = (round(start - arrival + robot_waits.get(case_id, 0.0), 3)
                                       if start is not None and arrival is not None else None)
        own = by_case.get(case_id, [])
        entry['escalations'] = len(escalations.get(case_id, ()))
        entry['ended_by_record'] = ended_by_record.get(case_id)
        entry['takeovers'] = count_takeovers(own)
        entry['decisions'] = count_decisions(own)
    return sorted(cases.values(), key=lambda c: (c['arrival_s'] is None, c['arrival_s'] or 0.0, c['patient_id']))


def unserved_patients(events: list[TeamEventModel]) -> list[dict]:
    """Return the patients ``events`` record as not served (``patient_unserved``), first arrival of each.

    Each: ``{patient_id, room, esi_level, assigned_hcw_id, arrived_s}`` (``arrived_s``: ROS time
    of the supervisor's record, s), in arrival order.
    """
    seen: dict[str, dict] = {}
    for event in events:
        if event.kind != EventKind.PATIENT_UNSERVED.value:
            continue
        d = event.data
        seen.setdefault(str(d.get('patient_id', '')), {
            'patient_id': d.get('patient_id', ''), 'room': d.get('room', ''), 'esi_level': d.get('esi_level', 0),
            'assigned_hcw_id': d.get('assigned_hcw_id', ''), 'arrived_s': round(event.stamp_s, 3)})
    return list(seen.values())


def llm_usage(events: list[TeamEventModel]) -> dict:
    """Sum the LLM replies and errors of ``events`` per robot and per run (tokens, USD, requests)."""
    per_robot: dict[str, dict] = {}
    for event in events:
        if event.kind not in (EventKind.LLM_REPLY.value, EventKind.LLM_ERROR.value):
            continue
        d = event.data
        entry = per_robot.setdefault(d.get('robot', event.actor), {
            'requests': 0, 'errors': 0, 'prompt_tokens': 0, 'completion_tokens': 0, 'cost_usd': 0.0})
        if event.kind == EventKind.LLM_ERROR.value:
            entry['errors'] += 1
            continue
        entry['requests'] += 1
        entry['prompt_tokens'] += int(d.get('prompt_tokens') or 0)
        entry['completion_tokens'] += int(d.get('completion_tokens') or 0)
        entry['cost_usd'] = round(entry['cost_usd'] + float(d.get('cost_usd') or 0.0), 8)
    total = {key: sum(e[key] for e in per_robot.values())
             for key in ('requests', 'errors', 'prompt_tokens', 'completion_tokens')}
    total['cost_usd'] = round(sum(e['cost_usd'] for e in per_robot.values()), 8)
    return {'total': total, 'per_robot': per_robot}
