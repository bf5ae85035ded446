"""Guards at decode time: what a constrained request offers follows the guards' own rules.

Each offer is checked against the guard it mirrors: a tool withdrawn after it succeeded is a call
the Toolbox refuses when repeated; a success report appears only once grounding accepts one; a
delegation offers only the task types the supervisor's gate authorises and the HCWs the manager's
repeat, attempts and escort rules allow. ``decoding: free`` offers the full schemas.
"""

import json

from team_harness import World, build_toolbox

from robot_team.brains.base import BrainReport, ManagerObservation, PatientInfo, TaskRecord, TaskSpec
from robot_team.catalog import TASK_OWNER, ManagerTool, Tool, final_failure
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.rules.grounding import UNGROUNDED_FAILURE, contradictions, failure_grounds, failure_refusal
from robot_team.llm.decoding import (
    REFLECTION_MAX_ITEMS, REFLECTION_TEXT_MAX_CHARS, delegable, failed_in_a_row, hcw_refusal, manager_next_step,
    manager_offer, next_step, refused_hcws, robot_offer)
from robot_team.llm.jsonschema_calls import response_schema, tools_text
from robot_team.llm.toolschema import robot_tools
from robot_team.contracts.names import Role
from robot_team.contracts.reports import IssueCode, TaskReportModel, TaskStatus, TaskType
from robot_team.rules.workflow.policy import WorkflowPolicy


def nav_task(hcw='90'):
    return TaskSpec(task_id='nav-1', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id=hcw)


def test_a_robot_is_offered_what_its_task_still_lacks_and_closed_arguments_as_enums():
    box = build_toolbox(Role.NAVIGATION.value, World())
    task = nav_task()
    first = robot_offer(box, task, one_call=True)
    # no page before the HCW was located, no Nav2 goal before the page was acknowledged (catalog requires)
    # nothing proven and nothing failed: no report at all (neither status would be accepted), and why
    assert first.names == [Tool.LOCATE_STAFF.value, Tool.ROOM_DOOR_POSE.value, Tool.PLAN_PATH.value]
    assert first.withheld.startswith('submit_report is not available yet') and first.record()['withheld']
    # a reply that may hold several calls may put the prerequisites first: everything is offered
    assert robot_offer(box, task).names == [t['function']['name'] for t in robot_tools(box)][:-1]   # no report
    assert first.enums[f'{Tool.ROOM_DOOR_POSE.value}.room'] == ['ER-12']   # the task's room (outside_task)
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    located = robot_offer(box, task, one_call=True)
    assert Tool.PAGE_STAFF.value in located.names and Tool.NAVIGATE_TO_POSE.value not in located.names
    assert located.enums[f'{Tool.PAGE_STAFF.value}.hcw_id'] == ['90']
    assert box.call(Tool.ROOM_DOOR_POSE.value, task_id='nav-1', room='ER-12').ok
    assert box.call(Tool.PAGE_STAFF.value, task_id='nav-1', hcw_id='90', message='ER-12 needs you').ok
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=1.0, y=2.0).ok
    after = robot_offer(box, task)
    assert Tool.LOCATE_STAFF.value not in after.names and Tool.ROOM_DOOR_POSE.value not in after.names
    assert Tool.NAVIGATE_TO_POSE.value in after.names                   # one goal after another
    assert after.choices < first.choices
    # paged and at the door, but the HCW was never picked up: still no success report
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=30.0, y=9.5, yaw=1.5708).ok
    assert 'submit_report' not in robot_offer(box, task).names
    assert robot_offer(box, task, last=True).enums['submit_report.status'] == ['failure']   # out of requests
    # to the HCW (where locate_staff found #90), then the escort to the door: a success report is offered
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=22.0, y=3.0).ok
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=30.0, y=9.5, yaw=1.5708).ok
    assert robot_offer(box, task).enums['submit_report.status'] == ['success']   # and no failed call: no failure
    assert not robot_offer(box, task).withheld
    free = robot_offer(box, task, decoding='free')
    assert free.names == [t['function']['name'] for t in robot_tools(box)] and free.decoding == 'free'


