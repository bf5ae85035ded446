"""The navigation robot relies on Nav2's interfaces only: it works where the simulator cannot be imported.

The team runs one node per process; in the navigation robot's process a ``sitecustomize`` makes
every import of ``robot_team.sim`` fail, as on a robot that runs Nav2 and has no simulator. The
simulator runs in its own process and serves the standard interfaces (``navigate_to_pose``,
``compute_path_to_pose``, ``amcl_pose``...).
"""

import os
import textwrap

import pytest

from robot_team.run.episode import run_episode

BLOCKER = textwrap.dedent('''
    import sys
    if 'navigation_robot' in sys.argv:
        import importlib.abc

        class _NoSimulator(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == 'robot_team.sim' or name.startswith('robot_team.sim.'):
                    raise ImportError(f'{name} is blocked: this process is a robot without the simulator')
                return None
        sys.meta_path.insert(0, _NoSimulator())
        print('robot_team.sim blocked in this process', flush=True)
''')


@pytest.mark.multiprocess
def test_navigation_robot_completes_its_tasks_without_the_simulator_module(domain_id, tmp_path, monkeypatch):
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(BLOCKER)
    monkeypatch.setenv('PYTHONPATH', str(site) + (os.pathsep + os.environ['PYTHONPATH']
                                                  if os.environ.get('PYTHONPATH') else ''))
    result = run_episode('onboarding', tmp_path / 'run', domain_id=domain_id, processes=True)
    log = (tmp_path / 'run' / 'logs' / 'navigation_robot.log').read_text()
    assert 'robot_team.sim blocked in this process' in log
    assert 'robot_team.sim blocked' not in (tmp_path / 'run' / 'logs' / 'manager.log').read_text()
    report = result.report
    assert report['outcome'] == 'success', report
    nav = [t for t in report['tasks'] if t['name'] == 'navigation']
    assert [t['status'] for t in nav] == ['failure', 'success']
    assert [g['output']['outcome'] for g in nav[1]['evidence']['nav2_goals']] == ['succeeded', 'succeeded']
    assert nav[1]['evidence']['plan_path']['ok'] is True     # planned by compute_path_to_pose
    [started] = [e for e in result.events if e.kind == 'node_started' and e.actor == 'navigation_robot']
    assert started.data['pose_source'] == 'amcl_pose' and started.data['navigator'] == 'NavigateToPoseClient'


def test_navigator_and_pose_source_choices_are_checked(ros_context):
    import rclpy

    from robot_team.tools.localization import RobotPose
    from robot_team.tools.navigation import NavigateToPoseClient, make_navigator
    node = rclpy.create_node('nav_choice', namespace='/navigation_robot', context=ros_context)
    try:
        assert isinstance(make_navigator(node, 'auto'), NavigateToPoseClient)   # private context: built-in
        with pytest.raises(ValueError, match="navigator 'warp': expected one of auto, basic_navigator, builtin"):
            make_navigator(node, 'warp')
        with pytest.raises(ValueError, match='navigator basic_navigator: '):
            make_navigator(node, 'basic_navigator')
        with pytest.raises(ValueError, match="pose source 'gps'"):
            RobotPose(node, source='gps')
        pose = RobotPose(node, source='auto')
        assert pose.source in ('tf', 'amcl_pose')
        from robot_team.contracts.errors import ToolError
        if pose.source == 'amcl_pose':
            with pytest.raises(ToolError, match='nothing received on /navigation_robot/amcl_pose'):
                pose.get(0.1)
    finally:
        node.destroy_node()
