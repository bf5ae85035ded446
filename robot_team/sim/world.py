"""The ED floor as the simulator sees it: walls, rooms, doors, badge readers and docks.

The simulator reads the same floor description as the robots (``config/floors/*.yaml``, see
:mod:`robot_team.contracts.floor`); the SDFormat world in ``worlds/`` is generated from it for Gazebo and is
not read here. This module keeps the simulator's names: :class:`EdWorld` is
:class:`robot_team.contracts.floor.Floor`, :func:`load_world` is :func:`robot_team.contracts.floor.load_floor`.

All coordinates are in the ``map`` frame (REP-105), metres and radians (REP-103). No rclpy here.
"""

from __future__ import annotations

from pathlib import Path

from robot_team.contracts.floor import (
    OUTSIDE, Area, BadgeReader, Dock, Floor, FloorError, Pose2D, Room, Wall, load_floor)

EdWorld = Floor
WorldError = FloorError

__all__ = ['OUTSIDE', 'Area', 'BadgeReader', 'Dock', 'EdWorld', 'Pose2D', 'Room', 'Wall', 'WorldError',
           'load_world']


def load_world(path: str | Path) -> EdWorld:
    """Load the floor the simulator runs on from a floor description (``.yaml``).

    Parameters
    ----------
    path
        The floor description, or a name under ``config/floors/`` (e.g. ``'ed_floor.yaml'``).

    Returns
    -------
    EdWorld
        Walls, rooms, corridors, badge readers, docks and bounds, in the map frame (m, rad).

    Raises
    ------
    WorldError
        If the file cannot be used (see :func:`robot_team.contracts.floor.load_floor`), or is an SDFormat
        world: the simulator reads the floor description that world is generated from.
    """
    if Path(path).suffix == '.sdf':
        raise WorldError(f'world file {path}: the simulator reads a floor description, not SDFormat: expected '
                         'a .yaml file in config/floors/ (the scenario\'s floor key)')
    return load_floor(path)
