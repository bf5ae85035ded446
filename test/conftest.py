"""Shared test fixtures: DDS kept on localhost, one ROS domain per ROS graph, private contexts.

Every test that builds a ROS graph gets its own ``ROS_DOMAIN_ID`` (reserved across processes
with a socket lock, as ament_cmake_ros's domain_coordinator does) and its own rclpy Context, so
graphs of parallel or successive tests cannot hear each other.
"""

import gc
import os
import pytest

from ros_helpers import release_domain_ids, reserve_domain_id

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
if os.environ.get('PYTEST_XDIST_WORKER'):
    # A pytest-xdist worker starts with COLUMNS=80 and LINES=24 in its environment (a run in one process
    # has neither): rich fixes a console's width when the console is made, at the CLI's import, so the
    # tests that widen its tables (CliRunner's env={'COLUMNS': ...}) would get 80 columns there.
    for name in ('COLUMNS', 'LINES'):
        os.environ.pop(name, None)


HEAVY_FIRST = ('test_local_llm.py', 'test_multihost.py', 'test_faults.py', 'test_colcon_build.py',
               'test_supervisor_restart.py', 'test_eval_cli.py', 'test_docs.py', 'test_any_choice.py',
               'test_second_patient.py', 'test_console_human_path.py', 'test_console_floor_map.py',
               'test_human_console.py')
"""Test files that take the longest (a minute or more on two busy cores; CI's ``--durations``), longest first."""


def pytest_collection_modifyitems(config, items):
    """Run the longest test files first, then the others by their number of tests (most first).

    ``scripts/test.sh`` hands files to the workers in this order (``--dist loadfile
    --no-loadscope-reorder``): longest first keeps the workers busy to the end. xdist's own
    order (by number of tests) had left the local model's episode and the colcon build, one test
    each and three minutes each, to the end of the run, one worker idle meanwhile.
    """
    counts, first_seen = {}, {}
    for index, item in enumerate(items):
        name = item.path.name
        counts[name] = counts.get(name, 0) + 1
        first_seen.setdefault(name, index)
    default_timeout = float(config.getini('timeout') or 0)

    def long_first(item):
        """A test given more than the suite's timeout runs before the rest of its file, the longest first.

        pytest-xdist hands a worker its next file once two of its tests are left (its
        ``LoadScopeScheduling._reschedule``): a file's long test run last would keep one or two
        other files waiting behind it on its worker (the local model's episode: 3 to 8 minutes).
        """
        marker = item.get_closest_marker('timeout')
        limit = float(marker.args[0]) if marker and marker.args else 0.0
        return -limit if limit > default_timeout else 0.0

    def rank(pair):
        index, item = pair
        name = item.path.name
        heavy = HEAVY_FIRST.index(name) if name in HEAVY_FIRST else len(HEAVY_FIRST)
        return heavy, -counts[name], first_seen[name], long_first(item), index
    items[:] = [item for _, item in sorted(enumerate(items), key=rank)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    """Collect a ROS test's garbage once its fixtures are torn down (its executors stopped, its context shut down).

    rclpy entities are not safe to destroy while another thread waits on a wait set (ros2/rclpy#260,
    #760). Left to the garbage collector, a test's unreachable rclpy objects were destroyed in the
    middle of a later test while that test's executor waited: a worker died of SIGSEGV in a
    rehearsal (2026-11-29, "Garbage-collecting" in ``test_sim_node.py`` beside a spinning executor).
    Collected here, they are destroyed while no executor of the test spins.
    """
    yield
    if 'domain_id' in item.fixturenames:   # every test that builds a ROS graph reserves its own domain
        gc.collect()


@pytest.fixture
def domain_id():
    """A ROS domain ID reserved for this test (given back after it, reused as late as possible)."""
    domain = reserve_domain_id()
    yield domain
    release_domain_ids(domain)


@pytest.fixture
def ros_context(domain_id):
    """An initialized private rclpy Context on a private domain; shut down after the test."""
    rclpy = pytest.importorskip('rclpy')
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def executor(ros_context):
    """rclpy's MultiThreadedExecutor bound to ``ros_context``, spinning in a background thread.

    rclpy 9.1.2's executors stop spinning when a node is destroyed while its wait set is built
    (ros2/rclpy#1284, fixed by #1590 in rclpy 10.0.5), as a test that restarts a node does: the
    thread (:class:`robot_team.ros.spin.SpinThread`) spins again past that ``InvalidHandle``.
    Any other exception that ended the spin before the teardown fails the test.
    """
    from rclpy.exceptions import InvalidHandle
    from rclpy.executors import MultiThreadedExecutor

    from robot_team.ros.spin import SpinThread
    exe = MultiThreadedExecutor(num_threads=4, context=ros_context)
    thread = SpinThread(exe, 'test-executor', max_respins=5)
    thread.start()
    try:
        yield exe
    finally:
        during = thread.take_failures()
        exe.shutdown(timeout_sec=2.0)
        thread.join(timeout=5.0)
    # shutting down destroys the executor's own guard condition; a spin that builds its wait set
    # meanwhile finds nothing to wait on (a rehearsal: "wait set is empty" at teardown): not the test's
    after = [f for f in thread.take_failures() if 'wait set is empty' not in str(f.exception)]
    failures = [f for f in during + after if not isinstance(f.exception, InvalidHandle)]
    assert not failures, f'the executor stopped spinning: {failures[0].error}\n' + '\n'.join(failures[0].traceback_tail)
