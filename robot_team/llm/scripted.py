"""Scripted "ideal LLM" policies for the loopback server: the well-behaved ED team.

Each policy reads the conversation it is sent (task message, earlier tool calls and results)
and answers as a well-behaved model would: the robot's own tools in workflow order (independent
calls together), a report true to the tool results; the manager delegates in order, recovers a
failed navigation with the reported alternative (or the human's decision) and reflects from the
record. Tests derive failure modes from them; the benchmark counts their prompts.
"""

from __future__ import annotations

import json
import re

from robot_team.catalog import REPORT_TOOL, TASK_OWNER, ManagerTool, Tool
from robot_team.llm.fakeserver import text, tool_calls
from robot_team.contracts.names import Role
from robot_team.contracts.reports import OPERATIONAL_TASKS, TaskType
from robot_team.roles.display.protocol import care_team_order


def results(body: dict) -> list[tuple[str, dict, dict]]:
    """Return ``(tool name, arguments, result)`` for every answered tool call in the request, in order.

    ``result`` is ``{'ok': True, 'result': output}`` for a success (sent as the output alone) and the
    tool message itself for a failure, refusal or skipped call (``{'ok': False, ...}``).
    """
    calls = {}
    out = []
    for message in body['messages']:
        for call in message.get('tool_calls') or []:
            calls[call['id']] = (call['function']['name'], json.loads(call['function']['arguments'] or '{}'))
        if message.get('role') == 'tool':
            name, args = calls.get(message['tool_call_id'], ('?', {}))
            try:
                result = json.loads(message['content'])
            except (TypeError, json.JSONDecodeError):
                result = {'text': message['content']}
            if not (isinstance(result, dict) and result.get('ok') is False):   # a success: the output itself
                result = {'ok': True, 'result': result}
            out.append((name, args, result))
    return out


def task_of(body: dict) -> dict:
    """Return the task a robot was given (its ``Task: {...}`` message)."""
    for message in body['messages']:
        if message.get('role') == 'user' and str(message.get('content', '')).startswith('Task: '):
            return json.loads(message['content'][6:].split('...(cut)')[0])
    raise ValueError('no task message')


def _last(res, name):
    return next((r for n, _, r in reversed(res) if n == name), None)


def report(status: str, issue: str = '', summary: str = '', **data) -> dict:
    """Return a submit_report assistant message."""
    return tool_calls(report_call(status, issue, summary, **data))


def report_call(status: str, issue: str = '', summary: str = '', **data) -> tuple[str, dict]:
    """Return a submit_report call ``(name, arguments)`` to combine with other calls."""
    return REPORT_TOOL, {'status': status, 'issue': issue, 'summary': summary, 'data': data}


def navigation(body: dict) -> dict:
    """Ideal navigation robot: locate, page, drive and escort in one plan; a failure is reported with alternatives."""
    task, res = task_of(body), results(body)
    hcw, room = task['hcw_id'], task['room']
    if not res:   # one plan: the HCW first in the RTLS answer, the page stops it if they cannot come
        specialty = task.get('context', {}).get('required_specialty') or 'Physician'
        return tool_calls((Tool.LOCATE_STAFF, {'hcw_ids': [hcw], 'specialty': specialty}),
                          (Tool.ROOM_DOOR_POSE, {'room': room}),
                          (Tool.PAGE_STAFF, {'hcw_id': hcw, 'message': f'Patient in {room} needs you.'}),
                          (Tool.NAVIGATE_TO_POSE, {'x': '$1.staff.0.x', 'y': '$1.staff.0.y'}),
                          (Tool.NAVIGATE_TO_POSE, {'x': '$2.x', 'y': '$2.y', 'yaw': '$2.yaw'}),
                          report_call('success', '', f'Escorted HCW #{hcw} from $1.staff.0.area to {room}.'))
    found, page = _last(res, Tool.LOCATE_STAFF), _last(res, Tool.PAGE_STAFF)
    staff = found['result'].get('staff', []) if found and found.get('ok') else []
    me = next((s for s in staff if s['hcw_id'] == hcw), None)
    if page is not None and not page.get('ok'):
        alternatives = [s for s in staff if s['hcw_id'] != hcw and s['availability'] == 'available']
        return report('failure', f"HCW #{hcw} unavailable: {(me or {}).get('detail') or page.get('error')}",
                      f'Paged #{hcw}, no response.', alternatives=[
                          {'hcw_id': s['hcw_id'], 'area': s['area'], 'specialty': s['specialty']}
                          for s in alternatives])
    failed = next((r for n, _, r in res if not r.get('ok')), None)
    return report('failure', f"{(failed or {}).get('error') or 'escort incomplete'}")


