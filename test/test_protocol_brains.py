"""The protocol brains' decisions, on scripted tool outputs (no ROS graph: pure logic)."""

from robot_team.brains.base import (
    Delegate, Escalate, Finish, ManagerObservation, PatientInfo, Reflect, TaskRecord, TaskSpec)
from robot_team.brains.protocol import (
    DisplayProtocolBrain, InfoCollectionProtocolBrain, ManagerProtocolBrain, NavigationProtocolBrain)
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.contracts.reports import IssueCode, TaskStatus, TaskType
from robot_team.tools.base import Toolbox
from robot_team.contracts.errors import ToolError

from pydantic import BaseModel, ConfigDict


class AnyArgs(BaseModel):
    model_config = ConfigDict(extra='allow')


def toolbox(owner, outputs):
    """A toolbox whose tools answer from ``outputs`` (name -> dict, callable or ToolError)."""
    box = Toolbox(owner)
    for name, output in outputs.items():
        def tool(args, output=output):
            value = output(args.model_dump()) if callable(output) else output
            if isinstance(value, ToolError):
                raise value
            return value
        box.register(name, name, AnyArgs, tool)
    return box


def progress(*_):
    pass


STAFF = {
    '80': {'hcw_id': '80', 'specialty': 'Physician', 'area': 'ER-3', 'x': 5.0, 'y': 5.0,
           'availability': 'busy', 'detail': 'on an urgent call'},
    '90': {'hcw_id': '90', 'specialty': 'Physician', 'area': 'Staff lounge', 'x': 20.0, 'y': 5.0,
           'availability': 'available', 'detail': ''},
}


def nav_tools(page_ack, nav_ok=True):
    def locate(args):
        if args.get('hcw_ids'):
            return {'staff': [STAFF[h] for h in args['hcw_ids'] if h in STAFF], 'unknown_ids': []}
        return {'staff': list(STAFF.values()), 'unknown_ids': []}
    nav = {'outcome': 'succeeded', 'error_code': 0, 'goal': [0, 0, 0]}
    return toolbox('navigation_robot', {
        'locate_staff': locate,
        'page_staff': {'acknowledged': True, 'delivered': True, 'reply': 'on my way'} if page_ack else ToolError(
            'HCW #80 did not acknowledge the page within 30 s', output={'acknowledged': False, 'delivered': True}),
        'room_door_pose': {'room': 'ER-12', 'x': 30.0, 'y': 10.0, 'yaw': 0.0},
        'plan_path': {'length_m': 12.5, 'waypoints': [], 'areas': []},
        'navigate_to_pose': nav if nav_ok else ToolError('navigate_to_pose aborted: error 208 (NO_VALID_PATH)'),
    })


def test_navigation_reports_unavailable_hcw_with_alternatives_and_does_not_drive():
    box = nav_tools(page_ack=False)
    task = TaskSpec(task_id='nav-1', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='80')
    report = NavigationProtocolBrain().execute(task, box, progress)
    assert report.status is TaskStatus.FAILURE
    assert 'HCW #80 unavailable: on an urgent call' in report.issue
    assert report.data['alternatives'][0]['hcw_id'] == '90'
    assert report.data['hcw_location']['area'] == 'ER-3'
    assert 'navigate_to_pose' not in [r.tool for r in box.journal('nav-1')]


def test_navigation_escorts_available_hcw():
    box = nav_tools(page_ack=True)
    task = TaskSpec(task_id='nav-2', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='90')
    report = NavigationProtocolBrain().execute(task, box, progress)
    assert report.status is TaskStatus.SUCCESS and report.issue == ''
    assert [r.tool for r in box.journal('nav-2')].count('navigate_to_pose') == 2


def test_navigation_abort_is_a_failure_with_the_nav2_error():
    report = NavigationProtocolBrain().execute(
        TaskSpec(task_id='nav-1', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='90'),
        nav_tools(page_ack=True, nav_ok=False), progress)
    assert report.status is TaskStatus.FAILURE and 'NO_VALID_PATH' in report.issue


