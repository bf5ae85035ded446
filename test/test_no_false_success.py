"""No false success, whatever a brain chooses: the successes issue 26 found accepted are refused now.

Each test replays, through the robot node's own core (``RobotCore``: its Toolbox, the catalog's
proofs bound to the task, what the world shows) or the supervisor's own gate, the choices a random
chooser or the built-in 0.5B model made that the team accepted on d19b738:

- a navigation ``success`` whose HCW was never located (``locate_staff`` with ``hcw_ids: []``) nor
  picked up, with a goal straight to the door;
- technician #55 escorted for a patient who needs a physician;
- an info-collection ``success`` after ``record_check_in`` failed, or with no check-in at all, or
  with the badge of another HCW than the escorted one;
- a display ``success`` with a made-up care team ("Working on it.", "str");
- and the manager accepting a success whose attached world evidence does not show it.

The stub floor of ``team_harness`` answers like the real tools (no ROS); what the world shows is
the stub world's state, observed through ``observe`` as the real tools classes do.
"""

from __future__ import annotations

import pytest

from team_harness import DOOR, STAFF, World, build_toolbox, observer, run_robot

from robot_team.brains.base import BrainReport, RobotBrain, TaskSpec
from robot_team.brains.protocol import InfoCollectionProtocolBrain
from robot_team.catalog import TaskFacts, Tool
from robot_team.rules.guards import report_contradictions
from robot_team.contracts.reports import TaskStatus, TaskType
from robot_team.rules.workflow.policy import WorkflowPolicy
from robot_team.rules.workflow.rules import StaffFacts, people_chose, task_hcw_refusal


class Calls(RobotBrain):
    """A brain that makes the given calls in order (each ``(tool, args)``), then claims ``claim``."""

    def __init__(self, calls, claim=None):
        self.calls, self.claim = calls, claim or BrainReport(status=TaskStatus.SUCCESS)

    def execute(self, task, tools, progress):
        for name, args in self.calls:
            tools.call(name, task_id=task.task_id, **args)
        return self.claim


def _run(role, calls, task, world=None, claim=None):
    world = world or World()
    box = build_toolbox(role, world)
    return run_robot(role, Calls(calls, claim), box, task, lambda *a, **k: None, world), world


NAV = TaskSpec(task_id='nav-1', task_type=TaskType.NAVIGATION, room='ER-12', hcw_id='90')
INFO = TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90')
DISPLAY = TaskSpec(task_id='display-1', task_type=TaskType.DISPLAY, room='ER-12', hcw_id='90')
HCW_90 = STAFF['90']
ESCORT = [(Tool.LOCATE_STAFF.value, {'hcw_ids': ['90']}),
          (Tool.PAGE_STAFF.value, {'hcw_id': '90', 'message': 'ER-12 needs you'}),
          (Tool.NAVIGATE_TO_POSE.value, {'x': HCW_90['x'], 'y': HCW_90['y']}),
          (Tool.ROOM_DOOR_POSE.value, {'room': 'ER-12'}),
          (Tool.NAVIGATE_TO_POSE.value, {'x': DOOR['x'], 'y': DOOR['y'], 'yaw': DOOR['yaw']})]


def test_a_navigation_success_needs_the_tasks_hcw_located_picked_up_and_at_the_door():
    done, _ = _run('navigation_robot', ESCORT, NAV)
    assert done.status is TaskStatus.SUCCESS, done.issue
    assert done.evidence['world']['hcw_at_room']['located']['area'] == 'ER-12'   # what the RTLS saw, attached
    # the random chooser's run: the RTLS asked about nobody (it lists everyone), no pickup, a goal to the door
    nobody = [(Tool.LOCATE_STAFF.value, {'hcw_ids': []}), *ESCORT[1:2], *ESCORT[3:]]
    report, world = _run('navigation_robot', nobody, NAV)
    assert report.status is TaskStatus.FAILURE and report.issue.startswith('false completion')
    assert 'no goal reached HCW #90 at (x 22, y 3): the HCW was not picked up' in report.issue
    assert world.staff['90']['area'] == 'Staff lounge'   # indeed: the HCW never left
    # asked about others only: nothing says where the task's HCW was to be picked up
    others = [(Tool.LOCATE_STAFF.value, {'specialty': 'Nurse'}), *ESCORT[3:]]
    report, _ = _run('navigation_robot', others, NAV)
    assert "the RTLS was never asked where the task's HCW is" in report.issue
    # located, but never picked up: the tools' answers cannot show it, and the world does not either
    skipped = [*ESCORT[:2], *ESCORT[3:]]
    report, _ = _run('navigation_robot', skipped, NAV)
    assert report.status is TaskStatus.FAILURE and 'the HCW was not picked up' in report.issue


