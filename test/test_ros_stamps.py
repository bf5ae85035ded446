"""ROS time through rclpy: stamps and durations round-trip, events and reports keep their stamps."""

import subprocess
import sys
from pathlib import Path

import pytest
import rclpy
from builtin_interfaces.msg import Duration as DurationMsg
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.duration import Duration
from rclpy.time import Time

from robot_team.contracts.events import TeamEventModel
from robot_team.contracts.reports import ReportError, TaskReportModel
from robot_team.ros.messages import event_from_msg, event_to_msg, report_from_msg, report_to_msg
from robot_team.ros.stamps import duration_to_s, now_s, s_to_duration, s_to_stamp, s_to_time, stamp_to_s

ROOT = Path(__file__).resolve().parent.parent

SECONDS = [0.0, 0, 1, 1e-9, 0.5, 1.999999999, 2.000000001, 12.5, 0.1, 0.3, 123.456789012,
           86_400.25, 1_000_000.000000001, 2**31 - 1]
"""Stamps to the ns: zero, the edges of a second, decimals with no exact float, large sim times."""


@pytest.mark.parametrize('seconds', SECONDS)
def test_stamps_are_rclpy_times_to_the_nearest_ns(seconds):
    expected = Time(nanoseconds=round(seconds * 10**9)).to_msg()
    msg = s_to_stamp(seconds)
    assert isinstance(msg, TimeMsg) and msg == expected and 0 <= msg.nanosec < 10**9
    assert s_to_time(seconds) == Time(nanoseconds=round(seconds * 10**9))
    assert stamp_to_s(msg) == Time.from_msg(msg).nanoseconds / 10**9
    assert stamp_to_s(msg) == pytest.approx(seconds, abs=1e-9)
    assert s_to_stamp(stamp_to_s(msg)) == msg                   # message -> s -> message is exact


def test_seconds_round_to_the_nearest_ns_where_rclpy_seconds_truncates():
    assert s_to_stamp(1.999999999) == TimeMsg(sec=1, nanosec=999_999_999)
    assert s_to_stamp(1.9999999999) == TimeMsg(sec=2, nanosec=0)       # the old modulo rule gave (1, 0)
    assert s_to_stamp(1.0000000004) == TimeMsg(sec=1, nanosec=0)
    # ns / 1e9 does not always come back through rclpy's int(seconds * 1e9): 1 ns lost
    for ns in (15, 60, 531_701_701_925_027):
        assert Time(seconds=ns / 10**9).nanoseconds == ns - 1
        assert s_to_time(ns / 10**9).nanoseconds == ns and stamp_to_s(s_to_stamp(ns / 10**9)) == ns / 10**9


def test_every_ns_stamp_survives_the_float_round_trip():
    for sec in (0, 1, 59, 3600, 1_000_000):
        for nanosec in (0, 1, 2, 499_999_999, 500_000_000, 999_999_998, 999_999_999):
            msg = TimeMsg(sec=sec, nanosec=nanosec)
            assert s_to_stamp(stamp_to_s(msg)) == msg


def test_bad_times_raise():
    with pytest.raises(ValueError):
        s_to_stamp(-0.5)                    # no ROS time before 0
    with pytest.raises(ValueError):
        s_to_stamp(float('nan'))
    with pytest.raises(OverflowError):
        s_to_stamp(float('inf'))
    with pytest.raises(ValueError):
        stamp_to_s(TimeMsg(sec=-1, nanosec=0))
    with pytest.raises(TypeError):
        stamp_to_s(DurationMsg(sec=1))


@pytest.mark.parametrize('seconds', [0.0, 1e-9, 0.25, 1.999999999, 3600.5, -1e-9, -0.25, -1.5, -1.999999999])
def test_durations_are_rclpy_durations_negative_ones_included(seconds):
    expected = Duration(nanoseconds=round(seconds * 10**9)).to_msg()
    msg = s_to_duration(seconds)
    assert isinstance(msg, DurationMsg) and msg == expected and 0 <= msg.nanosec < 10**9
    assert duration_to_s(msg) == Duration.from_msg(msg).nanoseconds / 10**9
    assert duration_to_s(msg) == pytest.approx(seconds, abs=1e-9)
    assert s_to_duration(duration_to_s(msg)) == msg


def test_negative_duration_is_written_as_rclpy_writes_it():
    assert s_to_duration(-1.5) == DurationMsg(sec=-2, nanosec=500_000_000)
    assert s_to_duration(-1e-9) == DurationMsg(sec=-1, nanosec=999_999_999)


def test_now_s_reads_the_node_clock():
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node('rostime_probe', context=context)
        before = node.get_clock().now().nanoseconds
        now = now_s(node)
        after = node.get_clock().now().nanoseconds
        assert before / 10**9 <= now <= after / 10**9
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


@pytest.mark.parametrize('stamp_s', [0.0, 1.999999999, 12.5, 1_000_000.000000001])
def test_events_and_reports_keep_their_stamps(stamp_s):
    event = TeamEventModel(stamp_s=stamp_s, wall_time=1.7e9, seq=3, actor='manager', kind='judgment',
                           data={'task_id': 't1'})
    msg = event_to_msg(event)
    assert msg.stamp == s_to_stamp(stamp_s)
    assert event_from_msg(msg) == event.model_copy(update={'stamp_s': stamp_to_s(msg.stamp)})
    assert event_from_msg(msg).stamp_s == pytest.approx(stamp_s, abs=1e-9)
    report = TaskReportModel(task_id='t1', task_type='display', robot='display_robot', status='success',
                             stamp_s=stamp_s)
    assert report_to_msg(report).stamp == s_to_stamp(stamp_s)
    assert report_from_msg(report_to_msg(report)).stamp_s == pytest.approx(stamp_s, abs=1e-9)


def test_a_report_stamped_before_0_is_rejected_naming_the_stamp():
    msg = report_to_msg(TaskReportModel(task_id='t1', task_type='display', robot='display_robot', status='success'))
    msg.stamp = TimeMsg(sec=-1, nanosec=0)
    with pytest.raises(ReportError, match='stamp'):
        report_from_msg(msg)


def test_contracts_and_core_import_no_rclpy():
    code = ('import sys, robot_team.contracts.events, robot_team.contracts.reports, robot_team.core.escalations, '
            'robot_team.core.manager, robot_team.core.robot, robot_team.core.supervisor; '
            "print([m for m in sys.modules if m.startswith(('rclpy', 'builtin_interfaces', 'robot_team.msg', "
            "'robot_team.ros'))])")
    result = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == '[]', result.stdout + result.stderr
