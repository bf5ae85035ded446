"""A run's scene in its record: ``scene.jsonl`` and Foxglove's ``SceneUpdate`` and ``Log`` in ``events.mcap``.

One episode of ``unknown_badge`` (in-process, protocol brains) for the module: HCW #90 follows
the navigation robot to ER-12, their badge reads as an unknown ID, info collection fails, the
manager escalates (esc-1 on info-1) and the scripted operator aborts. The
MCAP is read with ``mcap``'s reader and the Foxglove channels decoded with Foxglove's own
protobuf schemas (stored in the file; ``mcap-protobuf-support``); the truth they are checked
against is what other nodes recorded: the motion simulator's ``goal_succeeded`` poses and the
hospital's ``hcw_following`` / ``hcw_arrived`` events.
"""

import math
import os

import pytest

from robot_team.contracts.config import load_scenario
from robot_team.contracts.floor import load_floor
from robot_team.recorder import read_jsonl, read_mcap_events
from robot_team.contracts.scene import SCENE_FILE, SceneTimeline, read_samples
from ros_helpers import release_domain_ids, reserve_domain_id

mcap_reader = pytest.importorskip('mcap.reader')
mcap_protobuf = pytest.importorskip('mcap_protobuf.decoder')

NAV = 'navigation_robot'


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    from robot_team.run.episode import run_episode
    out = tmp_path_factory.mktemp('scene_run')
    domain = reserve_domain_id()
    try:
        result = run_episode('unknown_badge', out, domain_id=domain)
    finally:
        release_domain_ids(domain)
    assert result.report['outcome'] == 'escalated'
    messages = {'/team/scene': [], '/team/log': []}
    with open(out / 'events.mcap', 'rb') as f:
        reader = mcap_reader.make_reader(f, decoder_factories=[mcap_protobuf.DecoderFactory()])
        for schema, channel, message, proto in reader.iter_decoded_messages(topics=list(messages)):
            messages[channel.topic].append((schema.name, message.log_time, proto))
    return {'out': out, 'events': read_jsonl(out / 'events.jsonl'), 'samples': read_samples(out / SCENE_FILE),
            'scene': messages['/team/scene'], 'log': messages['/team/log']}


def sim(events, what):
    return [e for e in events if e.kind == 'sim' and e.data.get('what') == what]


def robot_poses(scene_messages):
    """(t, robot, x, y, yaw-from-metadata) of every robot entity in the SceneUpdates, in log order."""
    poses = []
    for _, _, update in scene_messages:
        for entity in update.entities:
            if entity.id.startswith('robot/'):
                meta = {kv.key: kv.value for kv in entity.metadata}
                p = entity.cylinders[0].pose.position
                poses.append((entity.timestamp.seconds + entity.timestamp.nanos * 1e-9, entity.id[6:], p.x, p.y,
                              float(meta['yaw'])))
    return poses


def test_the_mcap_holds_the_floor_and_every_event_in_foxglove_schemas(run):
    events = run['events']
    assert {name for name, _, _ in run['scene']} == {'foxglove.SceneUpdate'}
    assert {name for name, _, _ in run['log']} == {'foxglove.Log'}
    # the events channel is unchanged beside them, and each event is a Log too, named after its actor
    assert len(read_mcap_events(run['out'] / 'events.mcap')) == len(events) == len(run['log'])
    assert sorted(m.name for _, _, m in run['log']) == sorted(e.actor for e in events)
    escalation_logs = [m for _, _, m in run['log'] if m.message.startswith('[escalation]')]
    assert escalation_logs and all(m.level == 3 for m in escalation_logs)     # WARNING
    # the floor, once, with a door per room
    floors = [e for _, _, u in run['scene'] for e in u.entities if e.id == 'floor']
    assert len(floors) == 1
    floor = load_floor(load_scenario('unknown_badge').floor_path)
    assert len(floors[0].cubes) == len(floor.corridors) + 2 * len(floor.rooms) + len(floor.walls) + len(floor.docks)
    # the scene plays in the events' wall time (log time never runs ahead of the run)
    walls = [t for _, t, _ in run['scene']]
    assert min(e.wall_time for e in events) * 1e9 - 1e9 <= min(walls) <= max(walls) <= max(
        e.wall_time for e in events) * 1e9 + 1


def test_every_robot_is_at_each_recorded_pose_and_where_the_simulator_stopped_it(run):
    poses = robot_poses(run['scene'])
    robots = {r for _, r, *_ in poses}
    assert robots == {NAV, 'info_collection_robot', 'display_robot'}
    # each kept sample is a SceneUpdate of that robot at that sim time and pose
    by_key = {(round(t, 6), r): (x, y, yaw) for t, r, x, y, yaw in poses}
    samples = [s for s in run['samples'] if s.what == 'robot']
    assert len(samples) > 20
    for s in samples:
        x, y, yaw = by_key[(round(s.t, 6), s.name)]
        assert (x, y, yaw) == pytest.approx((s.values['x'], s.values['y'], s.values['yaw']), abs=1e-6)
    # and where the motion simulator says a goal ended, the scene shows the robot there
    goals = sim(run['events'], 'goal_succeeded')
    assert goals
    for goal in goals:
        t, robot = goal.data['sim_time_s'], goal.data['robot']
        seen = [p for p in poses if p[1] == robot and p[0] <= t + 0.5]
        assert seen, f'{robot} never placed before {t}'
        _, _, x, y, _ = seen[-1]
        assert math.hypot(x - goal.data['x'], y - goal.data['y']) < 0.3, (robot, t, (x, y), goal.data)


