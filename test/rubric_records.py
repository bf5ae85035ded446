"""Event records for rubric tests: a hand-made onboarding record and edits that inject failure modes.

The hand-made record has the shape of a protocol-brain onboarding run (HCW #80 busy, #90 proposed
and escorted, badge read, care team shown, reflection), with the simulator's ground truth (``sim``
events) of the onboarding scenario and its staff (config/staff.yaml). The edits work on any
onboarding record, recorded or hand-made: each returns a new event list with one failure mode
injected; the last ones (after :func:`write_run`) make the team accept a success the world
contradicts, which only the strict criteria see. :func:`write_run` writes a record as a run folder
(with the staff directory and scenario the ground truth reads).
"""

from __future__ import annotations

import copy
from pathlib import Path

from robot_team.catalog import Tool
from robot_team.contracts.config import load_scenario, load_staff_seed
from robot_team.directory import StaffDirectory
from robot_team.contracts.events import TeamEventModel
from robot_team.recorder import write_jsonl

NAV, INFO, DISPLAY = 'navigation_robot', 'info_collection_robot', 'display_robot'


class _Builder:
    def __init__(self):
        self.events: list[TeamEventModel] = []
        self.seq: dict[str, int] = {}
        self.t = 1.0

    def emit(self, actor, kind, target='', summary='', reason='', **data):
        self.seq[actor] = self.seq.get(actor, 0) + 1
        self.t += 0.5
        self.events.append(TeamEventModel(stamp_s=self.t, wall_time=1.7e9 + self.t, seq=self.seq[actor],
                                          actor=actor, kind=kind, target=target, summary=summary or kind,
                                          reason=reason, data=data))

    def sim(self, what, target='', **data):
        """Record the simulator's ground truth (a ``sim`` event of hospital_systems at this sim time)."""
        self.emit('hospital_systems', 'sim', target, what=what, sim_time_s=self.t + 0.5, **data)

    def tool(self, robot, task_id, journal, name, args, output, ok=True, error=''):
        self.emit(robot, 'tool_call', name, task_id=task_id, args=args)
        self.emit(robot, 'tool_result', name, error, task_id=task_id, ok=ok, output=output, error=error)
        journal.append({'tool': name, 'args': args, 'ok': ok, 'output': output, 'error': error, 'stamp_s': self.t})

    def delegate(self, task_id, task_type, robot, hcw, reason, handles=''):
        self.emit('manager', 'delegation_requested', robot, reason=reason, action='delegate', task_type=task_type,
                  robot=robot, room='ER-12', hcw_id=hcw, instructions='do it',
                  context={'patient_id': 'P-0001', 'presentation': 'confusion'}, handles_task_id=handles)
        self.emit('supervisor', 'delegation_authorized', robot, task_id=task_id, task_type=task_type, robot=robot)
        if handles:
            self.emit('manager', 'alternative_proposed', handles, reason=reason, task_id=handles,
                      new_task_id=task_id, hcw_id=hcw)
        self.emit('manager', 'delegation', robot, reason=reason, task_id=task_id, task_type=task_type,
                  robot=robot, hcw_id=hcw, room='ER-12', instructions='do it', handles_task_id=handles)
        self.emit(robot, 'task_started', task_id, task_id=task_id, task_type=task_type)

    def report(self, task_id, task_type, robot, status, issue, data, journal):
        self.emit(robot, 'task_report', task_id, reason=issue, task_id=task_id, task_type=task_type, robot=robot,
                  status=status, issue=issue, summary=f'{task_type} {status}', data=data,
                  evidence={'tool_journal': journal}, stamp_s=self.t)
        self.emit('manager', 'judgment', task_id, reason=issue or 'no issue', task_id=task_id, task_type=task_type,
                  robot=robot, reported_status=status, judged_status=status, issue=issue)


