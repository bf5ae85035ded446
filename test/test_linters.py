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