def test_a_navigation_success_the_world_does_not_show_is_refused():
    """Every tool answer in order, but the RTLS sees the HCW elsewhere: the world, not the journal, decides."""
    world = World()
    box = build_toolbox('navigation_robot', world)
    look = observer(world)

    def elsewhere(fact, task, until):
        seen = look(fact, task, until)
        return {**seen, 'located': {'area': 'Triage', 'x': 3.0, 'y': 12.0}}
    from robot_team.core.robot import RobotCore
    report = RobotCore('navigation_robot', Calls(ESCORT), box, lambda *a, **k: None, lambda: 0.0,
                       elsewhere).run(NAV, lambda *_: None)
    assert report.status is TaskStatus.FAILURE
    assert 'the RTLS sees HCW #90 in Triage (x 3, y 12), not at ER-12' in report.issue
    nothing = RobotCore('navigation_robot', Calls(ESCORT), build_toolbox('navigation_robot', World()),
                        lambda *a, **k: None, lambda: 0.0).run(NAV, lambda *_: None)
    assert nothing.status is TaskStatus.FAILURE and 'hcw_at_room: nothing was observed' in nothing.issue


@pytest.mark.parametrize('kind, hcw, why', [
    ('navigation', '55', 'HCW #55 is a Technician; the patient needs a Physician'),
    ('navigation', '', 'a navigation escorts an HCW'),
    ('navigation', '77', 'HCW #77 is not known to the staff directory'),
])
def test_the_gate_refuses_an_escort_of_another_specialty_or_nobody(kind, hcw, why):
    policy = WorkflowPolicy()
    policy.patient_arrived('P-1', 1.0, assigned_hcw_id='80', required_specialty='Physician')
    staff = World().staff_facts()
    auth = policy.authorize(kind, 'navigation_robot', '', 'manager', 2.0, hcw_id=hcw, staff=staff)
    assert not auth.approved and auth.rule == 'hcw' and why in auth.explanation
    assert not auth.violation   # a refused delegation, not a breach of the workflow's order


def test_the_gate_lets_people_choose_and_names_the_escorted_hcw_for_the_later_steps():
    staff = {**World().staff_facts(), '91': StaffFacts('Physician', 'off_shift')}
    policy = WorkflowPolicy()
    policy.patient_arrived('P-1', 1.0, assigned_hcw_id='55', required_specialty='Physician')
    assert policy.authorize('navigation', 'navigation_robot', '', 'manager', 2.0, hcw_id='91',
                            staff=staff).explanation.startswith('HCW #91 is off shift')
    nav = policy.authorize('navigation', 'navigation_robot', '', 'manager', 2.0, hcw_id='55', staff=staff)
    assert nav.approved and nav.hcw_id == '55'   # the hospital assigned #55: a person's choice stands
    from robot_team.contracts.reports import TaskReportModel
    policy.record_report(TaskReportModel(task_id=nav.task_id, task_type='navigation', robot='navigation_robot',
                                         status='success'), 3.0)
    other = policy.authorize('info_collection', 'info_collection_robot', '', 'manager', 4.0, hcw_id='90',
                             staff=staff)
    assert not other.approved and other.rule == 'hcw' and 'HCW #55, not #90' in other.explanation
    info = policy.authorize('info_collection', 'info_collection_robot', '', 'manager', 4.0, staff=staff)
    assert info.approved and info.hcw_id == '55'   # the task is about the escorted HCW, named or not
    assert people_chose('', []) == set()
    assert task_hcw_refusal(TaskType.NAVIGATION, '90', [], required_specialty='physician', chosen=set(),
                            staff=staff) is None   # specialties compare without case


def _info_calls(badge, hcw='90', check_in=True):
    calls = [(Tool.READ_BADGE_SCAN.value, {'room': 'ER-12'}), (Tool.LOOKUP_STAFF_BY_BADGE.value, {'badge_id': badge})]
    return calls + ([(Tool.RECORD_CHECK_IN.value, {'room': 'ER-12', 'hcw_id': hcw, 'badge_id': badge})]
                    if check_in else [])


def _identity(hcw):
    s = STAFF[hcw]
    return BrainReport(status=TaskStatus.SUCCESS, data={k: s[k] for k in ('hcw_id', 'name', 'specialty')})


def test_an_info_success_needs_the_check_in_recorded():
    done, _ = _run('info_collection_robot', _info_calls('ED-0090'), INFO, claim=_identity('90'))
    assert done.status is TaskStatus.SUCCESS, done.issue
    # the built-in model's run: scan and lookup, then success without record_check_in
    report, world = _run('info_collection_robot', _info_calls('ED-0090', check_in=False), INFO, claim=_identity('90'))
    assert report.status is TaskStatus.FAILURE and 'the check-in was never recorded' in report.issue
    assert world.checked_in == []
    # the random chooser's run: the check-in failed ("HCW '22' is not in the staff directory"), success claimed
    failed = [*_info_calls('ED-0090', check_in=False), (Tool.RECORD_CHECK_IN.value,
                                                        {'room': 'ER-12', 'hcw_id': '22', 'badge_id': 'ED-0090'})]
    report, world = _run('info_collection_robot', failed, INFO, claim=_identity('90'))
    assert report.status is TaskStatus.FAILURE and 'the check-in was never recorded' in report.issue
    assert world.checked_in == []   # the call was refused: another HCW than the task's


