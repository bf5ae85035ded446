"""`colcon build` in a fresh workspace holding this repo: every generator configured, the package installed.

Uses the environment's ROS 2 prefix (the embedded venv) as the underlay. Two colcon runs:

- with no flags of ours, as on a ROS 2 install, configured only (``--cmake-target help``): every
  installed rosidl generator is set up, the C++ typesupports included. Compiling them is the
  generators' own code, about 60 CPU-s on two cores (2026-12-02), so it is not repeated here;
- built and installed with the flags ``scripts/setup.sh`` passes (C typesupports and Python only, unity
  build): the interfaces, the Python package, the node executables and the shared files, where
  ``ros2 run`` and launch find them.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CPP_TYPESUPPORTS = ('robot_team__rosidl_typesupport_cpp', 'robot_team__rosidl_typesupport_fastrtps_cpp',
                    'robot_team__rosidl_typesupport_introspection_cpp')


def _colcon(colcon, cwd, env, *args, log_base='log'):
    """Run ``colcon --log-base <log_base> <args>`` in ``cwd``; fail with its output and its package log if it fails."""
    result = subprocess.run([colcon, '--log-base', log_base, *args], cwd=cwd, env=env, capture_output=True, text=True)
    log = cwd / log_base / 'latest_build' / 'robot_team' / 'stdout_stderr.log'
    assert result.returncode == 0, (f'colcon {" ".join(args)}:\n' + result.stdout[-2000:]
                                    + (log.read_text()[-3000:] if log.exists() else ''))


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
    # colcon runs make with -j<cores> -l<cores> unless MAKEFLAGS says otherwise: beside the suite's
    # other worker the load stays above the cores, and make ran one job at a time (CI's --durations).
    env.setdefault('MAKEFLAGS', f'-j{os.cpu_count() or 1}')
    listed = subprocess.run([colcon, 'list', '--names-only'], cwd=tmp_path, env=env, capture_output=True,
                            text=True, check=True)
    assert listed.stdout.split() == ['robot_team'], 'colcon must not see compat/nav2_msgs'
    python = f'-DPython3_EXECUTABLE={sys.executable}'

    # As on a ROS 2 install: no flags of ours, every generator (configured, not compiled).
    _colcon(colcon, tmp_path, env, 'build', '--build-base', 'build-plain', '--install-base', 'install-plain',
            '--cmake-target', 'help', '--cmake-args', python, '-DBUILD_TESTING=OFF', log_base='log-plain')
    listing = subprocess.run(['cmake', '--build', str(tmp_path / 'build-plain' / 'robot_team'), '--target', 'help'],
                             env=env, capture_output=True, text=True, check=True).stdout
    targets = {line.removeprefix('... ').split(':')[0].strip() for line in listing.splitlines()}   # make; ninja
    for target in CPP_TYPESUPPORTS + ('robot_team__rosidl_typesupport_c', 'robot_team__rosidl_generator_py'):
        assert target in targets, f'a colcon build with no flags does not generate {target}'

    # Built and installed as scripts/setup.sh builds (rclpy's typesupports only).
    _colcon(colcon, tmp_path, env, 'build', '--cmake-args', python, '-DBUILD_TESTING=OFF',
            '-DROBOT_TEAM_SKIP_CPP_INTERFACES=ON', '-DROBOT_TEAM_UNITY_BUILD=ON')
    install = tmp_path / 'install' / 'robot_team'
    libraries = {p.name for p in (install / 'lib').glob('lib*.so')}
    assert 'librobot_team__rosidl_typesupport_c.so' in libraries, libraries
    assert not {f'lib{t}.so' for t in CPP_TYPESUPPORTS} & libraries, 'C++ typesupports built though skipped'
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
