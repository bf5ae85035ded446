"""Foxglove live: ``robot-team run --foxglove PORT`` serves the scene over WebSocket; the layout file is generated.

A WebSocket client (``websockets``) speaks Foxglove's protocol (subprotocol ``foxglove.sdk.v1``)
to the server of a running episode: it reads the channels advertised, subscribes, and decodes
the ``SceneUpdate`` it receives with the protobuf schema the server advertised (Foxglove's own).
"""

import base64
import json
import struct
import threading
import time
from pathlib import Path

import pytest

from robot_team.contracts.config import load_scenario
from robot_team.scene_foxglove import CASES_TOPIC, LAYOUT_FILE, LOG_TOPIC, SCENE_TOPIC, layout

ROOT = Path(__file__).resolve().parent.parent
websockets_client = pytest.importorskip('websockets.sync.client')
SUBPROTOCOL = 'foxglove.sdk.v1'


def test_the_layout_file_is_the_generated_one():
    committed = json.loads((ROOT / LAYOUT_FILE).read_text(encoding='utf-8'))
    assert committed == json.loads(layout().to_json()), 'run scripts/gen_foxglove_layout.py and commit the file'
    panels = json.dumps(committed)
    for topic in (SCENE_TOPIC, LOG_TOPIC, CASES_TOPIC):
        assert f'/{topic}' in panels


def decoder(channel):
    """The message class of an advertised protobuf channel, from the schema the server sent."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel['schema']))
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel['schemaName']))


def test_a_websocket_client_receives_the_live_scene_of_a_running_episode(domain_id, tmp_path):
    from robot_team.run.episode import Episode
    episode = Episode(load_scenario('onboarding'), tmp_path / 'run', domain_id=domain_id, foxglove_port=0)
    result = {}
    runner = threading.Thread(target=lambda: result.update(run=episode.run()), daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while episode.foxglove is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert episode.foxglove is not None, 'no Foxglove server'
    got = {'robots': set(), 'floor': 0, 'logs': [], 'rooms': set()}
    with websockets_client.connect(f'ws://127.0.0.1:{episode.foxglove.port}', subprotocols=[SUBPROTOCOL]) as ws:
        assert ws.subprotocol == SUBPROTOCOL
        channels = {}
        while len(channels) < 3:
            message = json.loads(ws.recv(timeout=10))
            if message['op'] == 'advertise':
                channels.update({c['topic']: c for c in message['channels']})
        scene, log, cases = (channels[f'/{t}'] for t in (SCENE_TOPIC, LOG_TOPIC, CASES_TOPIC))
        assert (scene['schemaName'], log['schemaName'], scene['encoding']) == (
            'foxglove.SceneUpdate', 'foxglove.Log', 'protobuf')
        subscriptions = {1: scene, 2: log, 3: cases}
        ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
            {'id': k, 'channelId': c['id']} for k, c in subscriptions.items()]}))
        decode = {1: decoder(scene), 2: decoder(log)}
        end = time.monotonic() + 60
        while time.monotonic() < end and not (len(got['robots']) == 3 and got['logs'] and got['rooms']):
            try:
                frame = ws.recv(timeout=1)
            except TimeoutError:
                continue
            if isinstance(frame, str):
                continue
            opcode, subscription, _stamp = struct.unpack_from('<BIQ', frame)
            assert opcode == 1
            payload = frame[13:]
            if subscription == 1:
                update = decode[1].FromString(payload)
                got['floor'] += any(e.id == 'floor' for e in update.entities)
                got['robots'] |= {e.id for e in update.entities if e.id.startswith('robot/')}
            elif subscription == 2:
                got['logs'].append(decode[2].FromString(payload))
            else:
                got['rooms'] |= {row['room'] for row in json.loads(payload)['cases']}
    runner.join(timeout=120)
    assert result['run'].report['outcome'] == 'success'
    assert got['floor'] >= 1
    assert got['robots'] == {'robot/navigation_robot', 'robot/info_collection_robot', 'robot/display_robot'}
    assert got['logs'] and all(m.name for m in got['logs'])
    assert got['rooms'] == {'ER-12'}      # the table of cases: the patient's
    assert result['run'].report['foxglove'] == {'host': '127.0.0.1', 'port': episode.foxglove.port}