def test_the_escorted_hcw_follows_the_robot_and_the_escalation_is_marked_until_decided(run):
    events = run['events']
    [following] = [e for e in sim(events, 'hcw_following') if e.data['hcw_id'] == '90']
    [arrived] = sim(events, 'hcw_arrived')
    hcw = [s for s in run['samples'] if s.what == 'hcw' and s.name == '90']
    follows = [s for s in hcw if s.values['state'] == 'following']
    assert follows and all(s.values['robot'] == NAV for s in follows)
    assert following.data['sim_time_s'] - 0.5 <= follows[0].t and follows[-1].t <= arrived.data['sim_time_s'] + 0.5
    timeline = SceneTimeline(None, run['samples'], events)
    mid = timeline.at((follows[0].t + follows[-1].t) / 2).snapshot()
    assert mid.hcws['90'].following == NAV
    robot, person = mid.robots[NAV], mid.hcws['90']
    assert math.hypot(robot.x - person.x, robot.y - person.y) < 4.0     # walking behind it
    end = timeline.at(arrived.data['sim_time_s'] + 1.0).snapshot()
    assert end.hcws['90'].area == 'ER-12' and end.hcws['90'].following == ''
    assert mid.cases['P-0004'].room == 'ER-12' and mid.cases['P-0004'].esi_level == 2
    # the escalation: an entity on ER-12 and the navigation robot while open, deleted when resolved
    marked = [(t, e) for _, t, u in run['scene'] for e in u.entities if e.id == 'escalation/esc-1']
    deleted = [t for _, t, u in run['scene'] for d in u.deletions if d.id == 'escalation/esc-1']
    assert marked and deleted and max(t for t, _ in marked) <= min(deleted)
    meta = {kv.key: kv.value for kv in marked[0][1].metadata}
    assert (meta['room'], meta['robot'], meta['task_id']) == ('ER-12', 'info_collection_robot', 'info-1')


def test_replay_shows_the_run_at_any_sim_time_and_the_command_renders_it(run, tmp_path):
    os.environ.setdefault('QT_QPA_PLATFORM', 'offscreen')
    qt = pytest.importorskip('robot_team.console.qt', reason='no Qt binding (pip install -r requirements/gui.txt)')
    from typer.testing import CliRunner

    from robot_team.cli import app as cli
    from robot_team.console.replay import STEP_S, ReplayWidget
    app = qt.QtWidgets.QApplication.instance() or qt.QtWidgets.QApplication(['test'])
    events = run['events']
    follows = [s for s in run['samples'] if s.what == 'hcw' and s.values['state'] == 'following']
    t = round(follows[len(follows) // 2].t, 1)         # mid-escort, on the slider's grid
    widget = ReplayWidget(SceneTimeline(load_floor(load_scenario('unknown_badge').floor_path), run['samples'],
                                        events), events, 'test')
    try:
        widget.slider.setValue(round(t / STEP_S))        # as a person drags the slider
        app.processEvents()
        assert widget.t == pytest.approx(t)
        recorded = [s for s in run['samples'] if s.what == 'robot' and s.name == NAV and s.t <= t + 1e-9][-1]
        assert widget.floor_map.entity_position(f'robot/{NAV}') == pytest.approx(
            (recorded.values['x'], recorded.values['y']), abs=1e-6)
        assert f'-> {NAV}' in widget.floor_map.entity_label('hcw/90')
        latest = max((e for e in events if e.stamp_s <= t), key=lambda e: (e.stamp_s, e.wall_time))
        assert widget.event_list.item(0).text().endswith(latest.summary)
        widget.show_time(1e9)                             # past the end: the end
        assert widget.t == pytest.approx(round(SceneTimeline(None, run['samples'], events).end_s, 1))
        assert 'escalation/esc-1' not in widget.floor_map.entity_ids()     # decided by then
    finally:
        widget.close()
        widget.deleteLater()
        app.processEvents()
    png = tmp_path / 'replay.png'
    result = CliRunner().invoke(cli, ['replay', str(run['out']), '--at', str(t), '--screenshot', str(png)])
    assert result.exit_code == 0, result.output
    assert png.stat().st_size > 10_000
    missing = CliRunner().invoke(cli, ['replay', str(tmp_path / 'nowhere')])
    assert missing.exit_code == 1 and 'error' in missing.output