def test_info_collection_unknown_badge_is_a_failure():
    box = toolbox('info_collection_robot', {
        'read_badge_scan': {'badge_id': 'ED-9999', 'room': 'ER-12'},
        'lookup_staff_by_badge': ToolError("badge 'ED-9999' is not in the staff directory"),
        'record_check_in': {}})
    report = InfoCollectionProtocolBrain().execute(
        TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90'), box, progress)
    assert report.status is TaskStatus.FAILURE and 'ED-9999' in report.issue


def test_display_orders_roles_and_plans_layout():
    members = [{'hcw_id': '55', 'name': 'P', 'specialty': 'Technician', 'role': 'ED technician'},
               {'hcw_id': '90', 'name': 'L', 'specialty': 'Physician', 'role': 'Attending physician'}]
    shown = {}
    box = toolbox('display_robot', {'fetch_care_team': {'room': 'ER-12', 'members': members},
                                    'show_display': lambda a: shown.update(a) or {'success': True}})
    report = DisplayProtocolBrain().execute(
        TaskSpec(task_id='display-1', task_type=TaskType.DISPLAY, room='ER-12'), box, progress)
    assert report.status is TaskStatus.SUCCESS
    assert [e['hcw_id'] for e in shown['entries']] == ['90', '55']
    assert report.data['layout'].startswith('one row per member')


PATIENT = PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='80')


def nav_failure():
    return TaskRecord(task_id='nav-1', task_type=TaskType.NAVIGATION, robot='navigation_robot', hcw_id='80',
                      state='failure', issue='HCW #80 unavailable: on an urgent call',
                      data={'alternatives': [{'hcw_id': '90', 'area': 'Staff lounge', 'specialty': 'Physician'}],
                            'failed_tool': 'page_staff', 'page_delivered': True})


def test_manager_delegates_navigation_first_to_the_navigation_robot():
    actions = ManagerProtocolBrain().decide(ManagerObservation(patient=PATIENT))
    assert len(actions) == 1 and isinstance(actions[0], Delegate)
    assert actions[0].task_type is TaskType.NAVIGATION and actions[0].robot == 'navigation_robot'
    assert actions[0].hcw_id == '80'


def test_manager_proposes_alternative_after_unavailable_hcw():
    actions = ManagerProtocolBrain().decide(ManagerObservation(patient=PATIENT, tasks=[nav_failure()]))
    assert isinstance(actions[0], Delegate) and actions[0].hcw_id == '90'
    assert actions[0].handles_task_id == 'nav-1'
    # the rule reads the failed call, never the issue's words: a page that was not delivered (the pager
    # down) is escalated even if the issue says 'unavailable'; a delivered one is proposed whatever it says
    undelivered = nav_failure().model_copy(update={'data': {**nav_failure().data, 'page_delivered': False}})
    assert isinstance(ManagerProtocolBrain().decide(ManagerObservation(patient=PATIENT, tasks=[undelivered]))[0],
                      Escalate)
    reworded = nav_failure().model_copy(update={'issue': 'Dr. #80 did not answer'})
    assert ManagerProtocolBrain().decide(ManagerObservation(patient=PATIENT, tasks=[reworded]))[0].hcw_id == '90'


def test_the_robots_failures_name_the_call_that_failed():
    box = nav_tools(page_ack=False)
    report = NavigationProtocolBrain().execute(
        TaskSpec(task_id='nav-1', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='80'), box, progress)
    assert report.data['failed_tool'] == 'page_staff' and report.data['page_delivered'] is True
    blocked = NavigationProtocolBrain().execute(
        TaskSpec(task_id='nav-2', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='90'),
        nav_tools(page_ack=True, nav_ok=False),
        progress)
    assert blocked.data['failed_tool'] == 'navigate_to_pose'


def test_manager_escalates_when_told_to_and_follows_the_human():
    brain = ManagerProtocolBrain(issue_handling='escalate')
    obs = ManagerObservation(patient=PATIENT, tasks=[nav_failure()])
    assert isinstance(brain.decide(obs)[0], Escalate)
    obs.escalations.append(EscalationRecord(escalation_id='esc-1', task_id='nav-1'))
    assert brain.decide(obs) == []
    obs.escalations[0].decision, obs.escalations[0].hcw_id = 'reassign', '90'
    action = brain.decide(obs)[0]
    assert isinstance(action, Delegate) and action.hcw_id == '90' and 'esc-1' in action.reason


def test_manager_waits_for_the_persons_decision_on_a_task_closed_by_its_deadline_then_follows_it():
    late = nav_failure().model_copy(update={'issue_code': IssueCode.TASK_DEADLINE, 'issue': 'no report within 600 s'})
    brain = ManagerProtocolBrain()
    obs = ManagerObservation(patient=PATIENT, tasks=[late])
    assert brain.decide(obs) == []                  # the supervisor's escalation is on its way: no second one
    obs.escalations.append(EscalationRecord(escalation_id='esc-1', task_id='nav-1', raised_by='supervisor'))
    assert brain.decide(obs) == []
    obs.escalations[0].decision, obs.escalations[0].hcw_id = 'reassign', '90'
    action = brain.decide(obs)[0]
    assert isinstance(action, Delegate) and action.hcw_id == '90' and action.handles_task_id == 'nav-1'


