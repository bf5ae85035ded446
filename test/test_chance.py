"""The chance baseline: every reply the random chooser gives validates against its request's schema.

The sampler is checked with a real JSON Schema validator (``jsonschema``, draft 2020-12) over many
seeds (Hypothesis) and over the schemas the team really offers (built by ``decoding`` and
``toolschema`` for a few states) plus synthetic ones; the endpoint answers the real ``openai``
client over loopback; one short real-graph episode runs on it (``brain='random'``).
"""

import json
import random
import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from team_harness import World, build_toolbox
from typer.testing import CliRunner

from robot_team.brains.base import ManagerObservation, PatientInfo, TaskRecord, TaskSpec
from robot_team.catalog import TASK_OWNER, Tool
from robot_team.contracts.decisions import DECISION_KINDS
from robot_team.contracts.escalation_model import EscalationRecord
from robot_team.llm.chance import (
    ChancePolicy, ChanceServer, SchemaSampleError, chance_model_name, chance_reply, chance_settings, check_seed,
    harvest, sample_value)
from robot_team.llm.decoding import manager_offer, robot_offer
from robot_team.llm.jsonschema_calls import response_format, response_schema
from robot_team.contracts.names import Role
from robot_team.contracts.reports import TaskType

STAFF = ['80', '90', '41']
MESSAGES = [
    {'role': 'system', 'content': 'You are the navigation robot. Reply with "tool_calls". Room `ER-12`.'},
    {'role': 'user', 'content': 'Task nav-1: escort HCW #80 to ER-12 (patient P-0001).'},
    {'role': 'user', 'content': 'Results:\nlocate_staff: {"staff": [{"hcw_id": "80", "area": "ER-3", "x": 12.5, '
                                '"y": 19.5, "availability": "available"}]}'},
]


def _observation(*tasks, escalations=()):
    return ManagerObservation(patient=PatientInfo(patient_id='P-1', room='ER-12', assigned_hcw_id='80'),
                              tasks=list(tasks), escalations=list(escalations), staff_ids=STAFF)


def _task(task_id, kind, state, hcw='90'):
    return TaskRecord(task_id=task_id, task_type=kind, robot=TASK_OWNER[kind], hcw_id=hcw, state=state,
                      issue='' if state != 'failure' else 'went wrong')


@lru_cache(maxsize=1)
def real_offers() -> tuple[tuple[str, tuple], ...]:
    """(name, OpenAI tool definitions) of what the team offers in a few states, each decoding and tool-call mode."""
    nav, info, display = TaskType.NAVIGATION, TaskType.INFO_COLLECTION, TaskType.DISPLAY
    states = {
        'start': _observation(),
        'nav failed': _observation(_task('nav-1', nav, 'failure', '80')),
        'nav done, info failed': _observation(_task('nav-1', nav, 'success'), _task('info-1', info, 'failure')),
        'all done': _observation(_task('nav-1', nav, 'success'), _task('info-1', info, 'success'),
                                 _task('display-1', display, 'success')),
        'escalate only': _observation(*[_task(f'nav-{k}', nav, 'failure', h) for k, h in enumerate(STAFF, 1)]),
        'aborted': _observation(_task('nav-1', nav, 'failure', '80'),
                                escalations=[EscalationRecord(escalation_id='esc-1', task_id='nav-1',
                                                              decision='abort')]),
    }
    offers = []
    for name, obs in states.items():
        for variants in (True, False):
            for decoding in ('constrained', 'free'):
                offer = manager_offer(obs, STAFF, decoding=decoding, variants=variants)
                offers.append((f'manager {name} {decoding} variants={variants}', tuple(offer.tools)))
    world = World()
    box = build_toolbox(Role.NAVIGATION.value, world)
    task = TaskSpec(task_id='nav-1', task_type=nav, room='ER-12', hcw_id='90')
    offers.append(('navigation start one call', tuple(robot_offer(box, task, one_call=True).tools)))
    assert box.call(Tool.LOCATE_STAFF.value, task_id='nav-1', hcw_ids=['90']).ok
    assert not box.call(Tool.ROOM_DOOR_POSE.value, task_id='nav-1', room='ER-99').ok   # grounds a failure
    for variants in (True, False):
        offer = robot_offer(box, task, variants=variants)
        offers.append((f'navigation located variants={variants}', tuple(offer.tools)))
    offers.append(('navigation last', tuple(robot_offer(box, task, last=True).tools)))
    offers.append(('navigation free', tuple(robot_offer(box, task, decoding='free').tools)))
    ibox = build_toolbox(Role.INFO_COLLECTION.value, world)
    itask = TaskSpec(task_id='info-1', task_type=info, room='ER-12', hcw_id='90')
    scan = ibox.call(Tool.READ_BADGE_SCAN.value, task_id='info-1', room='ER-12')
    assert ibox.call(Tool.LOOKUP_STAFF_BY_BADGE.value, task_id='info-1', badge_id=scan.output['badge_id']).ok
    assert not ibox.call(Tool.RECORD_CHECK_IN.value, task_id='info-1').ok
    offers.append(('info success or failure', tuple(robot_offer(ibox, itask).tools)))
    dbox = build_toolbox(Role.DISPLAY.value, world)
    dtask = TaskSpec(task_id='display-1', task_type=display, room='ER-12', hcw_id='90')
    offers.append(('display start', tuple(robot_offer(dbox, dtask).tools)))
    return tuple(offers)