def test_a_failure_report_is_offered_only_with_grounds_a_failed_call_or_a_negative_finding():
    world = World()
    box = build_toolbox(Role.NAVIGATION.value, world)
    task = nav_task()
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    assert 'submit_report' not in robot_offer(box, task, one_call=True).names   # #90 located: nothing wrong
    assert not box.call(Tool.ROOM_DOOR_POSE.value, task_id='nav-1', room='ER-99').ok
    assert failure_grounds('90', box.journal('nav-1')) and not failure_refusal('90', box.journal('nav-1'),
                                                                               nothing_else=False)
    assert robot_offer(box, task, one_call=True).enums['submit_report.status'] == ['failure']
    # a successful call can ground it too: the RTLS does not know the task's HCW (catalog 'negative')
    unknown = nav_task('77')
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-2', hcw_ids=['77']).ok
    assert failure_grounds('77', box.journal('nav-2')) == [
        f'{Tool.LOCATE_STAFF.value}: HCW #77 is unknown to the location system']
    assert robot_offer(box, unknown, one_call=True).enums['submit_report.status'] == ['failure']
    # ... but asking the RTLS for a specialty is no finding about the task's HCW
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-3', specialty='Physician').ok
    assert failure_grounds('77', box.journal('nav-3')) == []
    assert failure_refusal('77', box.journal('nav-3'), nothing_else=False) == UNGROUNDED_FAILURE
    assert failure_refusal('77', box.journal('nav-3'), nothing_else=True) == ''


def test_where_a_task_stands_names_what_success_still_needs_and_the_next_step_of_the_procedure():
    box = build_toolbox(Role.NAVIGATION.value, World())
    task = nav_task()

    def now():
        return next_step(box, task, robot_offer(box, task, one_call=True))
    assert now() == f'Next step: call {Tool.LOCATE_STAFF.value}.'
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', specialty='Nurse').ok   # about others: not the HCW
    assert now() == f'Next step: call {Tool.LOCATE_STAFF.value}.'
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    # the pickup needs the page first (the goal's prerequisite)
    assert now() == f'Next step: call {Tool.PAGE_STAFF.value} (then {Tool.NAVIGATE_TO_POSE.value}).'
    assert box.call(Tool.PAGE_STAFF.value, task_id='nav-1', hcw_id='90', message='come').ok
    # the pickup before the door (the catalog's order of the proofs), with where the HCW is
    assert now() == f'Next step: call {Tool.NAVIGATE_TO_POSE.value} (no goal reached HCW #90 at (x 22, y 3): the ' \
                    f'HCW was not picked up).'
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=22.0, y=3.0).ok   # picked the HCW up
    assert now() == f'Next step: call {Tool.ROOM_DOOR_POSE.value}.'
    assert not box.call(Tool.ROOM_DOOR_POSE.value, task_id='nav-1', room='ER-99').ok
    # after a failed call: a failure report with that call's error as its quoted issue, or another way
    assert now().startswith(f'Next step: submit_report failure with issue "{Tool.ROOM_DOOR_POSE.value} failed: ')
    assert 'ER-99' in now() and now().endswith(', or try another way.')
    assert box.call(Tool.ROOM_DOOR_POSE.value, task_id='nav-1', room='ER-12').ok
    assert now() == f'Next step: call {Tool.NAVIGATE_TO_POSE.value} (the last goal (22, 3) is not ' \
                    f'the door of ER-12 (x 30, y 9.5)).'
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=30.0, y=9.5, yaw=1.5708).ok
    assert now().startswith('Next step: submit_report success')


def test_the_next_step_may_be_a_prerequisite_of_the_tool_a_proof_needs():
    box = build_toolbox(Role.NAVIGATION.value, World())
    task = nav_task()
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    step = next_step(box, task, robot_offer(box, task, one_call=True))   # the pickup goal needs the page
    assert step == f'Next step: call {Tool.PAGE_STAFF.value} (then {Tool.NAVIGATE_TO_POSE.value}).'
    display = build_toolbox(Role.DISPLAY.value, World())
    shown = TaskSpec(task_id='display-1', task_type=TaskType.DISPLAY, room='ER-12', hcw_id='90')
    assert next_step(display, shown, robot_offer(display, shown, one_call=True)) == \
        f'Next step: call {Tool.FETCH_CARE_TEAM.value}.'   # the care team is a proof of its own


