#!/usr/bin/env bash
# Run the test suite against the environment made by scripts/setup.sh --dev.
# DDS stays on this machine; every ROS graph in the tests gets its own ROS_DOMAIN_ID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
VENV=${ROBOT_TEAM_VENV:-.venv}
# Bytecode for the source tree, which the tests and the programs they start (python -m robot_team.cli)
# import: under PYTHONDONTWRITEBYTECODE each of those processes would compile every module it imports.
"$VENV/bin/python" -m compileall -q -j 0 robot_team test >/dev/null \
  || echo "test.sh: some source files do not compile (the tests that import them will say which)" >&2
# pytest-xdist: one worker per core and one more (ROBOT_TEAM_TEST_WORKERS=N sets the number, 0 runs in
# this process). With one per core, about a fifth of the cores' time was idle: tests wait on wall time
# (DDS discovery, a network cut, liveliness leases, the local model's server); the extra worker uses it
# (2 cores: 669 s against 856 s, docs/benchmarks.md). A file's tests stay on one worker, so its module
# fixtures are made once. Each worker takes its own slice of domain IDs (test/ros_helpers.py).
# Arguments after these win (e.g. -n 0).
CORES=$(nproc 2>/dev/null || echo 1)
WORKERS=${ROBOT_TEAM_TEST_WORKERS:-$(( CORES < 19 ? CORES + 1 : 20 ))}   # at most 20: 5 domain IDs each
exec "$VENV/bin/python" -m pytest -n "$WORKERS" --dist loadfile --no-loadscope-reorder "$@"