@lru_cache(maxsize=1)
def real_schemas() -> tuple[tuple[str, dict], ...]:
    """The JSON schemas of those offers: the json_schema union (any number of calls, or one), each tool's parameters."""
    out = []
    for name, tools in real_offers():
        if not tools:
            continue
        out.append((f'{name} json_schema', response_schema(list(tools))))
        out.append((f'{name} json_schema one call', response_schema(list(tools), 1)))
        for tool in tools:
            out.append((f"{name} {tool['function']['name']} parameters", tool['function']['parameters']))
    return tuple(out)


SYNTHETIC = [
    {'type': ['string', 'null'], 'minLength': 3, 'maxLength': 5},
    {'type': 'integer', 'exclusiveMinimum': 0, 'exclusiveMaximum': 3},
    {'type': 'integer', 'minimum': -7, 'maximum': 40, 'multipleOf': 5},
    {'type': 'number', 'exclusiveMinimum': 12.5, 'maximum': 12.6},
    {'type': 'number', 'minimum': 1000},
    {'type': 'number', 'exclusiveMaximum': -1000},
    {'$defs': {'pose': {'type': 'object', 'properties': {'x': {'type': 'number'}, 'y': {'type': 'number'}},
                        'required': ['x', 'y'], 'additionalProperties': False}},
     'type': 'array', 'items': {'$ref': '#/$defs/pose'}, 'minItems': 1, 'maxItems': 2},
    {'oneOf': [{'type': 'boolean'}, {'type': 'null'}, {'const': 'fixed'}]},
    {'allOf': [{'type': 'object', 'properties': {'a': {'enum': [1, 2]}}, 'required': ['a']},
               {'properties': {'b': {'type': 'string', 'maxLength': 1}}, 'required': ['b']}]},
    {'type': 'array', 'prefixItems': [{'const': 'first'}, {'type': 'integer'}], 'items': False, 'minItems': 1},
    {'type': 'array', 'items': {'enum': ['a', 'b', 'c', 'd', 'e']}, 'uniqueItems': True, 'minItems': 2},
    {'type': 'object', 'additionalProperties': {'type': 'integer'}, 'minProperties': 2, 'maxProperties': 4},
    {'type': 'object', 'properties': {'k': {'type': 'string'}}, 'required': ['k', 'extra'],
     'additionalProperties': {'type': 'boolean'}},
    {'type': 'string', 'pattern': r'^\$[0-9]+(\.[A-Za-z0-9_]+)*$'},
    {'type': 'string', 'pattern': r'ER-\d+'},
    {'anyOf': [False, {'type': 'string', 'enum': []}, {'type': 'null'}]},
    {},
    True,
]

SEEDS = st.integers(min_value=0, max_value=2 ** 64)
EXTRA_TEXT = st.lists(st.text(max_size=60), max_size=3)


def _messages(extra):
    return MESSAGES + [{'role': 'user', 'content': text} for text in extra]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=SEEDS, index=st.integers(min_value=0), extra=EXTRA_TEXT)
def test_every_sample_of_a_schema_the_team_offers_is_valid(seed, index, extra):
    schemas = real_schemas()
    name, schema = schemas[index % len(schemas)]
    value = sample_value(schema, random.Random(seed), harvest(_messages(extra)))
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=str)
    assert not errors, f'{name}: {json.dumps(value)[:300]}: {errors[0].message}'


@settings(max_examples=300, deadline=None)
@given(seed=SEEDS, index=st.integers(min_value=0, max_value=len(SYNTHETIC) - 1), extra=EXTRA_TEXT)
def test_every_sample_of_a_synthetic_schema_is_valid(seed, index, extra):
    schema = SYNTHETIC[index]
    value = sample_value(schema, random.Random(seed), harvest(_messages(extra)))
    Draft202012Validator.check_schema(schema if isinstance(schema, dict) else {})
    errors = list(Draft202012Validator(schema).iter_errors(value))
    assert not errors, f'{json.dumps(schema)}: {json.dumps(value)}: {errors[0].message}'


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS)
def test_a_reply_is_the_same_for_the_same_seed_caller_and_request(seed):
    offers = real_offers()
    body = {'model': 'x', 'messages': MESSAGES, 'response_format': response_format(list(offers[0][1]))}
    policy = ChancePolicy(seed, 'manager')
    first = [policy(body) for _ in range(3)]
    assert policy.replies == 3 and first[0] == chance_reply(body, policy.rng(0))
    again = ChancePolicy(seed, 'manager')
    assert [again(body) for _ in range(3)] == first   # reply k of a caller depends on (seed, caller, k, request)


