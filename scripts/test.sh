#!/usr/bin/env bash
# Run the test suite against the environment made by scripts/setup.sh --dev.
# DDS stays on this machine; every ROS graph in the tests gets its own ROS_DOMAIN_ID.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
VENV=${ROBOT_TEAM_VENV:-.venv}
exec "$VENV/bin/python" -m pytest "$@"