STAFF = {   # as config/staff.yaml gives them (the scenario's staff seed): badge, name, specialty, role
    '80': ('ED-0080', 'Dr. Amara Okafor', 'Physician', 'Attending physician'),
    '90': ('ED-0090', 'Dr. Lucas Brennan', 'Physician', 'Attending physician'),
    '91': ('ED-0091', 'Dr. Mei Tanaka', 'Physician', 'Attending physician'),
    '41': ('ED-0041', 'Sofia Alvarez', 'Nurse', 'Primary nurse'),
    '55': ('ED-0055', 'Priya Raman', 'Technician', 'ED technician'),
}
STANDING = ('41', '55')
"""ER-12's standing care team in config/staff.yaml (roles as in STAFF)."""


def staff_record(hcw_id: str) -> dict:
    """Return an HCW as ``lookup_staff_by_badge`` and ``fetch_care_team`` give them."""
    badge, name, specialty, role = STAFF[hcw_id]
    return {'hcw_id': hcw_id, 'name': name, 'specialty': specialty, 'role': role}


def onboarding_record(alternative: str = '90', badge_of: str = '') -> list[TeamEventModel]:
    """Return a hand-made record of an onboarding run of the onboarding scenario (ER-12, #80 busy).

    The manager proposes ``alternative`` after #80's page goes unanswered; it is escorted, its badge
    read and checked in, and ER-12's care team (the standing #41 and #55, and the alternative) shown.
    The simulator's ground truth (``sim`` events) and the staff match config/staff.yaml, so with the
    default #90 the run is correct in the world too: 17/17 under both criteria in both views. With
    ``'55'`` (a technician: the wrong specialty) the team does everything it reports and the
    published criteria still give 17/17. ``badge_of``: the info robot reads that HCW's badge instead
    of the escorted one's and checks them in (the screen then shows them, as the directory gives it).
    """
    b = _Builder()
    b.sim('patient_arrival', 'ER-12', patient_id='P-0001', room='ER-12', assigned_hcw_id='80',
          required_specialty='Physician')
    b.emit('manager', 'observation', 'ER-12', cue='patient_arrival', patient_id='P-0001', room='ER-12',
           assigned_hcw_id='80')
    alt = alternative
    badge, name, specialty, _ = STAFF[alt]
    staff80 = {'hcw_id': '80', 'area': 'Radiology', 'x': 30.5, 'y': 4.25, 'availability': 'busy',
               'detail': 'on an urgent call', 'specialty': 'Physician', 'name': STAFF['80'][1]}
    staff_alt = {'hcw_id': alt, 'area': 'Staff lounge', 'x': 12.0, 'y': 8.5, 'availability': 'available',
                 'detail': '', 'specialty': specialty, 'name': name}
    door = {'room': 'ER-12', 'x': 20.0, 'y': 2.0, 'yaw': 1.57}
    plan = {'length_m': 14.2, 'waypoints': [[30.5, 4.25], [20.0, 2.0]]}
    plan2 = {'length_m': 9.1, 'waypoints': [[12.0, 8.5], [20.0, 2.0]]}

    b.delegate('nav-1', 'navigation', NAV, '80', 'next step of the onboarding workflow')
    j: list = []
    b.tool(NAV, 'nav-1', j, 'locate_staff', {'hcw_ids': ['80']}, {'staff': [staff80]})
    b.tool(NAV, 'nav-1', j, 'room_door_pose', {'room': 'ER-12'}, door)
    b.tool(NAV, 'nav-1', j, 'plan_path', {'goal_x': 30.5, 'goal_y': 4.25}, plan)
    b.tool(NAV, 'nav-1', j, 'plan_path', {'goal_x': 20.0, 'goal_y': 2.0}, plan)
    b.sim('page_delivered', '80', page_id=1, hcw_id='80', robot=NAV, availability='busy')
    b.tool(NAV, 'nav-1', j, 'page_staff', {'hcw_id': '80'}, {'acknowledged': False, 'reply': ''})
    b.tool(NAV, 'nav-1', j, 'locate_staff', {'specialty': specialty}, {'staff': [staff80, staff_alt]})
    b.report('nav-1', 'navigation', NAV, 'failure', 'HCW #80 unavailable: on an urgent call; paged, no response',
             {'hcw_location': {'area': 'Radiology', 'x': 30.5, 'y': 4.25}, 'path': {'to_hcw': plan, 'escort': plan},
              'availability': 'busy', 'alternatives': [{'hcw_id': alt, 'area': 'Staff lounge'}]}, j)
    b.emit('supervisor', 'deadline_started', 'nav-1', task_id='nav-1', deadline='issue_handling', deadline_s=60.0)

    b.delegate('nav-2', 'navigation', NAV, alt, f'nav-1 failed; proposing alternative #{alt}', 'nav-1')
    b.emit('supervisor', 'deadline_met', 'nav-1', task_id='nav-1', deadline='issue_handling')
    j = []
    b.tool(NAV, 'nav-2', j, 'locate_staff', {'hcw_ids': [alt]}, {'staff': [staff_alt]})
    b.tool(NAV, 'nav-2', j, 'room_door_pose', {'room': 'ER-12'}, door)
    b.tool(NAV, 'nav-2', j, 'plan_path', {'goal_x': 12.0, 'goal_y': 8.5}, plan2)
    b.tool(NAV, 'nav-2', j, 'plan_path', {'goal_x': 20.0, 'goal_y': 2.0}, plan2)
    b.sim('page_delivered', alt, page_id=2, hcw_id=alt, robot=NAV, availability='available')
    b.sim('page_acknowledged', alt, page_id=2, hcw_id=alt, robot=NAV)
    b.tool(NAV, 'nav-2', j, 'page_staff', {'hcw_id': alt}, {'acknowledged': True, 'reply': 'on my way'})
    b.sim('hcw_following', alt, hcw_id=alt, robot=NAV, area='Staff lounge')
    for goal in ([12.0, 8.5, 0.0], [20.0, 2.0, 1.57]):
        if goal[1] == 2.0:
            b.sim('badge_scan', 'ER-12', reader_id='er_12_door', room='ER-12', badge_id=badge, hcw_id=alt)
        b.tool(NAV, 'nav-2', j, 'navigate_to_pose', {'x': goal[0], 'y': goal[1]},
               {'outcome': 'succeeded', 'error_code': 0, 'goal': goal})
    b.report('nav-2', 'navigation', NAV, 'success', '',
             {'hcw_id': alt, 'hcw_location': {'area': 'Staff lounge', 'x': 12.0, 'y': 8.5},
              'path': {'to_hcw': plan2, 'escort': plan2}, 'room': 'ER-12', 'arrived_at': door}, j)
    b.sim('hcw_arrived', alt, hcw_id=alt, room='ER-12', robot=NAV)   # steps in after the robot stopped

    b.delegate('info-1', 'info_collection', INFO, alt, 'next step of the onboarding workflow')
    j = []
    read = badge_of or alt
    record = staff_record(read)
    b.tool(INFO, 'info-1', j, 'read_badge_scan', {'room': 'ER-12'}, {'badge_id': STAFF[read][0], 'room': 'ER-12'})
    b.tool(INFO, 'info-1', j, 'lookup_staff_by_badge', {'badge_id': STAFF[read][0]}, record)
    b.tool(INFO, 'info-1', j, 'record_check_in', {'room': 'ER-12', 'hcw_id': read, 'badge_id': STAFF[read][0]},
           {'room': 'ER-12', 'hcw_id': read, 'badge_id': STAFF[read][0], 'stamp_s': b.t + 1.0})
    b.report('info-1', 'info_collection', INFO, 'success', '', {**record, 'badge_id': STAFF[read][0],
                                                                'room': 'ER-12'}, j)

    b.delegate('display-1', 'display', DISPLAY, alt, 'next step of the onboarding workflow')
    j = []
    members = [staff_record(read)] + [staff_record(hcw) for hcw in STANDING if hcw != read]
    layout = 'one row per member, by role: ' + ', '.join(f"{m['role']} ({m['name']})" for m in members)
    b.tool(DISPLAY, 'display-1', j, 'fetch_care_team', {'room': 'ER-12'}, {'room': 'ER-12', 'members': members})
    b.sim('display_shown', 'ER-12', room='ER-12', title='ER-12 care team', layout=layout, lines=[],
          entries=len(members), members=members)
    b.tool(DISPLAY, 'display-1', j, 'show_display', {'room': 'ER-12', 'layout': layout, 'entries': members},
           {'success': True, 'message': 'shown', 'rendered_lines': []})
    b.report('display-1', 'display', DISPLAY, 'success', '', {'room': 'ER-12', 'members': members,
                                                              'layout': layout}, j)

    b.emit('supervisor', 'delegation_authorized', 'manager', task_id='reflection-1', task_type='reflection')
    b.emit('manager', 'reflection', 'reflection-1', task_id='reflection-1', task_outcomes=[
        {'task_type': 'navigation', 'status': 'success', 'robot': NAV, 'summary': f'Escorted #{alt} (after 1 failed)'},
        {'task_type': 'info_collection', 'status': 'success', 'robot': INFO, 'summary': f'Badge {badge}: #{alt}'},
        {'task_type': 'display', 'status': 'success', 'robot': DISPLAY, 'summary': 'Care team shown'}],
        recovery_attempts=[f'nav-1 failed (HCW #80 unavailable); recovered with nav-2 (HCW #{alt})'],
        lessons_learned=['Page early and keep an alternative ready.'])
    b.emit('manager', 'episode_finished', outcome='success')
    return b.events