def test_the_chooser_spreads_its_choices_and_copies_from_the_messages():
    tools = dict(real_offers())['manager nav failed constrained variants=True']
    body = {'messages': MESSAGES, 'response_format': response_format(list(tools), 1)}
    replies = [json.loads(chance_reply(body, random.Random(k))['content']) for k in range(300)]
    calls = [r['tool_calls'][0] for r in replies if r['tool_calls']]
    assert {c['name'] for c in calls} == {t['function']['name'] for t in tools}   # every offered tool comes up
    assert 0.3 < len(calls) / len(replies) < 0.7      # one call or none (an empty list: wait), uniformly
    hcws = [c['arguments']['hcw_id'] for c in calls if c['name'] == 'delegate_task']
    assert set(hcws) == {'90', '41'}                  # the enum, both values
    numbers = [sample_value({'type': 'number', 'minimum': 0, 'maximum': 40}, random.Random(k), harvest(MESSAGES))
               for k in range(200)]
    assert 60 < sum(n in (12.5, 19.5, 12, 1, 80) for n in numbers) < 140   # about half copied from the messages
    reason = [sample_value({'type': 'string', 'maxLength': 300}, random.Random(k), harvest(MESSAGES))
              for k in range(200)]
    assert {'ER-12', '80', 'P-0001', 'available'} <= set(reason)


def test_harvest_keeps_ids_rooms_quotes_and_numbers_in_order():
    found = harvest(MESSAGES)
    assert found.strings[:3] == ('tool_calls', 'ER-12', 'nav-1')
    assert {'#80', '80', 'P-0001', 'hcw_id', 'ER-3', 'available', 'escort'} <= set(found.strings)
    assert 'navigation' not in found.strings          # system prompt words are not candidates (quotes and IDs are)
    assert {12.5, 19.5, 80} <= set(found.numbers) and {'x', 'y', 'staff'} <= set(found.keys)


def test_a_schema_the_sampler_cannot_honour_is_refused_naming_the_keyword():
    for schema, words in (({'not': {'type': 'null'}}, "'not'"),
                          ({'type': 'integer', 'minimum': 1, 'maximum': 0}, 'bounds'),
                          ({'type': 'string', 'pattern': '^zzz$'}, "pattern '^zzz$'"),
                          ({'$ref': '#/$defs/missing'}, 'points at nothing'),
                          ({'type': 'object', 'required': ['a'], 'additionalProperties': False}, "'a'")):
        with pytest.raises(SchemaSampleError, match=re.escape(words)):
            sample_value(schema, random.Random(0))
    for bad in (-1, 1.5, True, '3'):
        with pytest.raises(ValueError, match='expected an integer >= 0'):
            check_seed(bad, '--seed')
    assert chance_model_name(7) == 'chance-seed-7'


def test_the_endpoint_answers_the_real_openai_client_over_loopback():
    openai = pytest.importorskip('openai')
    tools = list(dict(real_offers())['manager start constrained variants=False'])
    schema_format = response_format(list(dict(real_offers())['navigation located variants=True']))
    with ChanceServer(seed=5) as server:
        assert server.base_url.startswith('http://127.0.0.1:') and server.model == 'chance-seed-5'
        clients = {robot: openai.OpenAI(base_url=server.base_url, api_key='none', max_retries=0,
                                        default_headers={'X-Robot-Team-Robot': robot})
                   for robot in ('manager', 'navigation_robot')}
        native = clients['manager'].chat.completions.create(model=server.model, messages=MESSAGES, tools=tools)
        call = native.choices[0].message.tool_calls[0]
        offered = next(t for t in tools if t['function']['name'] == call.function.name)
        Draft202012Validator(offered['function']['parameters']).validate(json.loads(call.function.arguments))
        assert native.model == 'chance-seed-5' and native.choices[0].finish_reason == 'tool_calls'
        replies = [clients['navigation_robot'].chat.completions.create(
            model=server.model, messages=MESSAGES, response_format=schema_format) for _ in range(3)]
        for reply in replies:
            Draft202012Validator(schema_format['json_schema']['schema']).validate(
                json.loads(reply.choices[0].message.content))
        assert server.replies() == {'manager': 1, 'navigation_robot': 3}
        text = clients['manager'].chat.completions.create(model=server.model, messages=MESSAGES)
        assert text.choices[0].message.content             # no schema: a text reply
        with pytest.raises(openai.InternalServerError, match="keyword 'not' is not supported"):
            clients['manager'].chat.completions.create(model=server.model, messages=MESSAGES, response_format={
                'type': 'json_schema', 'json_schema': {'name': 'x', 'schema': {'not': {}}}})
    # another endpoint of the same seed replays each caller's stream, whatever the interleaving
    with ChanceServer(seed=5) as again:
        client = openai.OpenAI(base_url=again.base_url, api_key='none', max_retries=0,
                               default_headers={'X-Robot-Team-Robot': 'navigation_robot'})
        replayed = [client.chat.completions.create(model=again.model, messages=MESSAGES,
                                                   response_format=schema_format) for _ in range(3)]
    assert [r.choices[0].message.content for r in replayed] == [r.choices[0].message.content for r in replies]
    settings_ = chance_settings('http://127.0.0.1:9/v1', model='chance-seed-5').for_robot('manager')
    assert (settings_.model, settings_.tool_calls, settings_.base_url, settings_.price.cost(10 ** 6, 10 ** 6)) == (
        'chance-seed-5', 'json_schema', 'http://127.0.0.1:9/v1', 0.0)