def test_a_navigation_success_needs_the_door_pose_looked_up():
    box = build_toolbox(Role.NAVIGATION.value, World())
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    assert box.call(Tool.PAGE_STAFF.value, task_id='nav-1', hcw_id='90', message='come').ok
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=22.0, y=3.0).ok   # to the HCW, and no further
    claim = BrainReport(status=TaskStatus.SUCCESS, data={'hcw_id': '90'})
    problems = contradictions(TaskType.NAVIGATION, claim, box.journal('nav-1'))
    assert "the room's door pose was never looked up" in problems


def test_the_same_successful_call_is_not_run_again_by_the_toolbox():
    events = []

    class Events:
        def emit(self, kind, summary, **data):
            events.append((getattr(kind, 'value', kind), data))
    box = build_toolbox(Role.INFO_COLLECTION.value, World())
    box._events = Events()
    first = box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12')
    again = box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12', timeout_s=120.0)
    assert first.ok and again.ok and again.repeat_of == first.stamp_s and again.output == first.output
    assert any(kind == 'invalid_call' and d.get('category') == 'repeated_call' for kind, d in events)
    assert box.call(Tool.READ_BADGE_SCAN.value, task_id='info-2', room='ER-12').ok   # another task: runs


def test_the_badge_looked_up_is_the_scanned_one_and_an_unknown_badge_is_looked_up_once():
    """The 0.5B info-collection robot looked an unknown badge up five times in a row (catalog ``final``)."""
    events, looked_up = [], []

    class Events:
        def emit(self, kind, summary, **data):
            events.append((getattr(kind, 'value', kind), data))
    box = build_toolbox(Role.INFO_COLLECTION.value, World(scan_badge='ED-9999'))
    box._events = Events()
    lookup = box._tools[Tool.LOOKUP_STAFF_BY_BADGE.value]
    box._tools[lookup.name] = type(lookup)(**{**vars(lookup), 'func': lambda a: looked_up.append(a) or lookup.func(a)})
    task = TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90')
    box.begin_task(task.task_id, room=task.room, hcw_id=task.hcw_id)
    assert box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12').ok
    offer = robot_offer(box, task, one_call=True)
    assert offer.enums[f'{Tool.LOOKUP_STAFF_BY_BADGE.value}.badge_id'] == ['ED-9999']   # what the scan read
    other = box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id='ED-0090')
    assert not other.ok and 'is not the task' in other.error and looked_up == []      # outside_task, never run
    first = box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id='ED-9999')
    assert not first.ok and first.answered and len(looked_up) == 1
    # the directory's answer stands for the task: no lookup offered, a grounded failure report is
    after = robot_offer(box, task, one_call=True)
    assert Tool.LOOKUP_STAFF_BY_BADGE.value not in after.names and after.enums['submit_report.status'] == ['failure']
    again = box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id='ED-9999')
    assert (again.ok, again.error, again.repeat_of) == (False, first.error, first.stamp_s) and len(looked_up) == 1
    assert [d['category'] for kind, d in events if kind == 'invalid_call'] == ['outside_task', 'repeated_call']
    box.end_task('info-1')
    assert box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-2', badge_id='ED-9999').error.startswith(
        'lookup_staff_by_badge needs a successful read_badge_scan')   # a task of its own: nothing stands


def test_a_tool_whose_prerequisites_did_not_succeed_is_not_run_and_is_on_the_record():
    events = []

    class Events:
        def emit(self, kind, summary, **data):
            events.append((getattr(kind, 'value', kind), data))
    world = World()
    box = build_toolbox(Role.NAVIGATION.value, world)
    box._events = Events()
    early = box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=1.0, y=2.0)
    assert not early.ok and Tool.PAGE_STAFF.value in early.error
    assert not any(kind == 'tool_result' and d.get('ok') for kind, d in events)
    refused = [d for kind, d in events if kind == 'invalid_call' and d.get('category') == 'missing_prerequisite']
    assert refused and refused[0]['missing'] == [Tool.PAGE_STAFF.value]
    assert not box.call(Tool.PAGE_STAFF.value, task_id='nav-1', hcw_id='90', message='come').ok   # not located
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    assert box.call(Tool.PAGE_STAFF.value, task_id='nav-1', hcw_id='90', message='come').ok
    assert box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-1', x=1.0, y=2.0).ok
    assert not box.call(Tool.NAVIGATE_TO_POSE.value, task_id='nav-2', x=1.0, y=2.0).ok   # per task
    info = build_toolbox(Role.INFO_COLLECTION.value, world)
    assert not info.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id='ED-0090').ok
    display = build_toolbox(Role.DISPLAY.value, world)
    shown = display.call(Tool.SHOW_DISPLAY.value, task_id='display-1', room='ER-12', title='t', layout='l',
                         entries=[{'role': 'physician', 'hcw_id': '90', 'name': 'n'}])
    assert not shown.ok and Tool.FETCH_CARE_TEAM.value in shown.error


