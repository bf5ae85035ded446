#!/usr/bin/env python3
"""Generate the Gazebo and Nav2 files of the ED floor from the floor description and robot_team.bringup.

Writes (deterministic; commit them, ``test/test_gazebo_nav2.py`` checks they are up to date):

- ``models/<robot>/model.sdf``, ``model.config``: each mobile robot (diff drive, odometry, lidar;
  a screen on the display robot);
- ``config/gz_bridge/<robot>.yaml``, ``config/gz_bridge/clock.yaml``: ros_gz_bridge configuration;
- ``config/nav2/<robot>.yaml``: Nav2 parameters per robot namespace;
- ``maps/<floor>.pgm``, ``maps/<floor>.yaml``: the map for map_server.

Usage: ``python scripts/gen_gazebo_nav2.py [--floor config/floors/ed_floor.yaml] [--root DIR]``.
With ``--robot NAME`` (e.g. a fleet's ``navigation_robot_2``), only that robot's model, bridge
configuration and Nav2 parameters (from its dock) are written.
The world (``worlds/ed_floor.sdf``) is written by ``scripts/gen_ed_floor.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # this checkout's robot_team, not an installed one

from robot_team.bringup.files import write_all, write_robot  # noqa: E402
from robot_team.contracts.floor import load_floor  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Write every generated Gazebo/Nav2 file under ``--root`` (default: this checkout)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--floor', default=str(ROOT / 'config' / 'floors' / 'ed_floor.yaml'),
                        help='floor description (YAML)')
    parser.add_argument('--root', default=str(ROOT), help='folder to write models/, config/, maps/ into')
    parser.add_argument('--robot', default='', help="only this robot's files (e.g. a fleet's navigation_robot_2)")
    args = parser.parse_args(argv)
    floor_file = Path(args.floor).resolve()
    source = floor_file.relative_to(ROOT) if floor_file.is_relative_to(ROOT) else floor_file
    floor = load_floor(floor_file)
    written = (write_robot(floor, args.robot, Path(args.root), str(source)) if args.robot
               else write_all(floor, Path(args.root), str(source)))
    for path in written:
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
