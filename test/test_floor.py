"""The floor description: it loads, the SDFormat world is generated from it, and bad input is named."""

import copy
import hashlib
import importlib.util
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from robot_team.contracts.config import ConfigError, load_scenario, share_dir
from robot_team.contracts.floor import FloorError, FloorSpec, floor_path, load_floor, wall_segments
from robot_team.contracts.nav2_codes import ComputePathToPoseError, nav2_error_name
from robot_team.sim.grid import OCCUPIED, PlanningError
from robot_team.sim.planner import OccupancyGrid

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ROOT / 'config' / 'floors' / 'ed_floor.yaml'


@pytest.fixture(scope='module')
def floor():
    return load_floor('ed_floor.yaml')


def _generator():
    spec = importlib.util.spec_from_file_location('gen_ed_floor', ROOT / 'scripts' / 'gen_ed_floor.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_description_loads(floor):
    assert floor_path('ed_floor') == floor_path('ed_floor.yaml') == share_dir() / 'config' / 'floors' / 'ed_floor.yaml'
    assert floor.path == FLOOR and floor.name == 'ed_floor'
    assert len(floor.rooms) == 18 and [c.name for c in floor.corridors] == [
        'Main corridor', 'North corridor', 'West corridor', 'East corridor']
    assert len(floor.readers) == 12 and set(floor.docks) == {   # a fleet's second robots too (<role>_2)
        'navigation_robot', 'info_collection_robot', 'display_robot', 'manager', 'navigation_robot_2',
        'info_collection_robot_2', 'display_robot_2'}
    assert floor.bounds == pytest.approx((-0.1, -0.1, 40.1, 24.1))   # outer walls' centre lines +- thickness / 2
    assert floor.wall_height == 2.5 and len(floor.walls) == 43


def test_scenarios_name_the_floor():
    scenario = load_scenario('onboarding')
    assert scenario.floor == 'ed_floor.yaml' and scenario.floor_path == FLOOR
    assert scenario.world_path == share_dir() / 'worlds' / 'ed_floor.sdf'   # Gazebo's world stays


# --- same floor as before: the values the simulator used with the SDF's annotations ---------------

def test_rooms_doors_readers_and_docks_are_todays(floor):
    er12 = floor.room('ER-12')
    assert (er12.center, er12.size, er12.door_width) == ((12.5, 21.0), (5.0, 6.0), 1.6)
    assert (er12.door.x, er12.door.y, er12.door.yaw) == pytest.approx((12.5, 16.5, math.pi / 2))
    assert er12.door_gap == pytest.approx((12.5, 18.0))
    assert (er12.entry.x, er12.entry.y) == pytest.approx((12.5, 19.5))
    triage = floor.room('Triage')
    assert (triage.kind, triage.door_width) == ('triage', 2.0)
    assert (triage.door.x, triage.door.y, triage.door.yaw) == pytest.approx((5.0, 7.5, -math.pi / 2))
    lounge = floor.room('Staff lounge')
    assert (lounge.door.x, lounge.door.y, lounge.door_width) == pytest.approx((25.5, 7.5, 1.2))
    reader = floor.reader_for('ER-1')
    assert (reader.reader_id, reader.x, reader.y, reader.radius) == ('er_1_door', 13.45, 6.15, 1.2)
    assert floor.reader_for('Triage') is None
    dock = floor.dock('navigation_robot').pose
    assert (dock.x, dock.y, dock.yaw) == (30.4, 13.9, -1.570796)
    assert floor.room_at(12.5, 16.5) == 'North corridor' and floor.room_at(12.5, 20.0) == 'ER-12'


def test_grid_is_the_one_built_before(floor):
    # Numbers of the grid the simulator built from the SDF world before the floor description
    # (commit 15378cb): shape, origin, counts and the SHA-256 of its cells, open and with two
    # doors closed.
    grid = OccupancyGrid.from_world(floor)
    assert (grid.height, grid.width) == (242, 402) and tuple(grid.origin) == pytest.approx((-0.1, -0.1))
    assert int((grid.data == OCCUPIED).sum()) == 6980 and int(grid.blocked.sum()) == 23840
    assert hashlib.sha256(grid.data.tobytes()).hexdigest() == (
        'a7b2228405a239c7c51367e011530c05119f4d462742e50f6334fa662ec5dec4')
    closed = OccupancyGrid.from_world(floor, closed_doors=['ER-12', 'Staff lounge'])
    assert hashlib.sha256(closed.data.tobytes()).hexdigest() == (
        '7aa988c219444480d2a3f2a96b3d10820a06bc00aa2f16ea33e16455f2453a51')
    # Readable spot checks: ER-12's 1.6 m gap is open between the wall ends (walls reach 0.1 m
    # into it), the wall beside it is not.
    assert grid.data[grid.cell_of(12.5, 18.0)] == 0 and grid.data[grid.cell_of(11.85, 18.0)] == 0
    assert grid.data[grid.cell_of(11.65, 18.0)] == OCCUPIED and grid.data[grid.cell_of(11.0, 18.0)] == OCCUPIED
    assert closed.data[closed.cell_of(12.5, 18.0)] == OCCUPIED


def test_walls_are_derived_from_rooms_and_extent():
    segments = wall_segments(FloorSpec.model_validate(yaml.safe_load(FLOOR.read_text())))
    # The wall y = 6 runs from x = 0 to 40 with the seven south-row door gaps cut out.
    south = sorted((x0, x1) for x0, y0, x1, y1 in segments if y0 == y1 == 6)
    assert south == [(0, 4), (6, 11.7), (13.3, 16.7), (18.3, 21.7), (23.3, 26.7), (28.3, 31.7), (33.3, 36.7),
                     (38.3, 40)]
    # Shared walls appear once: x = 15 between ER-1/ER-2 and between ER-12/ER-11.
    assert sorted((y0, y1) for x0, y0, x1, y1 in segments if x0 == x1 == 15) == [(0, 6), (18, 24)]
    # The outer wall x = 0 is one piece (extent and room edges merged).
    assert [(y0, y1) for x0, y0, x1, y1 in segments if x0 == x1 == 0] == [(0, 24)]


# --- the generated SDFormat world ---------------------------------------------------------------

def test_generated_world_is_committed_byte_for_byte(tmp_path):
    out = tmp_path / 'ed_floor.sdf'
    result = subprocess.run([sys.executable, str(ROOT / 'scripts' / 'gen_ed_floor.py'), str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == (ROOT / 'worlds' / 'ed_floor.sdf').read_bytes(), (
        'worlds/ed_floor.sdf is stale: run python scripts/gen_ed_floor.py and commit it')


def test_world_walls_are_the_floor_walls(floor):
    root = ET.parse(ROOT / 'worlds' / 'ed_floor.sdf').getroot()
    assert root.get('version') == '1.9' and root.find('world').get('name') == floor.name
    boxes = {}
    for model in root.find('world').findall('model'):
        size = model.find('link/collision/geometry/box/size')
        if size is not None:
            x, y, _, _, _, yaw = (float(v) for v in model.find('pose').text.split())
            boxes[model.get('name')] = (x, y, yaw, *(float(v) for v in size.text.split()))
    assert len(boxes) == len(floor.walls)
    for wall in floor.walls:
        assert boxes[wall.name] == pytest.approx((wall.x, wall.y, wall.yaw, wall.sx, wall.sy, floor.wall_height),
                                                 abs=1e-6), wall.name
    assert not any(el.tag.startswith('{') for el in root.iter()), 'no custom (namespaced) elements left'


def test_generator_reads_another_floor(tmp_path):
    data = yaml.safe_load(FLOOR.read_text())
    data['name'] = 'small_floor'
    data['walls']['height'] = 3.0
    source = tmp_path / 'small.yaml'
    source.write_text(yaml.safe_dump(data))
    module = _generator()
    text = module.render(load_floor(source), 'small.yaml')
    assert '<world name="small_floor">' in text and '<size>40.2 0.2 3</size>' in text
    assert 'from small.yaml' in text


# --- bad input: the error names the file, the element and what was expected ----------------------

def _bad(tmp_path, change) -> str:
    data = copy.deepcopy(yaml.safe_load(FLOOR.read_text()))
    change(data)
    path = tmp_path / 'bad_floor.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(FloorError) as err:
        load_floor(path)
    message = str(err.value)
    assert message.startswith(f'floor file {path}: '), message
    return message


def _room(data, name):
    return next(r for r in data['rooms'] if r['name'] == name)


def test_floor_error_is_a_config_error():
    assert issubclass(FloorError, ConfigError)


def test_door_not_in_its_rooms_wall(tmp_path):
    message = _bad(tmp_path, lambda d: _room(d, 'ER-1')['door'].update(at=50))
    assert re.search(r"rooms\[ER-1\]\.door: a 1\.6 m door at x = 50 is not in the north wall of room 'ER-1' "
                     r'\(x from 10 to 15\): expected 11 <= at <= 14', message), message


def test_door_outside_every_room_or_into_another(tmp_path):
    message = _bad(tmp_path, lambda d: _room(d, 'Triage')['door'].update(side='west', at=3))
    assert "rooms[Triage].door: its approach pose (-1.5, 3) is outside the floor: expected a door that opens " \
           'onto a corridor' in message, message
    message = _bad(tmp_path, lambda d: _room(d, 'ER-1')['door'].update(side='east', at=3))
    assert "rooms[ER-1].door: its approach pose (16.5, 3) is inside room 'ER-2'" in message, message


def test_reader_not_at_a_door(tmp_path):
    message = _bad(tmp_path, lambda d: d['badge_readers'][0].update(position=[20, 7.5]))
    assert ("badge_readers[er_1_door].position: (20, 7.5) is 7.65 m from the door of 'ER-1' at (12.5, 6): "
            'expected a reader at the door (within 1.5 m of the gap)') in message, message


def test_unknown_room(tmp_path):
    message = _bad(tmp_path, lambda d: d['badge_readers'][0].update(room='ER-99'))
    assert "badge_readers[er_1_door].room: unknown room 'ER-99': expected one of Triage, ER-1" in message, message


def test_dock_in_a_wall_or_outside(tmp_path):
    message = _bad(tmp_path, lambda d: d['docks'][0].update(pose=[30.4, 15.0, 0.0]))
    assert re.search(r'docks\[navigation_robot\]\.pose: \(30\.4, 15\) is inside wall wall_\d+ .*: expected a pose '
                     'in free floor space', message), message
    message = _bad(tmp_path, lambda d: d['docks'][0].update(pose=[50, 5, 0.0]))
    assert 'docks[navigation_robot].pose: (50, 5) is outside the floor: expected a pose inside the outer walls' \
        in message, message


def test_duplicates_overlaps_and_schema_errors(tmp_path):
    message = _bad(tmp_path, lambda d: d['rooms'].append(dict(_room(d, 'ER-1'))))
    assert "rooms[ER-1]: duplicate room or corridor name 'ER-1'" in message, message
    message = _bad(tmp_path, lambda d: d['badge_readers'].append(dict(d['badge_readers'][0], id='second')))
    assert "badge_readers[second]: room 'ER-1' already has badge reader 'er_1_door'" in message, message
    message = _bad(tmp_path, lambda d: _room(d, 'ER-1').update(bounds=[12, 0, 17, 6]))
    assert 'overlaps rooms[ER-1]: expected regions that share at most a wall' in message, message
    message = _bad(tmp_path, lambda d: _room(d, 'ER-6').update(bounds=[35, 0, 45, 6]))
    assert 'rooms[ER-6].bounds: expected [35.0, 0.0, 45.0, 6.0] inside the extent [0.0, 0.0, 40.0, 24.0]' \
        in message, message
    message = _bad(tmp_path, lambda d: _room(d, 'ER-1')['door'].update(side='up'))
    assert "rooms[ER-1].door.side: Input should be 'north', 'south', 'east' or 'west'" in message, message
    message = _bad(tmp_path, lambda d: d['docks'][0].update(pose=[30.4, float('nan'), 0.0]))
    assert 'docks[navigation_robot].pose[1]: Input should be a finite number' in message, message
    message = _bad(tmp_path, lambda d: d.pop('walls'))
    assert 'walls: Field required' in message, message


def test_unreadable_files(tmp_path):
    with pytest.raises(FloorError, match=r'floor file .*missing\.yaml: cannot read'):
        load_floor(tmp_path / 'missing.yaml')
    (tmp_path / 'list.yaml').write_text('- a\n')
    with pytest.raises(FloorError, match=r'floor file .*list\.yaml: expected a mapping'):
        load_floor(tmp_path / 'list.yaml')


def test_prepare_checks_the_scenarios_rooms_against_the_floor(tmp_path):
    from robot_team.nodes_plan import node_parameters as _node_parameters, prepare
    base = load_scenario('onboarding')
    paths = prepare(base, tmp_path / 'ok')
    assert paths['floor'] == str(FLOOR)
    assert _node_parameters('navigation_robot', base, paths, 'protocol')['floor'] == str(FLOOR)
    blocked = base.model_copy(update={'blocked_doors': ['ER-99']})
    with pytest.raises(FloorError, match="unknown room 'ER-99'"):
        prepare(blocked, tmp_path / 'bad')


# --- robot side: no simulator; one table of Nav2 codes ------------------------------------------

def test_robot_side_does_not_import_the_simulator():
    hits = []
    for folder in ('agents', 'tools', 'roles', 'brains', 'llm'):
        for path in sorted((ROOT / 'robot_team' / folder).rglob('*.py')):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r'robot_team\.sim\b|from robot_team import sim\b', line):
                    hits.append(f'{path.relative_to(ROOT)}:{number}: {line.strip()}')
    # Only plan_path's grid planner is left (TODO(compute_path_to_pose)).
    assert all(h.startswith('robot_team/tools/navigation.py') and 'robot_team.sim.grid import' in h
               for h in hits), hits
    code = ('import sys, robot_team.contracts.floor, robot_team.contracts.nav2_codes; '
            "print([m for m in sys.modules if m.startswith(('rclpy', 'robot_team.sim'))])")
    result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == '[]', result.stdout + result.stderr


def test_nav2_error_names_come_from_one_table():
    assert nav2_error_name(208) == 'NO_VALID_PATH' and nav2_error_name(205) == 'START_OCCUPIED'
    assert nav2_error_name(9003) == 'TIMEOUT' and nav2_error_name(0) == 'NONE'
    assert nav2_error_name(12345) == 'UNKNOWN'
    assert PlanningError.NAMES == {int(c): c.name for c in ComputePathToPoseError}
    assert PlanningError.NO_VALID_PATH == ComputePathToPoseError.NO_VALID_PATH == 208


def test_doors_on_east_and_west_walls(tmp_path):
    data = yaml.safe_load(FLOOR.read_text())
    _room(data, 'Robot bay')['door'] = {'side': 'east', 'at': 12, 'width': 1.2}
    _room(data, 'Supply room')['door'] = {'side': 'west', 'at': 12, 'width': 1.2, 'approach_m': 1.0}
    path = tmp_path / 'east_west.yaml'
    path.write_text(yaml.safe_dump(data))
    floor = load_floor(path)
    bay, supply = floor.room('Robot bay'), floor.room('Supply room')
    assert (bay.door.x, bay.door.y, bay.door.yaw) == pytest.approx((38.5, 12.0, math.pi))
    assert bay.door_gap == pytest.approx((37.0, 12.0)) and floor.room_at(bay.door.x, bay.door.y) == 'East corridor'
    assert (supply.door.x, supply.door.y, supply.door.yaw) == pytest.approx((2.0, 12.0, 0.0))
    assert (supply.entry.x, supply.entry.y) == pytest.approx((4.5, 12.0))
    grid = OccupancyGrid.from_world(floor)
    assert grid.data[grid.cell_of(37.0, 12.0)] == 0 and grid.data[grid.cell_of(37.0, 10.0)] == OCCUPIED
    assert grid.data[grid.cell_of(33.0, 9.0)] == OCCUPIED     # the old south door of the bay is a wall now
    assert len(grid.plan((bay.door.x, bay.door.y), (bay.entry.x, bay.entry.y))) >= 2