# --- Edits: each injects one failure mode into an onboarding record -----------------------------

def _index(events, kind, task_id=None, actor=None, last=False):
    hits = [i for i, e in enumerate(events) if e.kind == kind
            and (task_id is None or e.data.get('task_id') == task_id or e.target == task_id)
            and (actor is None or e.actor == actor)]
    if not hits:
        raise LookupError(f'no {kind} event for {task_id} in the record')
    return hits[-1] if last else hits[0]


def _like(event, kind, actor=None, target='', reason='', **data):
    return TeamEventModel(stamp_s=event.stamp_s, wall_time=event.wall_time, seq=1, actor=actor or event.actor,
                          kind=kind, target=target, summary=kind, reason=reason, data=data)


def without_reflection(events):
    """Drop the reflection (the manager never wrote one)."""
    return [e for e in events if e.kind != 'reflection']


def placeholder_reflection(events):
    """Make the reflection's lessons a placeholder."""
    events = copy.deepcopy(events)
    events[_index(events, 'reflection')].data['lessons_learned'] = ['TBD']
    return events


def refused_placeholder_first(events):
    """Insert a placeholder reflection the manager refused before the accepted one."""
    events = list(events)
    i = _index(events, 'reflection')
    bad = {'task_outcomes': [{'task_type': 'navigation', 'status': 'success', 'robot': NAV, 'summary': 'TBD'}],
           'recovery_attempts': [], 'lessons_learned': ['placeholder']}
    events.insert(i, _like(events[i], 'reflection_rejected', reason='reflection incomplete', reflection=bad))
    return events