def test_a_success_report_fixes_the_values_the_proofs_compare():
    box = build_toolbox(Role.INFO_COLLECTION.value, World())
    task = TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90')
    scan = box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12')
    assert box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id=scan.output['badge_id']).ok
    assert 'submit_report' not in robot_offer(box, task).names   # no check-in yet, and nothing failed
    assert box.call(Tool.RECORD_CHECK_IN.value, task_id='info-1', room='ER-12', hcw_id='90',
                    badge_id=scan.output['badge_id']).ok
    # every proof holds and no tool is left to call: a failure is accepted too (nothing else to try)
    assert robot_offer(box, task).enums['submit_report.status'] == ['success', 'failure']
    assert not box.call(Tool.RECORD_CHECK_IN.value, task_id='info-1').ok   # no arguments: a failed call
    offer = robot_offer(box, task)               # which grounds a failure report as well
    report = next(t for t in offer.tools if t['function']['name'] == 'submit_report')
    success, failure = report['function']['parameters']['anyOf']
    assert success['properties']['data']['properties']['name']['enum'] == ['Dr. Lucas Brennan']
    assert set(success['properties']['data']['required']) == {'hcw_id', 'name', 'specialty'}
    assert failure['properties']['issue']['minLength'] == 1
    schema = response_schema(offer.tools)                       # the json_schema union takes the variants
    items = schema['properties']['tool_calls']['items']
    assert len(items.get('anyOf', [items])) == len(offer.tools)
    assert 'Dr. Lucas Brennan' in tools_text(offer.tools)       # and the model reads them
    native = robot_offer(box, task, variants=False)             # native tools: one object per function
    assert 'anyOf' not in next(t for t in native.tools if t['function']['name'] == 'submit_report')['function'][
        'parameters']


def observation(*tasks, escalations=()):
    return ManagerObservation(
        patient=PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='80'),
        tasks=list(tasks), escalations=list(escalations), staff_ids=['80', '90', '41'])


def delegate_params(offer):
    tool = next(t for t in offer.tools if t['function']['name'] == ManagerTool.DELEGATE_TASK.value)
    return tool['function']['parameters']


def test_with_a_fleet_the_manager_is_offered_the_role_or_any_of_its_robots_not_lost():
    fleet = ['navigation_robot_1', 'navigation_robot_2', 'info_collection_robot', 'display_robot']
    obs = observation().model_copy(update={'robots': fleet})
    robots = delegate_params(manager_offer(obs, ['80']))['properties']['robot']['enum']
    assert robots == ['navigation_robot', 'navigation_robot_1', 'navigation_robot_2']
    one_lost = obs.model_copy(update={'lost_robots': ['navigation_robot_1']})
    assert delegate_params(manager_offer(one_lost, ['80']))['properties']['robot']['enum'] == [
        'navigation_robot', 'navigation_robot_2']   # the role still has a robot: navigation is offered
    both_lost = obs.model_copy(update={'lost_robots': fleet[:2]})
    assert ManagerTool.DELEGATE_TASK.value not in manager_offer(both_lost, ['80']).names


def test_an_hcw_another_open_case_has_is_not_offered_for_a_navigation():
    obs = observation().model_copy(update={'engaged_hcws': {'80': 'P-0777'}})
    assert delegate_params(manager_offer(obs, ['80', '90', '41']))['properties']['hcw_id']['enum'] == ['90', '41']


