#!/usr/bin/env python3
"""Generate ``worlds/ed_floor.sdf``, the emergency department floor of the simulator.

Usage: ``python scripts/gen_ed_floor.py [output.sdf]`` (default: ``worlds/ed_floor.sdf`` next to
this script's folder). The output is deterministic; commit the regenerated file.

Layout (map frame, metres, REP-103: x east, y north; the floor spans 40 m x 24 m)::

    y 24 +------+----+----+----+----+----+----+
         |Resus |ER12|ER11|ER10|ER-9|ER-8|ER-7|   north row, doors on y = 18
    y 18 +-- ---+-- -+-- -+-- -+-- -+-- -+-- -+
         |            North corridor          |
    y 15 +  +------+--- --+------+-------+    +
         |W |Supply|Nurses|Staff |Robot  |  E |   central block, corridors W and E
         |  |room  |stat. |lounge|bay    |    |
    y  9 +  +-- ---+------+-- ---+--- ---+    +
         |            Main corridor           |
    y  6 +--- ---+-- -+-- -+-- -+-- -+-- -+-- -+
         |Triage |ER-1|ER-2|ER-3|ER-4|ER-5|ER-6|   south row, doors on y = 6
    y  0 +-------+----+----+----+----+----+----+
         x 0    10   15   20   25   30   35   40

Every wall is a static model with box collision and visual geometry (Gazebo loads it as is).
The semantic layer (rooms, corridors, door approach poses, badge readers, docks) is written as
custom elements in the ``robot_team`` XML namespace, which Gazebo ignores; it is parsed by
``robot_team.sim.world.load_world``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

NS = 'https://robot-team.dev/sdf'
THICKNESS = 0.2     # wall thickness, m
HEIGHT = 2.5        # wall height, m
DOOR = 1.6          # patient-room door gap (stretcher wide), m
APPROACH = 1.5      # distance of a door's approach pose from the wall's centre line, m
READER_RADIUS = 1.2  # badge reader range, m (catches a person passing the door, not the corridor)

# name, kind, (xmin, ymin, xmax, ymax), door side ('N' or 'S': wall the door is in), door x, width
ROOMS = [('Triage', 'triage', (0, 0, 10, 6), 'N', 5.0, 2.0)]
ROOMS += [(f'ER-{i + 1}', 'patient_room', (10 + 5 * i, 0, 15 + 5 * i, 6), 'N', 12.5 + 5 * i, DOOR)
          for i in range(6)]
ROOMS += [('Supply room', 'utility', (3, 9, 12, 15), 'S', 7.5, 1.2),
          ('Nurses station', 'nurses_station', (12, 9, 22, 15), 'N', 17.0, DOOR),
          ('Staff lounge', 'staff_lounge', (22, 9, 29, 15), 'S', 25.5, 1.2),
          ('Robot bay', 'robot_bay', (29, 9, 37, 15), 'S', 33.0, 2.0),
          ('Resuscitation', 'resuscitation', (0, 18, 10, 24), 'S', 5.0, 2.0)]
# The north row is numbered on from the south row, east to west (ER-7 north of ER-6).
ROOMS += [(f'ER-{12 - i}', 'patient_room', (10 + 5 * i, 18, 15 + 5 * i, 24), 'S', 12.5 + 5 * i, DOOR)
          for i in range(6)]

CORRIDORS = [('Main corridor', (0, 6, 40, 9)), ('North corridor', (0, 15, 40, 18)),
             ('West corridor', (0, 9, 3, 15)), ('East corridor', (37, 9, 40, 15))]

# Docks along the north wall of the robot bay, robots facing the bay door (south).
DOCKS = [('navigation_robot', 30.4), ('info_collection_robot', 32.2), ('display_robot', 34.0),
         ('manager', 35.8)]
DOCK_Y = 13.9


def _horizontal_walls(y: float, x0: float, x1: float) -> list[tuple[float, float, float, float]]:
    """Split the wall y = const from x0 to x1 at the door gaps on it; return (x0, y, x1, y) segments."""
    gaps = sorted((door_x - width / 2, door_x + width / 2)
                  for _, _, (_, ymin, _, ymax), side, door_x, width in ROOMS
                  if (ymax if side == 'N' else ymin) == y and x0 < door_x < x1)
    segments, start = [], x0
    for a, b in gaps:
        segments.append((start, y, a, y))
        start = b
    segments.append((start, y, x1, y))
    return segments


def wall_segments() -> list[tuple[float, float, float, float]]:
    """Return every wall as a centre-line segment (x0, y0, x1, y1), m."""
    segs = [(0, 0, 40, 0), (0, 24, 40, 24), (0, 0, 0, 24), (40, 0, 40, 24)]   # perimeter
    segs += _horizontal_walls(6, 0, 40) + _horizontal_walls(18, 0, 40)
    segs += _horizontal_walls(9, 3, 37) + _horizontal_walls(15, 3, 37)
    segs += [(x, 0, x, 6) for x in range(10, 40, 5)] + [(x, 18, x, 24) for x in range(10, 40, 5)]
    segs += [(x, 9, x, 15) for x in (3, 12, 22, 29, 37)]
    return segs


def _f(value: float) -> str:
    text = f'{value:.6f}'.rstrip('0').rstrip('.')
    return '0' if text == '-0' else text


def _wall_model(index: int, seg: tuple[float, float, float, float]) -> str:
    x0, y0, x1, y1 = seg
    length = math.hypot(x1 - x0, y1 - y0) + THICKNESS   # overlap at the corners
    yaw = math.atan2(y1 - y0, x1 - x0)
    size = f'{_f(length)} {_f(THICKNESS)} {_f(HEIGHT)}'
    geometry = f'<geometry><box><size>{size}</size></box></geometry>'
    return f'''    <model name="wall_{index:02d}">
      <static>true</static>
      <pose>{_f((x0 + x1) / 2)} {_f((y0 + y1) / 2)} 0 0 0 {_f(yaw)}</pose>
      <link name="link">
        <pose>0 0 {_f(HEIGHT / 2)} 0 0 0</pose>
        <collision name="collision">{geometry}</collision>
        <visual name="visual">{geometry}
          <material><ambient>0.85 0.85 0.8 1</ambient><diffuse>0.85 0.85 0.8 1</diffuse></material>
        </visual>
      </link>
    </model>
'''


def _room(name, kind, rect, side, door_x, width) -> str:
    xmin, ymin, xmax, ymax = rect
    if side == 'N':
        door = (door_x, ymax + APPROACH, -math.pi / 2)
    else:
        door = (door_x, ymin - APPROACH, math.pi / 2)
    return (f'    <robot_team:room name="{name}" kind="{kind}">'
            f'<robot_team:center>{_f((xmin + xmax) / 2)} {_f((ymin + ymax) / 2)}</robot_team:center>'
            f'<robot_team:size>{_f(xmax - xmin)} {_f(ymax - ymin)}</robot_team:size>'
            f'<robot_team:door width="{_f(width)}">{_f(door[0])} {_f(door[1])} {_f(door[2])}'
            f'</robot_team:door></robot_team:room>\n')


def _reader(name, rect, side, door_x, width) -> str:
    xmin, ymin, xmax, ymax = rect
    # On the corridor face of the wall, just east of the door gap.
    y = ymax + THICKNESS / 2 + 0.05 if side == 'N' else ymin - THICKNESS / 2 - 0.05
    reader_id = name.lower().replace('-', '_') + '_door'
    return (f'    <robot_team:badge_reader id="{reader_id}" room="{name}">'
            f'<robot_team:position>{_f(door_x + width / 2 + 0.15)} {_f(y)}</robot_team:position>'
            f'<robot_team:radius>{_f(READER_RADIUS)}</robot_team:radius></robot_team:badge_reader>\n')


def render() -> str:
    """Return the SDFormat 1.9 text of the world."""
    out = [f'''<?xml version="1.0" ?>
<!-- Generated by scripts/gen_ed_floor.py: edit the generator, not this file. -->
<sdf version="1.9" xmlns:robot_team="{NS}">
  <world name="ed_floor">
    <gravity>0 0 -9.8</gravity>
    <scene><ambient>0.6 0.6 0.6 1</ambient><background>0.7 0.7 0.7 1</background></scene>
    <light type="directional" name="sun">
      <cast_shadows>true</cast_shadows>
      <pose>0 0 10 0 0 0</pose>
      <diffuse>0.8 0.8 0.8 1</diffuse>
      <specular>0.2 0.2 0.2 1</specular>
      <direction>-0.5 0.1 -0.9</direction>
    </light>
    <model name="ground_plane">
      <static>true</static>
      <link name="link">
        <collision name="collision"><geometry><plane><normal>0 0 1</normal><size>60 40</size></plane>
        </geometry></collision>
        <visual name="visual"><geometry><plane><normal>0 0 1</normal><size>60 40</size></plane>
        </geometry><material><ambient>0.5 0.5 0.5 1</ambient><diffuse>0.5 0.5 0.5 1</diffuse>
        </material></visual>
      </link>
    </model>
''']
    out += [_wall_model(i, seg) for i, seg in enumerate(wall_segments())]
    out.append('    <!-- Semantic annotations (namespace robot_team; ignored by Gazebo).\n'
               '         room: center and size of the walls\' centre lines; door: approach pose\n'
               '         (x y yaw) in the corridor, facing the door gap; width: the gap. -->\n')
    out += [_room(*room) for room in ROOMS]
    for name, (xmin, ymin, xmax, ymax) in CORRIDORS:
        out.append(f'    <robot_team:corridor name="{name}">'
                   f'<robot_team:center>{_f((xmin + xmax) / 2)} {_f((ymin + ymax) / 2)}</robot_team:center>'
                   f'<robot_team:size>{_f(xmax - xmin)} {_f(ymax - ymin)}</robot_team:size>'
                   f'</robot_team:corridor>\n')
    out += [_reader(name, rect, side, door_x, width)
            for name, kind, rect, side, door_x, width in ROOMS if kind == 'patient_room']
    out += [f'    <robot_team:dock robot="{robot}">{_f(x)} {_f(DOCK_Y)} {_f(-math.pi / 2)}'
            '</robot_team:dock>\n' for robot, x in DOCKS]
    out.append('  </world>\n</sdf>\n')
    return ''.join(out)


def main(argv: list[str]) -> int:
    """Write the world to ``argv[1]`` or to ``worlds/ed_floor.sdf``."""
    default = Path(__file__).resolve().parent.parent / 'worlds' / 'ed_floor.sdf'
    target = Path(argv[1]) if len(argv) > 1 else default
    target.write_text(render(), encoding='utf-8')
    print(f'wrote {target}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
