"""Tool ownership is enforced in code: refusals are recorded and never reach the tool."""

import pytest
from pydantic import BaseModel

from robot_team.tools.base import Toolbox
from robot_team.contracts.errors import ToolAccessError, ToolError


class Recorder:
    """Collects what a Toolbox would publish as team events."""

    def __init__(self):
        self.events = []

    def emit(self, kind, summary, *, target='', reason='', **data):
        self.events.append((kind.value, target, reason, data))


class RoomArgs(BaseModel):
    room: str


def make_toolbox():
    calls = []

    def show(args):
        calls.append(args.room)
        if args.room == 'ER-99':
            raise ToolError('no such room', output={'success': False})
        return {'success': True, 'room': args.room}
    events = Recorder()
    box = Toolbox('display_robot', events)
    box.register('fetch_care_team', 'fetch', RoomArgs, show)
    return box, events, calls


def test_owner_call_is_validated_run_and_journaled():
    box, events, calls = make_toolbox()
    result = box.call('fetch_care_team', task_id='display-1', room='ER-12')
    assert result.ok and result.output == {'success': True, 'room': 'ER-12'}
    assert calls == ['ER-12']
    assert [e[0] for e in events.events] == ['tool_call', 'tool_result']
    assert box.journal('display-1')[0].output['room'] == 'ER-12'


def test_other_robot_is_refused_and_tool_never_runs():
    box, events, calls = make_toolbox()
    with pytest.raises(ToolAccessError, match='manager does not own'):
        box.call('fetch_care_team', caller='manager', room='ER-12')
    assert calls == []
    assert events.events[-1][0] == 'tool_refused'
    assert events.events[-1][3]['owner'] == 'display_robot'


def test_tool_of_another_robot_is_refused_with_its_owner():
    box, events, calls = make_toolbox()
    with pytest.raises(ToolAccessError, match='owned by navigation_robot'):
        box.call('navigate_to_pose', x=1.0, y=2.0)
    assert events.events[-1][0] == 'tool_refused'


def test_registering_another_robots_tool_fails():
    box, _, _ = make_toolbox()
    with pytest.raises(ValueError, match='belongs to navigation_robot'):
        box.register('navigate_to_pose', 'drive', RoomArgs, lambda a: {})


def test_bad_arguments_and_tool_errors_become_recorded_failures():
    box, events, calls = make_toolbox()
    bad = box.call('fetch_care_team', task_id='t', rooom='ER-12')
    assert not bad.ok and "invalid arguments for 'fetch_care_team'" in bad.error and 'room' in bad.error
    failed = box.call('fetch_care_team', task_id='t', room='ER-99')
    assert not failed.ok and failed.error == 'no such room' and failed.output == {'success': False}
    assert [r.ok for r in box.journal('t')] == [False, False]
    assert calls == ['ER-99']


def test_one_declaration_of_the_tools_drives_ownership_schemas_evidence_and_rubric_keys():
    from robot_team.evaluation.rubric import KEY_TOOLS as RUBRIC_KEYS
    from team_harness import World, build_toolbox
    from robot_team.llm.toolschema import MANAGER_TOOL_MODELS, robot_tools
    from robot_team.run_report import EVIDENCE_TOOLS as REPORT_EVIDENCE
    from robot_team.catalog import (
        EVIDENCE_TOOLS, KEY_TOOLS, MANAGER_TOOLS, TOOL_OWNERS, TOOLS, tools_of)
    assert list(MANAGER_TOOL_MODELS) == list(MANAGER_TOOLS)
    assert REPORT_EVIDENCE is EVIDENCE_TOOLS and RUBRIC_KEYS is KEY_TOOLS
    for role in ('navigation_robot', 'info_collection_robot', 'display_robot'):
        box = build_toolbox(role, World())      # the real register() methods, stub implementations
        declared = tools_of(role)
        assert box.names() == [t.name for t in declared]
        assert [s.input_model for s in box.specs()] == [t.input_model for t in declared]
        schemas = [t['function']['name'] for t in robot_tools(box)]
        assert schemas[:-1] == [t.name for t in declared] and schemas[-1] == 'submit_report'
    assert {t.name: t.owner for t in TOOLS}.items() <= TOOL_OWNERS.items()
    assert all(len(keys) == 1 and TOOL_OWNERS[keys[0]] for keys in KEY_TOOLS.values())
    assert EVIDENCE_TOOLS['navigation'] == ('locate_staff', 'page_staff', 'plan_path', 'navigate_to_pose')