def info_collection(body: dict) -> dict:
    """Ideal info-collection robot: read the scan, look the badge up, record the check-in and report, in one plan."""
    task, res = task_of(body), results(body)
    room = task['room']
    if not res:
        summary = f'HCW #$2.hcw_id $2.name, $2.specialty, checked in at {room}.'
        return tool_calls((Tool.READ_BADGE_SCAN, {'room': room}),
                          (Tool.LOOKUP_STAFF_BY_BADGE, {'badge_id': '$1.badge_id'}),
                          (Tool.RECORD_CHECK_IN, {'room': room, 'hcw_id': '$2.hcw_id', 'badge_id': '$1.badge_id'}),
                          report_call('success', '', summary, hcw_id='$2.hcw_id', name='$2.name',
                                      specialty='$2.specialty', badge_id='$1.badge_id'))
    failed = next((r for _, _, r in res if not r.get('ok')), None)
    return report('failure', (failed or {}).get('error') or (failed or {}).get('refused') or 'check-in incomplete')


def info_collection_stepwise(body: dict) -> dict:
    """Info-collection robot that sends one call per reply and reads each result (no ``$N`` references)."""
    task, res = task_of(body), results(body)
    room = task['room']
    if not res:
        return tool_calls((Tool.READ_BADGE_SCAN, {'room': room}))
    last_name, _, last = res[-1]
    if not last.get('ok'):
        return report('failure', last.get('error') or last.get('refused') or 'tool failed')
    if last_name == Tool.READ_BADGE_SCAN:
        return tool_calls((Tool.LOOKUP_STAFF_BY_BADGE, {'badge_id': last['result']['badge_id']}))
    asked, found = next((a, r) for n, a, r in reversed(res) if n == Tool.LOOKUP_STAFF_BY_BADGE)
    who = {**asked, **found['result']}   # the badge it asked about, and the directory's answer
    done = [n for n, _, r in res if n == Tool.RECORD_CHECK_IN and r.get('ok')]
    summary = f"HCW #{who['hcw_id']} {who['name']}, {who['specialty']}, checked in at {room}."
    if not done:
        return tool_calls((Tool.RECORD_CHECK_IN, {'room': room, 'hcw_id': who['hcw_id'], 'badge_id': who['badge_id']}))
    return report('success', '', summary, hcw_id=who['hcw_id'], name=who['name'], specialty=who['specialty'],
                  badge_id=who['badge_id'])


def display(body: dict) -> dict:
    """Ideal display robot: fetch the care team, show it ordered by role, report."""
    task, res = task_of(body), results(body)
    room = task['room']
    if not res:
        return tool_calls((Tool.FETCH_CARE_TEAM, {'room': room}))
    last_name, _, last = res[-1]
    if not last.get('ok'):
        return report('failure', last.get('error') or 'tool failed')
    if last_name == Tool.FETCH_CARE_TEAM:   # show and report together
        members = care_team_order(last['result']['members'])
        entries = [{k: m[k] for k in ('role', 'hcw_id', 'name', 'specialty')} for m in members]
        return tool_calls((Tool.SHOW_DISPLAY, {'room': room, 'title': f'{room} care team', 'layout': 'rows by role',
                                               'entries': entries}),
                          report_call('success', '', f'Care team of {room} shown ({len(members)} rows).'))
    return report('failure', 'display not confirmed')


_TASK = re.compile(r'^(\w+-\d+) \((\w+), HCW #([\w-]+)\): (\w+); (?:issue|summary) (?:\'(.*?)\'|"(.*?)")'
                   r'(?:; data (.*))?$')


