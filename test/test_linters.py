"""Style and docstring checks (flake8, PEP 257), as ament_flake8 and ament_pep257 would run."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.linter
def test_flake8():
    result = subprocess.run([sys.executable, '-m', 'flake8', 'robot_team', 'test', 'launch'], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.linter
def test_pep257():
    result = subprocess.run([sys.executable, '-m', 'pydocstyle', 'robot_team'], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.linter
def test_xml_files_are_well_formed_and_package_xml_is_format_3():
    import xml.etree.ElementTree as ET
    for path in ['package.xml', 'compat/nav2_msgs/package.xml', 'compat/geographic_msgs/package.xml',
                 'worlds/ed_floor.sdf', 'plugin.xml']:
        ET.parse(ROOT / path)   # raises on malformed XML
    plugin = ET.parse(ROOT / 'plugin.xml').getroot().find('class')   # the rqt plugin, exported to rqt_gui
    assert plugin.get('base_class_type') == 'rqt_gui_py::Plugin'
    assert plugin.find('qtgui/label').text == 'Robot Team Supervisor'
    exported = ET.parse(ROOT / 'package.xml').getroot().find('export/rqt_gui')
    assert exported is not None and exported.get('plugin') == '${prefix}/plugin.xml'
    for path in ['package.xml', 'compat/nav2_msgs/package.xml', 'compat/geographic_msgs/package.xml']:
        package = ET.parse(ROOT / path).getroot()
        assert package.get('format') == '3', path
        assert package.find('export/build_type').text == 'ament_cmake', path
        assert '@' in package.find('maintainer').get('email'), path
