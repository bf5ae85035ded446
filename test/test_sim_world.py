"""The ED floor world: worlds/ed_floor.sdf loads with every room, reader and dock the team needs."""

import math

import pytest

from robot_team.config import ConfigError, load_staff_seed, share_dir
from robot_team.names import Robot
from robot_team.sim.world import OUTSIDE, WorldError, load_world

WORLD = share_dir() / 'worlds' / 'ed_floor.sdf'
REQUIRED_ROOMS = [f'ER-{i}' for i in range(1, 13)] + ['Triage', 'Nurses station', 'Staff lounge']


@pytest.fixture(scope='module')
def world():
    return load_world(WORLD)


def test_required_rooms_readers_and_docks(world):
    assert set(REQUIRED_ROOMS) <= set(world.rooms)
    staff = load_staff_seed(share_dir() / 'config' / 'staff.yaml')
    assert {m.area for m in staff.staff} <= set(world.rooms)
    assert set(staff.care_teams) <= set(world.rooms)
    for i in range(1, 13):
        reader = world.reader_for(f'ER-{i}')
        assert reader is not None, f'no badge reader at ER-{i}'
        door = world.room(f'ER-{i}').door
        assert math.hypot(reader.x - door.x, reader.y - door.y) < 3.0   # beside the door
    assert {r.value for r in Robot} <= set(world.docks)
    assert world.dock('navigation_robot').pose.y == pytest.approx(13.9)


def test_floor_size_and_walls(world):
    xmin, ymin, xmax, ymax = world.bounds
    assert 38 <= xmax - xmin <= 42 and 22 <= ymax - ymin <= 26
    assert len(world.walls) > 30
    # A vertical wall (yaw = 90 deg) between ER-1 and ER-2 at x = 15, honouring the model pose.
    vertical = [w for w in world.walls if abs(w.x - 15) < 1e-6 and abs(w.y - 3) < 1e-6]
    assert vertical and abs(abs(vertical[0].yaw) - math.pi / 2) < 1e-5
    corners = vertical[0].corners()
    assert corners[:, 1].max() - corners[:, 1].min() == pytest.approx(6.2, abs=1e-4)


def test_doors_face_their_rooms(world):
    for room in world.rooms.values():
        assert not room.contains(room.door.x, room.door.y), room.name
        gx, gy = room.door_gap
        assert room.distance(gx, gy) < 1e-6
        assert room.door_width >= 1.2
        assert room.contains(room.entry.x, room.entry.y)
        assert world.room_at(room.door.x, room.door.y).endswith('corridor'), room.name


def test_room_at_and_unknown_names(world):
    assert world.room_at(25.5, 12.0) == 'Staff lounge'
    assert world.room_at(20.0, 7.5) == 'Main corridor'
    assert world.room_at(1.5, 12.0) == 'West corridor'
    assert world.room_at(80.0, 80.0) == OUTSIDE
    with pytest.raises(WorldError, match="unknown room 'ER-99': expected one of .*ER-12"):
        world.room('ER-99')
    with pytest.raises(WorldError, match="no dock for robot 'r2d2'"):
        world.dock('r2d2')


def test_escort_distances_are_realistic(world):
    lounge = world.room('Staff lounge').center
    door = world.room('ER-12').door
    dock = world.dock('navigation_robot').pose
    assert math.dist(lounge, (door.x, door.y)) > 10
    assert math.dist((dock.x, dock.y), (door.x, door.y)) > 10


def _write(tmp_path, body, root_attrs='xmlns:robot_team="https://robot-team.dev/sdf"'):
    path = tmp_path / 'bad.sdf'
    path.write_text(f'<?xml version="1.0"?><sdf version="1.9" {root_attrs}>'
                    f'<world name="w">{body}</world></sdf>')
    return path


WALL = ('<model name="wall"><static>true</static><pose>1 2 0 0 0 0</pose><link name="l">'
        '<collision name="c"><geometry><box><size>4 0.2 2</size></box></geometry></collision></link></model>')
ROOM = ('<robot_team:room name="A" kind="patient_room"><robot_team:center>0 0</robot_team:center>'
        '<robot_team:size>4 4</robot_team:size><robot_team:door>0 -3 1.5708</robot_team:door>'
        '</robot_team:room>')


def test_world_error_is_a_config_error():
    assert issubclass(WorldError, ConfigError)


def test_malformed_files_name_the_problem(tmp_path):
    with pytest.raises(WorldError, match=r'nope\.sdf: cannot read'):
        load_world(tmp_path / 'nope.sdf')
    path = tmp_path / 'bad.sdf'
    path.write_text('<sdf><world>')
    with pytest.raises(WorldError, match=r'bad\.sdf: not valid XML'):
        load_world(path)
    path.write_text('<xml/>')
    with pytest.raises(WorldError, match='expected an <sdf> root'):
        load_world(path)
    with pytest.raises(WorldError, match='expected walls'):
        load_world(_write(tmp_path, ROOM))
    with pytest.raises(WorldError, match="no <robot_team:room> elements"):
        load_world(_write(tmp_path, WALL))
    with pytest.raises(WorldError, match=r"room name='A'>/center: expected 2 numbers 'x y', got 'zero 0'"):
        load_world(_write(tmp_path, WALL + ROOM.replace('>0 0<', '>zero 0<')))
    with pytest.raises(WorldError, match=r"room name='A'>: missing <robot_team:door>"):
        no_door = ROOM.replace('<robot_team:door>0 -3 1.5708</robot_team:door>', '')
        load_world(_write(tmp_path, WALL + no_door))
    with pytest.raises(WorldError, match=r"door: expected an approach pose outside the room, facing it"):
        load_world(_write(tmp_path, WALL + ROOM.replace('0 -3 1.5708', '0 -3 -1.5708')))
    with pytest.raises(WorldError, match=r"model 'wall'/pose: expected 6 numbers"):
        load_world(_write(tmp_path, WALL.replace('1 2 0 0 0 0', '1 2 0') + ROOM))
    with pytest.raises(WorldError, match=r"collision 'c'/geometry/box/size: expected 3 numbers"):
        load_world(_write(tmp_path, WALL.replace('4 0.2 2', '4 0.2') + ROOM))
    reader = ('<robot_team:badge_reader id="r" room="B"><robot_team:position>0 0</robot_team:position>'
              '<robot_team:radius>1</robot_team:radius></robot_team:badge_reader>')
    with pytest.raises(WorldError, match=r"badge_reader id='r'>: room 'B' is not a <robot_team:room>"):
        load_world(_write(tmp_path, WALL + ROOM + reader))
    # Without the namespace declaration, annotations are not robot_team's: the file has no rooms.
    with pytest.raises(WorldError):
        load_world(_write(tmp_path, WALL + ROOM, root_attrs='xmlns:robot_team="https://example.com/other"'))


def test_model_link_and_collision_poses_compose(tmp_path):
    wall = ('<model name="m"><pose degrees="true">10 0 0 0 0 90</pose><link name="l"><pose>2 0 1 0 0 0</pose>'
            '<collision name="c"><pose>0 1 0 0 0 0</pose><geometry><box><size>4 0.2 2</size></box></geometry>'
            '</collision></link></model>')
    world = load_world(_write(tmp_path, wall + ROOM))
    (w,) = world.walls
    # Model at (10, 0) turned 90 deg: link x=2 -> +y, collision y=1 -> -x.
    assert (w.x, w.y) == pytest.approx((9.0, 2.0))
    assert w.yaw == pytest.approx(math.pi / 2)
