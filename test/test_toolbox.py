"""Tool ownership is enforced in code: refusals are recorded and never reach the tool."""

import pytest
from pydantic import BaseModel

from robot_team.tools.base import ToolAccessError, ToolError, Toolbox


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
    box.register('show_display', 'show', RoomArgs, show)
    return box, events, calls


def test_owner_call_is_validated_run_and_journaled():
    box, events, calls = make_toolbox()
    result = box.call('show_display', task_id='display-1', room='ER-12')
    assert result.ok and result.output == {'success': True, 'room': 'ER-12'}
    assert calls == ['ER-12']
    assert [e[0] for e in events.events] == ['tool_call', 'tool_result']
    assert box.journal('display-1')[0].output['room'] == 'ER-12'


def test_other_robot_is_refused_and_tool_never_runs():
    box, events, calls = make_toolbox()
    with pytest.raises(ToolAccessError, match='manager does not own'):
        box.call('show_display', caller='manager', room='ER-12')
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
    bad = box.call('show_display', task_id='t', rooom='ER-12')
    assert not bad.ok and "invalid arguments for 'show_display'" in bad.error and 'room' in bad.error
    failed = box.call('show_display', task_id='t', room='ER-99')
    assert not failed.ok and failed.error == 'no such room' and failed.output == {'success': False}
    assert [r.ok for r in box.journal('t')] == [False, False]
    assert calls == ['ER-99']