def test_the_manager_is_offered_the_task_types_the_gate_accepts_and_the_hcws_the_rules_allow():
    start = manager_offer(observation(), ['80', '90', '41'])
    params = delegate_params(start)
    assert params['properties']['task_type']['enum'] == ['navigation']
    assert params['properties']['robot']['enum'] == [Role.NAVIGATION.value]
    assert params['properties']['hcw_id']['enum'] == ['80', '90', '41']
    failed = TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value,
                        hcw_id='80', state='failure', issue='HCW #80 unavailable')
    after = delegate_params(manager_offer(observation(failed), ['80', '90', '41']))
    assert after['properties']['hcw_id']['enum'] == ['90', '41']         # not #80 again after its failure
    retry = EscalationRecord(escalation_id='esc-1', task_id='nav-1', decision='retry')
    again = delegate_params(manager_offer(observation(failed, escalations=[retry]), ['80', '90', '41']))
    assert again['properties']['hcw_id']['enum'] == ['80', '90', '41']   # a human's retry allows it
    running = failed.model_copy(update={'state': 'running'})
    assert ManagerTool.DELEGATE_TASK.value not in manager_offer(observation(running), ['80']).names
    done = failed.model_copy(update={'state': 'success', 'hcw_id': '90'})
    moves_on = delegate_params(manager_offer(observation(done), ['80', '90', '41']))
    assert moves_on['properties']['task_type']['enum'] == ['info_collection']   # the workflow moves on
    assert moves_on['properties']['hcw_id']['enum'] == ['90']    # about the HCW navigation escorted
    info_failed = TaskRecord(task_id='info-1', task_type=TaskType.INFO_COLLECTION, robot=Role.INFO_COLLECTION.value,
                             hcw_id='90', state='failure', issue='no badge scan')
    both = delegate_params(manager_offer(observation(done, info_failed), ['80', '90', '41']))
    # both stay open, the failure that waits for handling first
    assert [v['properties']['task_type']['enum'][0] for v in both['anyOf']] == ['info_collection', 'navigation']
    everyone_failed = [failed.model_copy(update={'task_id': f'nav-{n}', 'hcw_id': h})
                       for n, h in enumerate(['80', '90', '41'], 1)]
    left = manager_offer(observation(*everyone_failed), ['80', '90', '41'])
    assert left.names == [ManagerTool.ESCALATE_TO_SUPERVISOR.value]   # every HCW refused: escalate
    escalate = next(t for t in left.tools if t['function']['name'] == ManagerTool.ESCALATE_TO_SUPERVISOR.value)
    assert escalate['function']['parameters']['properties']['task_id']['enum'] == ['', 'nav-3', 'nav-2', 'nav-1']
    done = TaskRecord(task_id='nav-4', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value, hcw_id='90',
                      state='success')
    info = TaskRecord(task_id='info-1', task_type=TaskType.INFO_COLLECTION, robot=Role.INFO_COLLECTION.value,
                      hcw_id='90', state='failure', issue='badge unknown')
    after = manager_offer(observation(*everyone_failed, done, info), ['80', '90', '41'])
    escalate = next(t for t in after.tools if t['function']['name'] == ManagerTool.ESCALATE_TO_SUPERVISOR.value)
    assert escalate['function']['parameters']['properties']['task_id']['enum'] == \
        ['', 'info-1', 'nav-3', 'nav-2', 'nav-1']   # not nav-4, which succeeded, while info-1 waits (the gate's rule)
    handled = manager_offer(observation(*everyone_failed, done, info).model_copy(
        update={'handled_failures': ['info-1']}), ['80', '90', '41'])   # re-delegated: it no longer waits
    escalate = next(t for t in handled.tools if t['function']['name'] == ManagerTool.ESCALATE_TO_SUPERVISOR.value)
    assert 'nav-4' in escalate['function']['parameters']['properties']['task_id']['enum']   # nothing waits
    pending = EscalationRecord(escalation_id='esc-1', task_id='nav-3', raised_by='manager')
    asked = manager_offer(observation(*everyone_failed, escalations=[pending]), ['80', '90', '41'])
    assert ManagerTool.ESCALATE_TO_SUPERVISOR.value not in asked.names   # one open at a time: wait for the human
    abort = EscalationRecord(escalation_id='esc-1', task_id='nav-1', decision='abort')
    closed = manager_offer(observation(failed, escalations=[abort]), ['80'])
    assert closed.names == [ManagerTool.SUBMIT_REFLECTION.value]   # the human decided: nothing to escalate