class IdealManager:
    """Ideal manager: a stateful policy (it remembers the conversation as a model would)."""

    def __init__(self):
        self.patient: dict = {}
        self.tasks: dict[str, dict] = {}
        self.escalated: dict[str, tuple[str, str, str]] = {}   # task_id -> (decision, hcw_id, escalation_id)

    def read(self, body: dict) -> None:
        """Update what the manager knows from the user messages it is sent (oldest first)."""
        user = '\n'.join(m['content'] for m in body['messages'] if m.get('role') == 'user')
        for line in user.splitlines():
            m = re.match(r'Patient (\S+) in (\S+): .*assigned HCW #(\w+)', line)
            if m:
                self.patient = {'room': m.group(2), 'hcw': m.group(3)}
            m = _TASK.match(line)
            if m:
                data = json.loads(m.group(7)) if m.group(7) else {}
                self.tasks[m.group(1)] = {'type': m.group(2), 'hcw': m.group(3), 'state': m.group(4),
                                          'text': m.group(5) if m.group(5) is not None else m.group(6),
                                          'data': data}
            if line.startswith('Record: '):
                for entry in line[8:].rstrip('.').split('; '):
                    tid, kind, hcw, state = entry.split(' ')
                    known = self.tasks.setdefault(tid, {'type': kind, 'hcw': hcw.lstrip('#'), 'text': '', 'data': {}})
                    known['state'] = state
            m = re.match(r'Escalation (\S+) on (\S+) by .*decision: (\w+)(?: #(\w+))?', line)
            if m:
                self.escalated[m.group(2)] = (m.group(3), m.group(4) or '', m.group(1))

    def __call__(self, body: dict) -> dict:
        """Answer one manager request."""
        if body['messages'][-1].get('role') == 'tool' and not any(
                m.get('role') == 'tool' and m['content'].startswith(('refused', 'invalid'))
                for m in body['messages']):
            return text('Waiting for the update.')
        self.read(body)   # after a refusal: decide again on the same update
        latest = {}
        for tid, t in self.tasks.items():
            latest[t['type']] = (tid, t)
        owners = {kind.value: robot for kind, robot in TASK_OWNER.items()}
        for kind in (t.value for t in OPERATIONAL_TASKS):
            if kind not in latest:
                nav = TaskType.NAVIGATION.value
                hcw = latest[nav][1]['hcw'] if kind != nav else self.patient['hcw']
                return tool_calls((ManagerTool.DELEGATE_TASK, {'task_type': kind, 'robot': owners[kind],
                                                               'hcw_id': hcw, 'reason': f'next step: {kind}'}))
            tid, t = latest[kind]
            if t['state'] == 'failure':
                decision, chosen, _ = self.escalated.get(tid, ('', '', ''))
                if decision == 'pending':
                    return text(f'Waiting for the human decision on {tid}.')
                if decision == 'abort':
                    break
                alts = t['data'].get('alternatives') or []
                hcw = chosen if decision == 'reassign' else t['hcw'] if decision == 'retry' else \
                    (alts[0]['hcw_id'] if alts else '')
                attempts = sum(1 for x in self.tasks.values() if x['type'] == kind)
                if not hcw and kind != TaskType.NAVIGATION.value and attempts < 2:   # retry a robot's failed step once
                    hcw = t['hcw']
                if not hcw:
                    return tool_calls((ManagerTool.ESCALATE_TO_SUPERVISOR, {
                        'task_id': tid, 'reason': t['text'] or 'failed', 'options': ['retry', 'abort']}))
                why = f'human decision on {tid}: {decision}' if decision else f'{tid} failed; #{hcw} available'
                return tool_calls((ManagerTool.DELEGATE_TASK, {'task_type': kind, 'robot': owners[kind], 'hcw_id': hcw,
                                                               'handles_task_id': tid, 'reason': why}))
            if t['state'] == 'running':
                return text('Waiting.')
        return tool_calls((ManagerTool.SUBMIT_REFLECTION, self.reflection()))

    def reflection(self) -> dict:
        """Return a reflection true to the record it was told (tasks never attempted are failures)."""
        owners = {kind.value: robot for kind, robot in TASK_OWNER.items()}
        outcomes, recovery = [], []
        for kind in (t.value for t in OPERATIONAL_TASKS):
            mine = [(tid, t) for tid, t in self.tasks.items() if t['type'] == kind]
            if not mine:
                outcomes.append({'task_type': kind, 'status': 'failure', 'robot': owners[kind],
                                 'summary': 'not attempted: the episode was closed earlier'})
                continue
            tid, t = mine[-1]
            outcomes.append({'task_type': kind, 'status': t['state'], 'robot': owners[kind],
                             'summary': t['text'] or f'{tid} {t["state"]}'})
            recovery += [f'{f} failed ({ft["text"]}); recovered by {tid}' for f, ft in mine[:-1]]
        recovery += [f'{esc} on {task}: human decision {decision}' + (f' #{hcw}' if hcw else '')
                     for task, (decision, hcw, esc) in self.escalated.items()]
        return {'task_outcomes': outcomes, 'recovery_attempts': recovery or ['none needed'],
                'lessons_learned': ['Page the assigned HCW early and keep an available alternative ready.']}


def ideal_policies() -> dict:
    """Return fresh robot -> policy functions for the well-behaved team."""
    return {Role.MANAGER.value: IdealManager(), Role.NAVIGATION.value: navigation,
            Role.INFO_COLLECTION.value: info_collection, Role.DISPLAY.value: display}
