"""Turn a :class:`robot_team.bringup.plan.Plan` into ``launch``/``launch_ros`` actions.

Imported only by the launch files (it needs ROS 2's ``launch`` and ``launch_ros``). The plan
is built and checked first, inside an ``OpaqueFunction``, so bad input stops the launch with
its message before any process starts.
"""

from __future__ import annotations

import os
from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import (AppendEnvironmentVariable, EmitEvent, IncludeLaunchDescription, LogInfo,
                            RegisterEventHandler, SetEnvironmentVariable)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_ros.actions import Node

from robot_team.bringup.plan import IncludeSpec, NodeSpec, Plan, check_packages


def node_action(spec: NodeSpec) -> Node:
    """Return the ``launch_ros`` Node of ``spec`` (output on screen; respawned as the spec says)."""
    kwargs = {}
    if spec.namespace:
        kwargs['namespace'] = spec.namespace
    if spec.respawn:   # launch >= 2.0 (Iron; Jazzy, Kilted) has respawn_max_retries
        kwargs.update(respawn=True, respawn_delay=spec.respawn_delay, respawn_max_retries=spec.respawn_max_retries)
    return Node(package=spec.package, executable=spec.executable, name=spec.name, output='screen',
                parameters=list(spec.parameters), remappings=list(spec.remappings),
                arguments=list(spec.arguments), **kwargs)


def include_action(spec: IncludeSpec) -> IncludeLaunchDescription:
    """Return the IncludeLaunchDescription of ``spec`` (the package's share folder + path)."""
    source = PythonLaunchDescriptionSource(str(Path(get_package_share_directory(spec.package)) / spec.path))
    return IncludeLaunchDescription(source, launch_arguments=list(spec.arguments))


def _action(spec):
    return node_action(spec) if isinstance(spec, NodeSpec) else include_action(spec)


def plan_actions(plan: Plan) -> list:
    """Return the actions of ``plan``: what starts at once, the team gate, the recorder and their handlers.

    When ``team_ready`` exits 0 the ``after_team`` part starts; any other exit shuts the launch
    down with its reason. When the episode recorder exits (the episode ended and report.json is
    written) the launch shuts down. ``environment_defaults`` are set only where the launch's
    environment (this process's, as launch keeps it) lacks them, e.g. a user's own
    ``FASTDDS_DEFAULT_PROFILES_FILE`` is kept.
    """
    check_packages(plan.packages)
    actions: list = [SetEnvironmentVariable(name, value) for name, value in plan.environment_defaults.items()
                     if not os.environ.get(name)]
    actions += [AppendEnvironmentVariable(name, value) for name, value in plan.environment.items()]
    actions += [LogInfo(msg=f'robot_team: {note}') for note in plan.notes]
    actions += [_action(spec) for spec in plan.first]
    if plan.team_ready is not None:
        gate = node_action(plan.team_ready)
        later = [_action(spec) for spec in plan.after_team]

        def on_gate_exit(event, context):
            if event.returncode == 0:
                return later
            return [EmitEvent(event=Shutdown(reason=f'team nodes did not start (team_ready exit code '
                                                    f'{event.returncode})'))]
        actions += [gate, RegisterEventHandler(OnProcessExit(target_action=gate, on_exit=on_gate_exit))]
    else:
        actions += [_action(spec) for spec in plan.after_team]
    if plan.recorder is not None:
        recorder = node_action(plan.recorder)
        actions += [recorder, RegisterEventHandler(OnProcessExit(
            target_action=recorder,
            on_exit=[LogInfo(msg=f"robot_team: episode over; report in {plan.paths.get('out_dir', '.')}"),
                     EmitEvent(event=Shutdown(reason='episode finished'))]))]
    return actions
