"""The launch file, where `launch` and `launch_ros` are installed (skipped cleanly elsewhere)."""

import importlib.util
from pathlib import Path

import pytest

# Our own launch/ folder is importable as a namespace package named 'launch' from the source
# tree: require the real ROS 2 launch API, not just the name.
if not hasattr(pytest.importorskip('launch'), 'LaunchDescription'):
    pytest.skip('ROS 2 launch is not installed', allow_module_level=True)
pytest.importorskip('launch_ros')

LAUNCH_FILE = Path(__file__).resolve().parent.parent / 'launch' / 'ed_team.launch.py'


def _load():
    spec = importlib.util.spec_from_file_location('ed_team_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def test_launch_description_declares_arguments():
    from launch.actions import DeclareLaunchArgument
    description = _load()
    declared = {a.name for a in description.entities if isinstance(a, DeclareLaunchArgument)}
    assert {'scenario', 'brain', 'real_time_factor', 'out_dir', 'discovery_range'} <= declared


def test_launch_team_nodes(tmp_path):
    from launch import LaunchContext
    from launch.actions import OpaqueFunction, TimerAction
    from launch_ros.actions import Node
    description = _load()
    context = LaunchContext()
    for entity in description.entities:
        if not isinstance(entity, OpaqueFunction):
            entity.visit(context)
    context.launch_configurations['out_dir'] = str(tmp_path)
    opaque = next(e for e in description.entities if isinstance(e, OpaqueFunction))
    actions = opaque.execute(context)
    nodes = [a for a in actions if isinstance(a, Node)]
    timers = [a for a in actions if isinstance(a, TimerAction)]
    assert len(nodes) == 8 and len(timers) == 1     # recorder, the team, hospital_systems; motion_sim delayed
    delayed = [a for _, entities in timers[0].describe_conditional_sub_entities() for a in entities]
    assert [a.node_executable for a in delayed] == ['motion_sim']
    assert 'hospital_systems' in [n.node_executable for n in nodes]
    assert (tmp_path / 'staff.sqlite').exists()