def test_bad_brain_or_seed_is_bad_input(tmp_path):
    from robot_team.cli import app
    runner = CliRunner()
    for args, words in ((['--brain', 'nope'], "--brain 'nope' is not a brain: expected one of protocol, openai, "
                                              'local, random'),
                        (['--brain', 'protocol', '--seed', '3'], 'use it with --brain random'),
                        (['--brain', 'random', '--seed', '-1'], "Invalid value for '--seed'")):
        result = runner.invoke(app, ['run', '--out', str(tmp_path / 'run'), '--quiet', *args])
        assert result.exit_code == 2, result.output
        assert words in ' '.join(result.output.replace('│', ' ').split()), result.output
    result = runner.invoke(app, ['eval', '--brain', 'random', '--chance', '1', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and 'the random chooser is the chance baseline itself' in ' '.join(
        result.output.split())
    result = runner.invoke(app, ['eval', '--brain', 'nope', '--out', str(tmp_path), '--quiet'])
    assert result.exit_code == 2 and "--brain 'nope' is not a brain" in result.output
    assert not (tmp_path / 'run').exists() and not list(tmp_path.glob('*/trial-*'))


def test_a_random_team_runs_a_real_episode_to_a_report(tmp_path, domain_id):
    pytest.importorskip('rclpy')
    from robot_team.contracts.config import load_scenario
    from robot_team.run.episode import run_episode
    short = load_scenario('all_available').model_copy(update={'time_limit_s': 400.0})   # a short episode
    result = run_episode(short, tmp_path / 'run', brain='random', seed=4, domain_id=domain_id,
                         brain_options={'kb': False})
    report = json.loads((tmp_path / 'run' / 'report.json').read_text())
    assert report['outcome'] == result.report['outcome'] and report['outcome']     # not asserted: guards change
    assert report['chance_llm']['seed'] == 4 and report['chance_llm']['model'] == 'chance-seed-4'
    events = [json.loads(line) for line in (tmp_path / 'run' / 'events.jsonl').read_text().splitlines()]
    decisions = [e for e in events if e['kind'] in DECISION_KINDS and e['data'].get('source') == 'llm']
    replies = [e for e in events if e['kind'] == 'llm_reply']
    assert decisions and replies and report['decisions']['llm'] == len(decisions)
    assert {e['data']['model'] for e in events if e['kind'] in ('llm_request', 'llm_reply')} == {'chance-seed-4'}
    assert sum(report['chance_llm']['replies'].values()) == len(replies)
    unusable = [e for e in events if e['kind'] == 'invalid_call'
                and e['data'].get('category') in ('invalid_reply', 'unparsable_arguments')]
    assert not unusable, unusable[0]      # every reply was within its request's schema
    # no HTTP error (a request cancelled by a takeover or the episode's end is not one)
    assert not [e for e in events if e['kind'] == 'llm_error' and not e['data'].get('cancelled')]


def test_a_client_that_hangs_up_mid_request_leaves_no_traceback(capfd):
    # The team's client cancels a request its step no longer needs (recorded on its side); the
    # endpoint's reset connection used to print a socketserver traceback in every benchmark log.
    import socket
    import struct
    import time

    from robot_team.llm.fakeserver import ScriptedServer
    with ScriptedServer() as server:
        client = socket.create_connection(server._httpd.server_address[:2])
        client.sendall(b'POST /v1/chat/completions HTTP/1.1\r\nHost: loopback\r\n')   # headers never end
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))   # close = reset
        client.close()
        time.sleep(0.5)
    assert 'Traceback' not in capfd.readouterr().err
