"""Tool calls in ``json_schema`` mode and the exchange record, through the real ``openai`` client.

A scripted loopback server (127.0.0.1) answers as a model without native tool calls would:
with text in ``message.content``. Each bad reply (text, empty, cut by ``max_tokens``, invalid
JSON, the wrong shape, a foreign or invented tool name) is recorded with what was wrong and
answered as designed; a good one becomes the same tool calls a native endpoint returns.
"""

import json

import pytest

from robot_team.brains.base import ManagerObservation, PatientInfo, TaskRecord, TaskSpec
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.llm.manager_brain import LLMManagerBrain
from robot_team.llm.robot_brain import LLMRobotBrain
from robot_team.llm.client import ChatClient
from robot_team.llm.fakeserver import Fault, ScriptedServer, text
from team_harness import Recorder, World, build_toolbox
from robot_team.llm.jsonschema_calls import InvalidReply, parse_reply, response_schema
from robot_team.llm.record import exchanges
from robot_team.llm.settings import LLMSettings
from robot_team.llm.toolschema import manager_tools
from robot_team.contracts.reports import TaskStatus, TaskType


def settings(server, **kw):
    values = dict(base_url=server.base_url, api_key='test-key', model='small-local', timeout_s=5.0, backoff_s=0.0,
                  backoff_max_s=0.0, max_retries=1, fallback='fail', tool_calls='json_schema', max_tokens=123)
    values.update(kw)
    return LLMSettings(_env_file=None, **values)


def calls_json(*calls):
    return json.dumps({'tool_calls': [{'name': n, 'arguments': a} for n, a in calls]})


def completion(content, finish='stop'):
    """A raw chat completion body (for replies the scripted policies cannot shape, e.g. finish_reason)."""
    return json.dumps({'id': 'x', 'object': 'chat.completion', 'created': 0, 'model': 'small-local',
                       'choices': [{'index': 0, 'finish_reason': finish,
                                    'message': {'role': 'assistant', 'content': content}}],
                       'usage': {'prompt_tokens': 50, 'completion_tokens': 123, 'total_tokens': 173}})


PATIENT = PatientInfo(patient_id='P-1', room='ER-12', presentation='signs of confusion and distress', esi_level=2,
                      assigned_hcw_id='80')


def test_request_carries_a_strict_union_schema_and_max_tokens_and_the_reply_becomes_tool_calls():
    record = Recorder()
    reply = calls_json(('delegate_task', {'task_type': 'navigation', 'robot': 'navigation_robot', 'reason': 'cue',
                                          'hcw_id': '80'}))
    with ScriptedServer({'manager': lambda body: text(reply)}) as server:
        client = ChatClient(settings(server), 'manager', record.emitter('manager'))
        tools = manager_tools()
        result = client.chat([{'role': 'system', 'content': 'You manage.'}, {'role': 'user', 'content': 'go'}], tools)
        body = server.requests_of('manager')[0]
    assert 'tools' not in body and body['max_tokens'] == 123
    schema = body['response_format']['json_schema']
    assert body['response_format']['type'] == 'json_schema' and schema['strict'] is True
    assert schema['schema'] == response_schema(tools)
    variants = schema['schema']['properties']['tool_calls']['items']['anyOf']
    assert [v['properties']['name']['enum'] for v in variants] == [['delegate_task'], ['escalate_to_supervisor'],
                                                                   ['submit_reflection']]
    delegate = variants[0]['properties']['arguments']
    assert delegate['properties']['task_type']['enum'] == ['navigation', 'info_collection', 'display']
    assert delegate['properties']['robot']['enum'] == ['navigation_robot', 'info_collection_robot', 'display_robot']
    assert delegate['additionalProperties'] is False
    assert 'delegate_task {task_type: navigation|info_collection|display' in body['messages'][0]['content']
    call = result.tool_calls[0]['function']
    assert call['name'] == 'delegate_task' and json.loads(call['arguments'])['hcw_id'] == '80'
    # the record: what was sent and the full reply
    sent, got = record.of('llm_request')[0]['data'], record.of('llm_reply')[0]['data']
    assert sent['params']['response_format'] == body['response_format'] and sent['params']['max_tokens'] == 123
    assert [sent['new_messages'][k] for k in sent['messages']] == body['messages']
    assert got['reply']['raw_content'] == reply and got['reply']['finish_reason'] == 'stop'
    assert got['reply']['tool_calls'][0]['name'] == 'delegate_task' and not record.of('invalid_call')