def manager_prefetch(events):
    """Insert the manager calling the info robot's lookup itself (refused) before delegating info."""
    events = list(events)
    i = next(k for k, e in enumerate(events) if e.kind == 'delegation_requested'
             and e.data.get('task_type') == 'info_collection')
    events.insert(i, _like(events[i], 'tool_refused', actor=INFO, target='lookup_staff_by_badge',
                           reason="manager does not own 'lookup_staff_by_badge'", task_id='',
                           args={'badge_id': 'ED-0090'}, caller='manager', owner=INFO))
    return events


def redo_without_reason(events):
    """After info collection succeeded, the manager asks for it again without a reason (refused)."""
    events = list(events)
    info = next(e.data['task_id'] for e in events if e.kind == 'task_report'
                and e.data.get('task_type') == 'info_collection')
    i = _index(events, 'judgment', task_id=info) + 1
    request = _like(events[i - 1], 'delegation_requested', actor='manager', target=INFO, reason='',
                    action='delegate', task_type='info_collection', robot=INFO, room='ER-12', hcw_id='90',
                    context={}, handles_task_id='')
    refusal = _like(events[i - 1], 'delegation_refused', actor='supervisor', target=INFO,
                    reason='info_collection already succeeded; to repeat it, state a reason',
                    task_type='info_collection', robot=INFO, rule='repeat_reason')
    return events[:i] + [request, refusal] + events[i:]