def test_an_info_success_needs_the_escorted_hcws_badge():
    """The door reader read another HCW's badge (#80's) for the escorted #90: never a success."""
    world = World(scan_badge='ED-0080')
    report, _ = _run('info_collection_robot', _info_calls('ED-0080', hcw='80'), INFO, world, _identity('80'))
    assert report.status is TaskStatus.FAILURE
    assert "lookup_staff_by_badge answered HCW #80, not the task's HCW #90" in report.issue
    assert world.checked_in == []   # the check-in of #80 for #90's task was refused: outside the task
    # the protocol brain reports the mix-up as the failure it is (the manager escalates it)
    protocol = run_robot('info_collection_robot', InfoCollectionProtocolBrain(),
                         build_toolbox('info_collection_robot', world), INFO, lambda *a, **k: None, world)
    assert protocol.status is TaskStatus.FAILURE and 'belongs to HCW #80, not #90' in protocol.issue


def _display_calls(entries):
    return [(Tool.FETCH_CARE_TEAM.value, {'room': 'ER-12'}),
            (Tool.SHOW_DISPLAY.value, {'room': 'ER-12', 'title': 'Care team', 'layout': 'rows', 'entries': entries})]


def _member(hcw, **change):
    s = STAFF[hcw]
    return {'role': s['role'], 'hcw_id': hcw, 'name': s['name'], 'specialty': s['specialty'], **change}


@pytest.mark.parametrize('entries, why', [
    ([{'role': 'Working on it.', 'hcw_id': '21', 'name': 'Working on it.'},
      {'role': 'Proceeding.', 'hcw_id': '99', 'name': 'Proceeding.'}],
     "#21 ('Working on it.') is not on the care team"),
    ([{'role': 'str', 'hcw_id': '41', 'name': 'str', 'specialty': 'str'}], "#41's name is shown as 'str'"),
    ([_member('41')], 'not shown: #55 (Priya Raman)'),
    ([_member('41'), _member('55', name='Dr. Nobody')], "#55's name is shown as 'Dr. Nobody'"),
])
def test_a_display_success_needs_exactly_the_care_team_on_the_screen(entries, why):
    done, world = _run('display_robot', _display_calls([_member('41'), _member('55')]), DISPLAY)
    assert done.status is TaskStatus.SUCCESS, done.issue
    assert done.evidence['world']['screen_shows_care_team']['screen']['entries'] == world.shown[-1]['entries']
    report, world = _run('display_robot', _display_calls(entries), DISPLAY)
    assert report.status is TaskStatus.FAILURE and why in report.issue
    assert world.shown   # the screen did show it: the success is what is refused


def test_the_manager_accepts_a_success_only_when_the_attached_world_shows_it():
    report, _ = _run('display_robot', _display_calls([_member('41'), _member('55')]), DISPLAY)
    task = TaskFacts('ER-12', '90', 0.0)
    assert report.status is TaskStatus.SUCCESS and report_contradictions(report, task) == []
    world = report.evidence['world']['screen_shows_care_team']
    changed = {**world, 'screen': {**world['screen'], 'entries': world['screen']['entries'][:1]}}
    evidence = {**report.evidence, 'world': {'screen_shows_care_team': changed}}
    forged = report.model_copy(update={'evidence': evidence})
    assert 'screen does not show the directory' in report_contradictions(forged, task)[0]
    elsewhere = TaskFacts('Triage', '90', 0.0)   # the manager checks the room it delegated
    assert "observed at 'ER-12', not the task's room 'Triage'" in ' '.join(report_contradictions(report, elsewhere))


def test_a_time_limit_on_a_team_held_for_a_person_is_its_own_outcome():
    """Held on an escalation people were asked about and did not answer: ``held_for_human``, not ``timeout``."""
    from robot_team.contracts.events import TeamEventModel
    from robot_team.run_report import HELD_FOR_HUMAN, time_limit_outcome

    def ev(kind, esc, reason=''):
        return TeamEventModel(seq=1, stamp_s=0.0, wall_time=0.0, actor='supervisor', kind=kind, reason=reason,
                              data={'escalation_id': esc})
    assert time_limit_outcome([])[0] == 'timeout'
    asked = [ev('escalation', 'esc-1'), ev('escalation_expired', 'esc-1'), ev('escalation', 'esc-2'),
             ev('team_held', 'esc-2', 'esc-1 expired unanswered')]
    outcome, why = time_limit_outcome(asked)
    assert outcome == HELD_FOR_HUMAN and 'held on esc-2' in why and 'esc-1 expired unanswered' in why
    assert time_limit_outcome([*asked, ev('human_decision', 'esc-2')])[0] == 'timeout'   # answered: no excuse
    assert time_limit_outcome([*asked, ev('team_released', 'esc-2')])[0] == 'timeout'    # released: it could act
    assert time_limit_outcome(asked[:3])[0] == 'timeout'   # an open escalation the team is not held on