@pytest.mark.parametrize('content, finish, why', [
    ('I will delegate navigation to the navigation robot.', 'stop', 'not JSON'),
    ('', 'stop', 'empty'),
    ('{"tool_calls": [{"name": "delegate_task", "arguments": {"task_type": "navi', 'length',
     'cut at the token limit (max_tokens 123)'),
    ('{"tool_calls": [}', 'stop', 'not JSON'),
    ('{"calls": [{"name": "delegate_task"}]}', 'stop', 'expected a JSON object {"tool_calls": [...]}'),
    ('{"tool_calls": [{"arguments": {}}]}', 'stop', 'has no tool name'),
    ('{"tool_calls": [{"name": "delegate_task", "arguments": "navigation"}]}', 'stop', 'must be a JSON object'),
], ids=['text', 'empty', 'cut-by-max-tokens', 'invalid-json', 'wrong-shape', 'no-name', 'arguments-not-object'])
def test_bad_replies_are_recorded_and_come_back_as_text(content, finish, why):
    record = Recorder()
    with ScriptedServer({}) as server:
        server.add_fault('manager', Fault(200, body=completion(content, finish)))
        client = ChatClient(settings(server), 'manager', record.emitter('manager'), sleep=lambda s: None)
        result = client.chat([{'role': 'user', 'content': 'go'}], manager_tools())
    assert result.tool_calls == [] and result.message['content'] == content   # the brain's no-call path
    assert len(server.requests) == 1                                          # not retried: no garbage
    invalid = record.of('invalid_call')
    assert len(invalid) == 1 and why in invalid[0]['reason']
    assert invalid[0]['data']['category'] == 'invalid_reply' and invalid[0]['data']['raw'] == content
    reply = record.of('llm_reply')[0]['data']
    assert reply['reply']['finish_reason'] == finish and reply['usage']['completion_tokens'] == 123


def test_parse_reply_accepts_an_empty_list_as_waiting_and_rejects_what_is_not_calls():
    assert parse_reply('{"tool_calls": []}') == []
    with pytest.raises(InvalidReply, match='not JSON'):
        parse_reply('[1, 2')
    with pytest.raises(InvalidReply, match='expected a JSON object'):
        parse_reply('[]')


def test_manager_foreign_and_invented_tools_are_refused_and_a_text_reply_is_nudged_once():
    record = Recorder()
    replies = iter([calls_json(('navigate_to_pose', {'x': 1, 'y': 2}), ('teleport_hcw', {'hcw_id': '80'})),
                    'Navigation first, then the rest.',
                    calls_json(('delegate_task', {'task_type': 'navigation', 'robot': 'navigation_robot',
                                                  'hcw_id': '80', 'reason': 'patient cue'}))])
    with ScriptedServer({'manager': lambda body: text(next(replies))}) as server:
        brain = LLMManagerBrain(settings(server), record.emitter('manager'), kb=False)
        actions = brain.decide(ManagerObservation(patient=PATIENT, new=['patient arrived']))
        bodies = server.requests_of('manager')
    assert [a.task_type for a in actions] == [TaskType.NAVIGATION]
    refused = record.of('tool_refused')
    assert [(e['target'], e['data']['owner']) for e in refused] == [('navigate_to_pose', 'navigation_robot'),
                                                                    ('teleport_hcw', None)]
    assert 'no such tool' in refused[1]['reason']
    # the refusals went back to the model as results of its calls, in the json_schema history form
    assert bodies[1]['messages'][-1]['role'] == 'user' and 'refused' in bodies[1]['messages'][-1]['content']
    assert bodies[2]['messages'][-1]['content'].startswith('Nothing is running')
    assert record.of('invalid_call')[0]['data']['category'] == 'invalid_reply'
    # every exchange can be rebuilt from the record, with its reply
    rebuilt = exchanges([_model(e) for e in record.events])
    assert [x['messages'] for x in rebuilt] == [b['messages'] for b in bodies]
    assert all(x['reply'] is not None for x in rebuilt)


def test_the_manager_asks_nothing_when_the_workflow_accepts_none_of_its_tools():
    """Every HCW failed and the manager's escalation waits on a human: nothing is offered, so nothing is asked
    (a request without tools could only be answered with text); once the human decided, it asks again, with
    its json_schema constraint."""
    record = Recorder()
    failed = [TaskRecord(task_id=f'nav-{n}', task_type=TaskType.NAVIGATION, robot='navigation_robot', hcw_id=h,
                         state='failure', issue=f'HCW #{h} unavailable') for n, h in enumerate(['80', '90'], 1)]
    pending = EscalationRecord(escalation_id='esc-1', task_id='nav-2', raised_by='manager')
    retry = calls_json(('delegate_task', {'task_type': 'navigation', 'robot': 'navigation_robot', 'hcw_id': '90',
                                          'reason': 'a human decided retry'}))
    with ScriptedServer({'manager': lambda body: text(retry)}) as server:
        brain = LLMManagerBrain(settings(server, manager_takeover_after=0), record.emitter('manager'), kb=False)
        waiting = ManagerObservation(patient=PATIENT, new=['nav-2 failed'], tasks=failed, escalations=[pending],
                                     staff_ids=['80', '90'])
        assert brain.decide(waiting) == []
        assert server.requests_of('manager') == [] and record.of('brain_error') == []
        decided = waiting.model_copy(update={'escalations': [pending.model_copy(update={'decision': 'retry'})],
                                             'new': ['esc-1 decided: retry']})
        actions = brain.decide(decided)
        bodies = server.requests_of('manager')
    assert [(a.task_type, a.hcw_id) for a in actions] == [(TaskType.NAVIGATION, '90')]
    assert len(bodies) == 1 and bodies[0]['response_format']['type'] == 'json_schema'
    assert [x['params']['response_format']['type'] for x in exchanges([_model(e) for e in record.events])] == \
        ['json_schema']


