"""An episode's place on DDS: discovery kept on this machine, and the team's ROS namespace arguments.

:func:`ensure_localhost_dds` keeps DDS discovery local unless the user chose otherwise;
:func:`namespace_args` returns the ``--ros-args`` remaps that put a team (or one node of it)
under its namespace, so that two teams can share one ROS domain. The Fast DDS profile of the
node processes is :func:`robot_team.run.restarts.dds_environment`'s.
"""

from __future__ import annotations

import os
from typing import Sequence

from robot_team.contracts.names import clock_remap, join, role_name


def ensure_localhost_dds() -> None:
    """Keep DDS discovery on this machine unless the user explicitly chose otherwise."""
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')


def namespace_args(namespace: str, robots: Sequence[str], node: str | None = None) -> list[str]:
    """Return the ``--ros-args`` remaps that put the team (or one ``node`` of it) in ``namespace``.

    Team nodes go to the team namespace, each of ``robots`` (the scenario's) to ``<team>/<robot>``;
    a namespaced team also gets its own clock topic (:func:`robot_team.contracts.names.clock_remap`).
    Without ``node``: node-specific rules for every robot first, then the team-wide one (rcl uses
    the first match).
    """
    clock = clock_remap(namespace) if namespace != '/' else []
    if node is not None and node in robots and node != role_name(node):   # a fleet's robot
        return ['-r', f'__node:={node}', '-r', f'__ns:={join(namespace, node)}', *clock]
    if namespace == '/':
        return []
    if node is not None:
        ns = join(namespace, node) if node in robots else namespace
        return ['-r', f'__ns:={ns}', *clock_remap(namespace)]
    args = []
    for robot in robots:
        args += ['-r', f'{robot}:__ns:={join(namespace, robot)}']
    return args + ['-r', f'__ns:={namespace}', *clock_remap(namespace)]
