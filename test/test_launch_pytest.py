"""``ed_floor.launch.py sim:=embedded`` under launch_pytest, where it is installed (skipped cleanly elsewhere).

launch_pytest runs the launch description in this test's process (as ``ros2 launch`` would);
the test waits for the episode to end by itself and checks report.json after the shutdown.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

if not hasattr(pytest.importorskip('launch'), 'LaunchDescription'):
    pytest.skip('ROS 2 launch is not installed', allow_module_level=True)
pytest.importorskip('launch_ros')
launch_pytest = pytest.importorskip('launch_pytest')
# launch_pytest releases up to early 2025 read fixture._pytestfixturefunction, gone in pytest 8.4.
if not hasattr(pytest.fixture(lambda: None), '_pytestfixturefunction'):
    import inspect

    from launch_pytest import plugin
    if '_pytestfixturefunction' in inspect.getsource(plugin):
        pytest.skip(f'this launch_pytest does not support pytest {pytest.__version__} (needs < 8.4)',
                    allow_module_level=True)

from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def out_dir(tmp_path, domain_id, monkeypatch):
    """The run folder; the launched nodes get this test's domain and find lib/robot_team in this prefix."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(domain_id))
    monkeypatch.setenv('AMENT_PREFIX_PATH', os.pathsep.join(filter(None, [sys.prefix,
                                                                          os.environ.get('AMENT_PREFIX_PATH')])))
    monkeypatch.setenv('PYTHONPATH', str(ROOT))
    return tmp_path


@launch_pytest.fixture
def ed_floor(out_dir):
    """The ED floor on the embedded simulator."""
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(ROOT / 'launch' / 'ed_floor.launch.py')),
                                 launch_arguments=[('sim', 'embedded'), ('out_dir', str(out_dir))]),
        launch_pytest.actions.ReadyToTest(),
    ])


@pytest.mark.timeout(300)
@pytest.mark.launch(fixture=ed_floor)
def test_onboarding_ends_by_itself_with_report(out_dir):
    report_file = out_dir / 'report.json'
    deadline = time.monotonic() + 240
    while not report_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert report_file.exists(), 'the episode did not end within 240 s'
    yield
    report = json.loads(report_file.read_text())
    assert report['outcome'] == 'success' and report['mode'] == 'launch' and report['events']['complete']