def test_manager_value_outside_a_closed_set_is_an_invalid_call_naming_the_allowed_values():
    """The schema keeps a constrained model inside the enums; an endpoint that ignores it is still caught."""
    record = Recorder()
    bad = calls_json(('delegate_task', {'task_type': 'signs of confusion and distress', 'robot': 'navigation_robot',
                                        'reason': 'cue'}))
    with ScriptedServer({'manager': lambda body: text(bad)}) as server:
        brain = LLMManagerBrain(settings(server, max_steps=2, manager_takeover_after=0),
                                record.emitter('manager'), kb=False)
        assert brain.decide(ManagerObservation(patient=PATIENT, new=['patient arrived'])) == []
    invalid = record.of('invalid_call')
    assert len(invalid) == 2 and {e['data']['category'] for e in invalid} == {'closed_set'}
    assert "'navigation', 'info_collection' or 'display'" in invalid[0]['reason']
    assert invalid[0]['data']['raw'] == json.dumps(json.loads(bad)['tool_calls'][0]['arguments'])


def test_robot_foreign_tool_unparsable_arguments_and_cut_reply_are_recorded_then_it_reports():
    record = Recorder()
    replies = iter([
        completion(calls_json(('fetch_care_team', {'room': 'ER-12'}))),                # the display robot's tool
        completion('{"tool_calls": [{"name": "read_badge_scan", "arguments": {"ro', 'length'),
        completion(calls_json(('read_badge_scan', {'room': 'ER-12'}),
                              ('lookup_staff_by_badge', {'badge_id': '$1.badge_id'}),
                              ('submit_report', {'status': 'success', 'summary': 'identified $2.name',
                                                 'data': {'name': '$2.name'}}))),
    ])
    with ScriptedServer({}) as server:
        server.add_fault('info_collection_robot', *[Fault(200, body=next(replies)) for _ in range(3)])
        brain = LLMRobotBrain('info_collection_robot', settings(server), record.emitter('info_collection_robot'),
                              kb=False)
        box = build_toolbox('info_collection_robot', World(), record.emitter('info_collection_robot'))
        task = TaskSpec(task_id='info-1', task_type=TaskType.INFO_COLLECTION, room='ER-12', hcw_id='90')
        report = brain.execute(task, box, lambda *_: None)
    assert report.status is TaskStatus.SUCCESS and report.data['name']
    refused = record.of('tool_refused')
    assert len(refused) == 1 and refused[0]['target'] == 'fetch_care_team'     # never reached a tool
    invalid = record.of('invalid_call')
    assert len(invalid) == 1 and 'cut at the token limit' in invalid[0]['reason']
    assert [e['data']['reply']['finish_reason'] for e in record.of('llm_reply')] == ['stop', 'length', 'stop']


def _model(event):
    from robot_team.contracts.events import TeamEventModel
    return TeamEventModel(stamp_s=0.0, wall_time=0.0, seq=1, actor=event['actor'], kind=event['kind'],
                          target=event['target'], summary=event['summary'], reason=event['reason'],
                          data=event['data'])


def test_robot_arguments_that_do_not_validate_are_an_invalid_call_and_a_failed_tool_result():
    record = Recorder()
    box = build_toolbox('navigation_robot', World(), record.emitter('navigation_robot'))
    result = box.call('navigate_to_pose', task_id='nav-1', x='far', y=2.0)
    assert not result.ok and 'x' in result.error
    invalid = record.of('invalid_call')
    assert len(invalid) == 1 and invalid[0]['target'] == 'navigate_to_pose'
    assert invalid[0]['data']['category'] == 'invalid_arguments' and invalid[0]['reason'] == result.error
    assert record.of('tool_result')[0]['data']['ok'] is False     # the journal and the record as before


def test_free_text_and_open_objects_are_bounded_so_a_reply_fits_its_token_limit():
    from robot_team.llm.decoding import report_tool
    from robot_team.llm.jsonschema_calls import FREE_TEXT_MAX_CHARS, FREE_VALUE
    schema = response_schema([report_tool(TaskType.NAVIGATION, [])], 1)
    args = schema['properties']['tool_calls']['items']['properties']['arguments']['properties']
    assert args['issue']['maxLength'] == FREE_TEXT_MAX_CHARS and args['status']['enum'] == ['failure']
    # the declared items only, each scalars or one level of them: no endless nesting, no key after key
    assert args['data']['additionalProperties'] is False
    assert all('maxLength' in item['anyOf'][0] for item in args['data']['properties'].values())
    nested = FREE_VALUE['anyOf'][-1]['additionalProperties']
    assert all(v.get('type') != 'object' for v in nested['anyOf'])
