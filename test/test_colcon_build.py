"""`colcon build` in a fresh workspace holding this repo builds everything, with no extra flags.

Uses the environment's ROS 2 prefix (the embedded venv) as the underlay. Slow (about a minute
on two cores): it builds the interfaces from scratch.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(900)
def test_colcon_build_installs_interfaces_python_and_node_executables(tmp_path):
    colcon = shutil.which('colcon') or str(Path(sys.executable).parent / 'colcon')
    if not Path(colcon).exists():
        pytest.skip('colcon is not installed (scripts/setup.sh --dev installs it)')
    prefix = Path(sys.prefix)
    src = tmp_path / 'src' / 'robot_team'
    ignore = shutil.ignore_patterns('.venv', 'build', 'install', 'log', 'runs', '.git', '__pycache__',
                                    '.pytest_cache')
    shutil.copytree(ROOT, src, ignore=ignore)
    env = dict(os.environ, AMENT_PREFIX_PATH=str(prefix), CMAKE_PREFIX_PATH=str(prefix),
               PATH=f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    listed = subprocess.run([colcon, 'list', '--names-only'], cwd=tmp_path, env=env, capture_output=True,
                            text=True, check=True)
    assert listed.stdout.split() == ['robot_team'], 'colcon must not see compat/nav2_msgs'
    result = subprocess.run([colcon, 'build', '--cmake-args', f'-DPython3_EXECUTABLE={sys.executable}',
                             '-DBUILD_TESTING=OFF'], cwd=tmp_path, env=env, capture_output=True, text=True)
    log = (tmp_path / 'log' / 'latest_build' / 'robot_team' / 'stdout_stderr.log')
    assert result.returncode == 0, result.stdout[-2000:] + (log.read_text()[-3000:] if log.exists() else '')
    install = tmp_path / 'install' / 'robot_team'
    executables = {p.name for p in (install / 'lib' / 'robot_team').iterdir()}
    assert {'motion_sim', 'hospital_systems', 'manager', 'navigation_robot', 'info_collection_robot',
            'display_robot', 'supervisor', 'scripted_operator', 'team_recorder'} <= executables
    site = next(install.glob('lib/python3*/site-packages/robot_team'))
    assert (site / 'msg').is_dir() and (site / 'run' / 'episode.py').exists()
    assert 'extend_path' in (site / '__init__.py').read_text(), 'our __init__.py must replace the generated one'
    assert (install / 'share' / 'robot_team' / 'config' / 'scenarios' / 'onboarding.yaml').exists()
    for shared in ('launch/ed_floor.launch.py', 'launch/robot.launch.py', 'launch/team.launch.py',
                   'models/display_robot/model.sdf', 'maps/ed_floor.yaml', 'config/nav2/navigation_robot.yaml'):
        assert (install / 'share' / 'robot_team' / shared).exists(), shared