def test_the_llm_manager_refuses_what_its_hcw_rules_do_not_offer():
    escorted = TaskRecord(task_id='nav-2', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value,
                          hcw_id='90', state='success')
    obs = observation(escorted)
    assert hcw_refusal('info_collection', '90', obs) is None
    why = hcw_refusal('info_collection', '80', obs)
    assert why is not None and '#90' in why and 'nav-2' in why
    assert hcw_refusal('navigation', '80', obs) is None     # navigation picks its HCW freely
    assert refused_hcws('display', obs, ['80', '90', '41']) == {'80', '41'}
    failed = escorted.model_copy(update={'task_id': 'nav-1', 'hcw_id': '80', 'state': 'failure'})
    assert 'nav-1' in (hcw_refusal('navigation', '80', observation(failed)) or '')


def test_after_two_failures_of_a_task_type_in_a_row_the_llm_manager_escalates():
    staff = ['80', '90', '41', '55']
    first = TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value, hcw_id='80',
                       state='failure', issue='no valid path to ER-12')
    second = first.model_copy(update={'task_id': 'nav-2', 'hcw_id': '90'})
    assert ManagerTool.DELEGATE_TASK.value in manager_offer(observation(first), staff).names   # one alternative
    assert failed_in_a_row('navigation', observation(first, second)) == ['nav-1', 'nav-2']
    limited = manager_offer(observation(first, second), staff)
    assert limited.names == [ManagerTool.ESCALATE_TO_SUPERVISOR.value]   # HCWs #41 and #55 are left, yet
    why = hcw_refusal('navigation', '41', observation(first, second))    # the guard says the same
    assert why is not None and 'nav-1, nav-2' in why and 'escalate nav-2' in why
    lost = second.model_copy(update={'issue_code': IssueCode.ROBOT_LOST})   # says nothing about the task
    assert hcw_refusal('navigation', '41', observation(first, lost)) is None
    reassigned = EscalationRecord(escalation_id='esc-1', task_id='nav-2', decision='reassign', hcw_id='41')
    decided = observation(first, second, escalations=[reassigned])          # a person decided: count again
    assert failed_in_a_row('navigation', decided) == []
    assert delegate_params(manager_offer(decided, staff))['properties']['hcw_id']['enum'] == ['41', '55']
    success = first.model_copy(update={'task_id': 'nav-3', 'hcw_id': '41', 'state': 'success'})
    info = [TaskRecord(task_id=f'info-{n}', task_type=TaskType.INFO_COLLECTION, robot=Role.INFO_COLLECTION.value,
                       hcw_id='41', state='failure', issue='badge unknown') for n in (1, 2)]
    after = observation(first, second, success, *info)    # navigation's failures ended with its success
    assert failed_in_a_row('navigation', after) == []
    assert failed_in_a_row('info_collection', after) == ['info-1', 'info-2']
    assert ManagerTool.DELEGATE_TASK.value not in manager_offer(after, staff).names
    # escorting again would only retry the info collection that failed twice: refused as well
    why = hcw_refusal('navigation', '41', after)
    assert why is not None and 'info-1, info-2 failed in a row' in why and 'escalate info-2' in why
    once = observation(first, second, success, info[0])   # one failure: the repeat may still recover it
    assert hcw_refusal('navigation', '41', once) is None
    assert 'navigation' in json.dumps(delegate_params(manager_offer(once, staff)))