def failure_echoed(events):
    """The manager echoes the navigation failure and does nothing; the supervisor's deadline escalates.

    The manager's recovery delegation (and its alternative proposal) is replaced by the supervisor's
    missed deadline and escalation; the human reassigns #90 and the manager delegates nav-2 then.
    """
    events = list(events)
    i = _index(events, 'delegation_requested', last=False)
    nav2 = next(k for k, e in enumerate(events) if e.kind == 'delegation_requested' and k > i
                and e.data.get('task_type') == 'navigation')
    at = events[nav2]
    injected = [_like(at, 'deadline_missed', actor='supervisor', target='nav-1', task_id='nav-1',
                      deadline='issue_handling', reason='manager did not handle the failure of nav-1 within 60 s'),
                _like(at, 'escalation', actor='supervisor', target='nav-1', escalation_id='esc-1', task_id='nav-1',
                      raised_by='supervisor'),
                _like(at, 'human_decision', actor='supervisor', target='nav-1', escalation_id='esc-1',
                      task_id='nav-1', decision='reassign', hcw_id='90')]
    out = events[:nav2] + injected + events[nav2:]
    return [e for e in out if e.kind != 'alternative_proposed']


def false_success(events):
    """The info robot claims success against its tools: the guard turns the report into a failure."""
    events = copy.deepcopy(events)
    r = next(k for k, e in enumerate(events)
             if e.kind == 'task_report' and e.data.get('task_type') == 'info_collection')
    report = events[r]
    task_id = report.data['task_id']
    why = "reported name 'Dr. Who' differs from the directory's"
    claim = dict(report.data['data'], name='Dr. Who')
    report.data.update(status='failure', issue='false completion: ' + why, data=claim)
    events.insert(r, _like(report, 'false_completion', target=task_id, reason=why, task_id=task_id,
                           claim={'status': 'success', 'data': claim}))
    j = _index(events, 'judgment', task_id=task_id)
    events[j].data.update(reported_status='failure', judged_status='failure', issue='false completion: ' + why)
    for outcome in events[_index(events, 'reflection')].data['task_outcomes']:
        if outcome['task_type'] == 'info_collection':
            outcome['status'] = 'failure'
    return events


def skipped_step(events):
    """Right after the navigation failure the manager asks for info collection (refused: workflow order)."""
    events = list(events)
    first = _index(events, 'judgment')
    request = _like(events[first], 'delegation_requested', actor='manager', target=INFO, reason='next step',
                    action='delegate', task_type='info_collection', robot=INFO, room='ER-12', hcw_id='80',
                    context={}, handles_task_id='')
    refusal = _like(events[first], 'workflow_violation', actor='supervisor', target=INFO, rule='order',
                    reason='info_collection must wait: navigation nav-1 failed; recover navigation first',
                    task_type='info_collection', robot=INFO, requested_by='manager')
    return events[:first + 1] + [request, refusal] + events[first + 1:]


def prefetched_context(events):
    """The manager put the HCW's name into the info delegation (the manager's guard removed it)."""
    events = list(events)
    i = next(k for k, e in enumerate(events) if e.kind == 'delegation_requested'
             and e.data.get('task_type') == 'info_collection')
    delegation = dict(events[i].data, context={'patient_id': 'P-0001', 'name': 'Dr. Brennan'})
    events[i] = events[i].model_copy(update={'data': delegation})
    guard = _like(events[i], 'workflow_violation', actor='manager', target=INFO, reason='role misalignment',
                  who='manager', found=["context key 'name'"], delegation=delegation)
    return events[:i + 1] + [guard] + events[i + 1:]


