"""The simulator's floor: config/floors/ed_floor.yaml loads with every room, reader and dock it needs."""

import math

import pytest

from robot_team.contracts.config import ConfigError, load_staff_seed, share_dir
from robot_team.contracts.floor import Floor
from robot_team.contracts.names import Role
from robot_team.sim.world import OUTSIDE, WorldError, load_world

WORLD = 'ed_floor.yaml'
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
    assert {r.value for r in Role} <= set(world.docks)
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


def test_world_error_is_a_config_error():
    assert issubclass(WorldError, ConfigError)


def test_world_is_the_floor_description(world):
    # The simulator reads the robots' floor description, not the SDFormat world.
    assert world.path == share_dir() / 'config' / 'floors' / 'ed_floor.yaml'
    assert isinstance(world, Floor) and world.name == 'ed_floor'


def test_sdformat_is_refused_with_the_reason(tmp_path):
    with pytest.raises(WorldError, match=r"world file .*ed_floor\.sdf: the simulator reads a floor description, "
                       r"not SDFormat: expected a \.yaml file in config/floors/"):
        load_world(share_dir() / 'worlds' / 'ed_floor.sdf')
    with pytest.raises(WorldError, match=r'floor file .*nope\.yaml: cannot read'):
        load_world(tmp_path / 'nope.yaml')