def test_a_failure_a_final_answer_grounds_is_a_persons_call_at_once():
    """catalog.final_failure reads the report's evidence; the attempts rule acts on it for any HCW."""
    box = build_toolbox(Role.INFO_COLLECTION.value, World(scan_badge='ED-9999'))
    box.begin_task('info-1', room='ER-12', hcw_id='90')
    box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12')
    box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id='ED-9999')
    assert final_failure([r.as_dict() for r in box.journal('info-1')]) == Tool.LOOKUP_STAFF_BY_BADGE.value
    crashed = [{**r.as_dict(), 'answered': False} for r in box.journal('info-1')]   # the tool crashed: no answer
    assert final_failure(crashed) == '' and final_failure(['not an entry', {'tool': 'x'}]) == ''
    staff = ['80', '90', '41']
    nav = TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value, hcw_id='90',
                     state='success')
    info = TaskRecord(task_id='info-1', task_type=TaskType.INFO_COLLECTION, robot=Role.INFO_COLLECTION.value,
                      hcw_id='90', state='failure', issue='badge unknown')
    assert ManagerTool.DELEGATE_TASK.value in manager_offer(observation(nav, info), staff).names   # one retry left
    final = info.model_copy(update={'final_failure': Tool.LOOKUP_STAFF_BY_BADGE.value})
    obs = observation(nav, final)
    assert manager_offer(obs, staff).names == [ManagerTool.ESCALATE_TO_SUPERVISOR.value]
    for kind, hcw in (('info_collection', '90'), ('navigation', '90'), ('navigation', '41')):
        why = hcw_refusal(kind, hcw, obs)   # the guard behind the offer: the same badge check, or a re-escort
        assert why is not None and 'lookup_staff_by_badge' in why and 'escalate info-1' in why
    assert 'escalate_to_supervisor info-1' in manager_next_step(obs, manager_offer(obs, staff))
    reassigned = EscalationRecord(escalation_id='esc-1', task_id='info-1', decision='reassign', hcw_id='41')
    decided = observation(nav, final, escalations=[reassigned])   # a person decided: the team may act again
    assert hcw_refusal('navigation', '41', decided) is None


def test_the_managers_next_step_names_the_ways_left_to_handle_a_waiting_failure():
    staff = ['80', '90', '41']
    assert manager_next_step(observation(), manager_offer(observation(), staff)) == ''   # nothing waits
    first = TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot=Role.NAVIGATION.value, hcw_id='80',
                       state='failure', issue='HCW #80 did not answer')
    obs = observation(first)
    assert manager_next_step(obs, manager_offer(obs, staff)) == \
        'Next step: handle nav-1: delegate_task navigation again (handles_task_id: nav-1) or ' \
        'escalate_to_supervisor nav-1.'
    second = first.model_copy(update={'task_id': 'nav-2', 'hcw_id': '90'})
    obs = observation(first, second)   # the attempts rule leaves one way, and says why
    step = manager_next_step(obs, manager_offer(obs, staff))
    assert step.startswith('Next step: handle nav-2: escalate_to_supervisor nav-2 (') and 'in a row' in step
    handled = obs.model_copy(update={'handled_failures': ['nav-2']})
    assert manager_next_step(handled, manager_offer(handled, staff)) == ''


def test_the_offered_task_types_are_what_the_supervisors_gate_authorises():
    # A record of navigation failing, then every step succeeding: at each state, a task type is
    # offered exactly when the supervisor's gate (replaying the same record) approves it.
    plan = [('navigation', 'failure'), ('navigation', 'success'), ('info_collection', 'success'),
            ('display', 'success')]
    tasks = []
    for step, (kind, state) in enumerate(plan):
        offered = {k.value for k in delegable(observation(*tasks))}
        for probe in ('navigation', 'info_collection', 'display'):
            approved = WorkflowPolicy()
            for t in tasks:
                auth = approved.authorize(t.task_type.value, t.robot, 'replay', Role.MANAGER.value, 0.0,
                                          hcw_id='90' if t.task_type is TaskType.NAVIGATION else '')
                approved.record_report(TaskReportModel(task_id=auth.task_id, task_type=t.task_type, robot=t.robot,
                                                       status=t.state, issue='x' if t.state == 'failure' else ''),
                                       1.0)
            decision = approved.authorize(probe, TASK_OWNER[TaskType(probe)], 'next', Role.MANAGER.value, 2.0,
                                          hcw_id='90' if probe == 'navigation' else '')
            assert decision.approved == (probe in offered), (probe, tasks)
        assert kind in offered
        tasks.append(TaskRecord(task_id=f'{kind}-{step}', task_type=TaskType(kind), robot=TASK_OWNER[TaskType(kind)],
                                state=state))