def test_manager_waits_while_a_task_runs_and_ignore_policy_does_nothing():
    running = nav_failure().model_copy(update={'state': 'running'})
    assert ManagerProtocolBrain().decide(ManagerObservation(patient=PATIENT, tasks=[running])) == []
    assert ManagerProtocolBrain('ignore').decide(ManagerObservation(patient=PATIENT, tasks=[nav_failure()])) == []


def test_manager_reflection_covers_all_tasks_and_recovery_then_finishes():
    tasks = [nav_failure(),
             TaskRecord(task_id='nav-2', task_type=TaskType.NAVIGATION, robot='navigation_robot', hcw_id='90',
                        state='success', summary='escorted #90'),
             TaskRecord(task_id='info-1', task_type=TaskType.INFO_COLLECTION, robot='info_collection_robot',
                        state='success', summary='#90 identified'),
             TaskRecord(task_id='display-1', task_type=TaskType.DISPLAY, robot='display_robot', state='success',
                        summary='shown')]
    obs = ManagerObservation(patient=PATIENT, tasks=tasks)
    action = ManagerProtocolBrain().decide(obs)[0]
    assert isinstance(action, Reflect)
    assert action.reflection.missing_parts() == []
    assert any('nav-1 failed' in r and 'nav-2' in r for r in action.reflection.recovery_attempts)
    obs.reflection_done = True
    finish = ManagerProtocolBrain().decide(obs)[0]
    assert isinstance(finish, Finish) and finish.outcome == 'success'
    # a report without summary or issue (an LLM robot's, taken over): the reflection still validates
    bare = ManagerObservation(patient=PATIENT, tasks=[t.model_copy(update={'summary': ''}) for t in tasks])
    [again] = ManagerProtocolBrain().decide(bare)
    assert isinstance(again, Reflect) and again.reflection.missing_parts() == []
    assert 'display-1 reported success' in again.reflection.task_outcomes[-1].summary


def test_every_failure_a_protocol_brain_reports_is_grounded_by_the_rule_the_llm_robots_obey():
    """The catalog's negative findings cover what the protocol brains report as failures (one rule).

    An LLM robot's failure report without grounds is refused (``grounding.failure_refusal``); each
    case a protocol brain reports as a failure must be grounded by the same rule, or the LLM robot
    could not report it before its last request.
    """
    from team_harness import STAFF as FLOOR, World, build_toolbox
    from robot_team.rules.grounding import failure_grounds
    from robot_team.contracts.names import Role
    busy = {h: {**s, 'availability': 'busy'} for h, s in FLOOR.items()}
    cases = [   # (role, brain, task HCW, world): each one a failure
        (Role.NAVIGATION, NavigationProtocolBrain(), '77', World()),                     # unknown to the RTLS
        (Role.NAVIGATION, NavigationProtocolBrain(), '90', World(staff=busy)),           # page not answered
        (Role.NAVIGATION, NavigationProtocolBrain(), '90', World(nav_error='NO_VALID_PATH')),
        (Role.INFO_COLLECTION, InfoCollectionProtocolBrain(), '90', World(scan_badge='ED-9')),     # unknown badge
        (Role.INFO_COLLECTION, InfoCollectionProtocolBrain(), '90', World(scan_badge='ED-0041')),  # another HCW's
        (Role.DISPLAY, DisplayProtocolBrain(), '90', World(care_team=[])),                # no care team
        (Role.DISPLAY, DisplayProtocolBrain(), '90', World(display_ok=False)),            # screen offline
    ]
    task_types = {Role.NAVIGATION: TaskType.NAVIGATION, Role.INFO_COLLECTION: TaskType.INFO_COLLECTION,
                  Role.DISPLAY: TaskType.DISPLAY}
    for role, brain, hcw, world in cases:
        box = build_toolbox(role.value, world)
        task = TaskSpec(task_id='t-1', task_type=task_types[role], room='ER-12', hcw_id=hcw)
        report = brain.execute(task, box, progress)
        assert report.status is TaskStatus.FAILURE, (role, hcw, world)
        assert failure_grounds(hcw, box.journal('t-1')), (role, report.issue)