def test_a_tool_cannot_be_registered_for_a_robot_the_catalog_does_not_give_it_to():
    import pytest
    from pydantic import BaseModel

    from robot_team.tools.base import Toolbox

    class Args(BaseModel):
        pass
    box = Toolbox('display_robot')
    with pytest.raises(ValueError, match="belongs to navigation_robot"):
        box.register('navigate_to_pose', 'drive', Args, lambda a: {})


def test_a_call_on_another_room_than_its_tasks_is_refused_and_never_runs():
    """The display robot of a run showed ER-12's care team on the Triage screen and reported success."""
    box, events, calls = make_toolbox()
    box.begin_task('display-1', room='ER-12', hcw_id='90')
    other = box.call('fetch_care_team', task_id='display-1', room='Triage')
    assert not other.ok and calls == []
    assert other.error == "fetch_care_team serves display-1 only: room 'Triage' is not the task's ('ER-12'); not run"
    invalid = [e for e in events.events if e[0] == 'invalid_call']
    assert [e[3]['category'] for e in invalid] == ['outside_task'] and invalid[0][3]['task_id'] == 'display-1'
    assert box.call('fetch_care_team', task_id='display-1', room='ER-12').ok and calls == ['ER-12']
    assert box.call('fetch_care_team', task_id='not-begun', room='Triage').ok   # no task values: nothing closed


def test_an_implementation_reads_what_its_task_is_about_during_its_call_only():
    from robot_team.catalog import ClosedSet
    from robot_team.tools.base import task_value
    seen = []
    box = Toolbox('display_robot')
    box.register('fetch_care_team', 'fetch', RoomArgs, lambda a: seen.append(task_value(ClosedSet.TASK_ROOM)) or {})
    box.begin_task('display-1', room='ER-12', hcw_id='90')
    box.begin_task('display-2', room='ER-3', hcw_id='41')
    assert box.call('fetch_care_team', task_id='display-2', room='ER-3').ok
    assert box.call('fetch_care_team', task_id='display-1', room='ER-12').ok
    assert box.call('fetch_care_team', task_id='not-begun', room='ER-5').ok
    assert seen == ['ER-3', 'ER-12', ''] and task_value(ClosedSet.TASK_ROOM) == ''   # nothing outside a call


def test_a_robot_forgets_a_tasks_journal_once_its_report_carries_it():
    """A deployed robot runs a task per patient for weeks: what its Toolbox keeps does not grow with them."""
    from team_harness import World, build_toolbox, run_robot
    from robot_team.brains.base import TaskSpec
    from robot_team.brains.protocol import InfoCollectionProtocolBrain
    from robot_team.contracts.reports import TaskStatus, TaskType
    world = World()
    box, emitted = build_toolbox('info_collection_robot', world), []
    reports = [run_robot('info_collection_robot', InfoCollectionProtocolBrain(), box,
                         TaskSpec(task_id=f'info-{k}', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90'),
                         lambda *a, **k: emitted.append(a), world)
               for k in range(1, 51)]
    assert all(r.status is TaskStatus.SUCCESS for r in reports)
    # every report carries its own task's calls as evidence, the last as much as the first
    assert [len(r.evidence['tool_journal']) for r in reports] == [len(reports[0].evidence['tool_journal'])] * 50
    assert {c['tool'] for c in reports[-1].evidence['tool_journal']} >= {'read_badge_scan', 'lookup_staff_by_badge'}
    assert box._journal == {} and box._tasks == {}
    assert box.journal('info-50') == [] and box.task_values('info-50') == {}
    box.cancel('info-51')
    box.end_task('info-51')
    assert box.cancelled('info-51')   # a cancelled task stays cancelled: a late call for it is still refused