def test_free_decoding_offers_the_full_schemas():
    free = manager_offer(observation(), ['80'], decoding='free')
    assert 'enum' not in delegate_params(free)['properties']['hcw_id']


def test_the_reflection_offered_follows_the_record_and_fits_the_token_limit():
    done = [TaskRecord(task_id=f'{k.value}-1', task_type=k, robot=TASK_OWNER[k], hcw_id='90', state='success')
            for k in (TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY)]
    offer = manager_offer(observation(*done), ['80', '90'])
    assert offer.names == [ManagerTool.SUBMIT_REFLECTION.value]
    schema = response_schema(offer.tools, 1)
    reflection = schema['properties']['tool_calls']['items']['properties']['arguments']['properties']
    outcomes = reflection['task_outcomes']['prefixItems']
    assert [o['properties']['status']['enum'] for o in outcomes] == [['success']] * 3   # as the record says
    texts = [o['properties']['summary'] for o in outcomes] + [reflection[k]['items'] for k in (
        'recovery_attempts', 'lessons_learned')]
    assert all(t['maxLength'] == REFLECTION_TEXT_MAX_CHARS for t in texts)
    assert reflection['lessons_learned']['maxItems'] == REFLECTION_MAX_ITEMS


def test_a_report_schema_describes_what_the_role_reports_under_keys_the_rubric_reads():
    from robot_team.catalog import ROLES
    from robot_team.evaluation.rubric import ALIASES
    from robot_team.llm.toolschema import report_schema
    read = {key for aliases in ALIASES.values() for key in aliases}
    for role in ROLES:
        data = report_schema(role.role.value)['function']['parameters']['properties']['data']
        assert list(data['properties']) == [key for key, _ in role.report_data]
        assert data['additionalProperties'] is False   # a looping model cannot add key after key until max_tokens
        assert not data.get('required')                         # optional: no guard refuses a report without them
        assert set(data['properties']) <= read, role.role      # the local-reasoning items, as the rubric reads them
    box = build_toolbox(Role.INFO_COLLECTION.value, World())
    task = TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90')
    scan = box.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12')
    assert box.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id=scan.output['badge_id']).ok
    assert box.call(Tool.RECORD_CHECK_IN.value, task_id='info-1', room='ER-12', hcw_id='90',
                    badge_id=scan.output['badge_id']).ok
    report = next(t for t in robot_offer(box, task).tools if t['function']['name'] == 'submit_report')
    success = report['function']['parameters']['anyOf'][0]           # the proofs fix the success's values
    data = success['properties']['data']
    assert data['properties']['name'] == {'type': 'string', 'enum': ['Dr. Lucas Brennan']}


def _bounded(schema):
    """Whether every string, list and object ``schema`` allows is bounded (maxLength, maxItems, maxProperties)."""
    if 'anyOf' in schema:
        return all(_bounded(s) for s in schema['anyOf'])
    kind = schema.get('type')
    if kind == 'string':
        return 'maxLength' in schema or 'enum' in schema or 'pattern' in schema
    if kind == 'array':
        return 'maxItems' in schema and _bounded(schema.get('items') or {})
    if kind == 'object':
        extra = schema.get('additionalProperties', True)
        return all(_bounded(v) for v in (schema.get('properties') or {}).values()) and (
            extra is False or ('maxProperties' in schema and extra is not True and _bounded(extra)))
    return kind in ('number', 'integer', 'boolean', 'null') or 'enum' in schema


def test_a_described_report_item_is_bounded_in_a_json_schema_reply():
    from robot_team.catalog import ROLES
    from robot_team.llm.toolschema import REPORT_ITEM_TEXT_MAX_CHARS, report_schema
    for role in ROLES:
        schema = response_schema([report_schema(role.role.value)])
        data = schema['properties']['tool_calls']['items']['properties']['arguments']['properties']['data']
        # a model that loops inside a waypoint list, or adds key after key, is stopped by the schema
        assert _bounded(data), role.role
    nav = response_schema([report_schema(Role.NAVIGATION.value)])['properties']['tool_calls']['items']
    path = nav['properties']['arguments']['properties']['data']['properties']['path']
    assert path['anyOf'][0] == {'type': 'string', 'maxLength': REPORT_ITEM_TEXT_MAX_CHARS}
