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
                 'worlds/ed_floor.sdf']:
        ET.parse(ROOT / path)   # raises on malformed XML
    for path in ['package.xml', 'compat/nav2_msgs/package.xml', 'compat/geographic_msgs/package.xml']:
        package = ET.parse(ROOT / path).getroot()
        assert package.get('format') == '3', path
        assert package.find('export/build_type').text == 'ament_cmake', path
        assert '@' in package.find('maintainer').get('email'), path