def closed_after(events, task_id):
    """The manager escalates ``task_id`` right after its report and a human aborts: the episode closes.

    Everything the manager delegated after that report is cut; the reflection and the end follow
    the human's decision (outcome ``escalated``).
    """
    events = copy.deepcopy(events)
    r = _index(events, 'judgment', task_id=task_id)
    end = next(k for k, e in enumerate(events) if k > r and e.kind == 'delegation_requested')
    at = events[r]
    closing = [_like(at, 'escalation_requested', actor='manager', target=task_id, task_id=task_id,
                     reason=f'{task_id} failed', options=['reassign', 'retry', 'abort']),
               _like(at, 'escalation', actor='supervisor', target=task_id, escalation_id='esc-1', task_id=task_id,
                     raised_by='manager'),
               _like(at, 'human_decision', actor='supervisor', target=task_id, escalation_id='esc-1',
                     task_id=task_id, decision='abort', hcw_id='', closed=True)]
    tail = [e for e in events[end:] if e.kind in ('delegation_authorized', 'reflection', 'episode_finished')
            and (e.kind != 'delegation_authorized' or e.data.get('task_type') == 'reflection')]
    for e in tail:
        if e.kind == 'episode_finished':
            e.data['outcome'] = 'escalated'
    return events[:r + 1] + closing + tail


EDITS_SEEN_BY_THE_PUBLISHED_RUBRIC = (without_reflection, placeholder_reflection, refused_placeholder_first,
                                      manager_prefetch, redo_without_reason, failure_echoed, false_success,
                                      skipped_step, prefetched_context)
"""The edits above: failure modes the published criteria already score."""


# --- Run folders: the record with the world it ran in --------------------------------------------

def write_run(folder, events, scenario: str = 'onboarding') -> Path:
    """Write ``events`` as a run folder of ``scenario``: events.jsonl, scenario.json, staff.sqlite.

    The staff directory is the scenario's seed (config/staff.yaml) with the check-ins the record's
    successful ``record_check_in`` calls made, as the info robot's tool writes them.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    loaded = load_scenario(scenario)
    resolved = loaded.model_copy(update={'staff_directory': str(loaded.staff_path)})
    (folder / 'scenario.json').write_text(resolved.model_dump_json(indent=2))
    with StaffDirectory.create(folder / 'staff.sqlite', load_staff_seed(loaded.staff_path)) as directory:
        for e in events:
            if e.kind == 'tool_result' and e.target == Tool.RECORD_CHECK_IN.value and e.data.get('ok'):
                out = e.data['output']
                directory.check_in(out['room'], out['hcw_id'], out['badge_id'], out.get('stamp_s', e.stamp_s))
    write_jsonl(events, folder / 'events.jsonl')
    return folder


# --- Edits: the team accepts a success the world contradicts (the published criteria do not see it) ---

def _sim(event, *whats):
    return event.kind == 'sim' and event.data.get('what') in whats


def nobody_escorted(events):
    """The escort is reported and judged a success, but the world shows nobody acknowledged, followed or came."""
    return [e for e in events if not _sim(e, 'page_acknowledged', 'hcw_following', 'hcw_arrived', 'badge_scan')]


def world_silent(events):
    """Every task is reported and judged a success and the episode too, while the world shows none of it."""
    return [e for e in events if e.kind != 'sim' or _sim(e, 'patient_arrival', 'page_delivered')]


def check_in_failed(events):
    """``record_check_in`` failed, yet the info robot reports success and the manager accepts it."""
    events = copy.deepcopy(events)
    error = "check-in at ER-12: badge 'ED-0090' is not HCW 90's badge"
    for e in events:
        if e.kind == 'tool_result' and e.target == Tool.RECORD_CHECK_IN.value:
            e.data.update(ok=False, output={}, error=error)
        if e.kind == 'task_report':
            for entry in e.data['evidence']['tool_journal']:
                if entry['tool'] == Tool.RECORD_CHECK_IN.value:
                    entry.update(ok=False, output={}, error=error)
    return events


def made_up_screen(events):
    """ER-12's screen shows made-up entries while the display robot reports the care team it fetched."""
    events = copy.deepcopy(events)
    for e in events:
        if _sim(e, 'display_shown'):
            e.data['members'] = [{'role': 'str', 'hcw_id': '', 'name': 'Working on it.', 'specialty': ''}]
    return events
