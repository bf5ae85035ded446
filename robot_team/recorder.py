"""The team recorder: subscribes to ``/team/events`` and writes the run's event record.

The record is written as ``events.jsonl`` (one JSON event per line) and ``events.mcap`` (the
``robot_team/msg/TeamEvent`` messages, CDR-encoded, readable by ``ros2 bag`` and Foxglove).
Per-actor sequence numbers let :func:`robot_team.events.sequence_gaps` prove the record is complete.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import rclpy
from mcap_ros2.writer import Writer
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from robot_team import names
from robot_team.events import TeamEventModel
from robot_team.msg import TeamEvent
from robot_team.rosliveness import announce_alive
from robot_team.rosmsgs import event_from_msg, events_qos
from robot_team.rostime import s_to_time

TEAM_EVENT_DEFINITION = """builtin_interfaces/Time stamp
float64 wall_time
uint64 seq
string actor
string kind
string target
string summary
string reason
string data_json
================================================================================
MSG: builtin_interfaces/Time
int32 sec
uint32 nanosec
"""
"""Full message definition of robot_team/msg/TeamEvent for MCAP's ros2msg schema encoding."""


class TeamRecorder(Node):
    """Collect every team event; thread-safe accessors for the runner.

    Parameters
    ----------
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameter ``out_dir``: where :func:`main` writes the
        record on shutdown.
    """

    def __init__(self, *, context=None, parameter_overrides=None, on_event=None):
        super().__init__(names.RECORDER, context=context, parameter_overrides=parameter_overrides or [])
        self.declare_parameter('out_dir', '')
        self._events: list[TeamEventModel] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._on_event = on_event
        self.create_subscription(TeamEvent, names.TEAM_EVENTS, self.event_callback, events_qos())
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (rosliveness)

    def event_callback(self, msg) -> None:
        """Store one event (and pass it to ``on_event``)."""
        event = event_from_msg(msg)
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()
        if self._on_event is not None:
            self._on_event(event)

    def events(self) -> list[TeamEventModel]:
        """Return the events received so far, ordered by (stamp, wall time)."""
        with self._lock:
            return sorted(self._events, key=lambda e: (e.stamp_s, e.wall_time))

    def wait_for(self, predicate, timeout_s: float) -> TeamEventModel | None:
        """Wait up to ``timeout_s`` wall seconds for an event matching ``predicate``; return it."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                match = next((e for e in self._events if predicate(e)), None)
                remaining = deadline - time.monotonic()
                if match is not None or remaining <= 0:
                    return match
                self._changed.wait(min(remaining, 0.1))


def write_jsonl(events: list[TeamEventModel], path: Path) -> None:
    """Write one JSON object per event to ``path``."""
    with open(path, 'w', encoding='utf-8') as f:
        for event in events:
            f.write(json.dumps(event.model_dump(mode='json'), default=str) + '\n')


def read_jsonl(path: Path) -> list[TeamEventModel]:
    """Read an ``events.jsonl`` record.

    Raises
    ------
    ValueError
        If a line is not a valid event; the message names the line.
    """
    events = []
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    events.append(TeamEventModel.model_validate_json(line))
                except ValueError as exc:
                    raise ValueError(f'{path}:{number}: not a team event ({exc})') from exc
    return events


def write_mcap(events: list[TeamEventModel], path: Path, topic: str = '/team/events') -> None:
    """Write the events as ``robot_team/msg/TeamEvent`` messages on ``topic`` (absolute) to an MCAP file."""
    with open(path, 'wb') as f:
        writer = Writer(f)
        schema = writer.register_msgdef('robot_team/msg/TeamEvent', TEAM_EVENT_DEFINITION)
        for event in events:
            stamp = s_to_time(event.stamp_s)
            sec, nanosec = stamp.seconds_nanoseconds()
            message = {'stamp': {'sec': sec, 'nanosec': nanosec},
                       'wall_time': event.wall_time, 'seq': event.seq, 'actor': event.actor,
                       'kind': event.kind, 'target': event.target, 'summary': event.summary,
                       'reason': event.reason, 'data_json': json.dumps(event.data, default=str)}
            writer.write_message(topic, schema, message, log_time=int(event.wall_time * 1e9),
                                 publish_time=stamp.nanoseconds)
        writer.finish()


def write_record(events: list[TeamEventModel], out_dir: Path, topic: str = '/team/events') -> dict[str, str]:
    """Write ``events.jsonl`` and ``events.mcap`` (events on ``topic``) into ``out_dir``; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(events, out_dir / 'events.jsonl')
    write_mcap(events, out_dir / 'events.mcap', topic)
    return {'jsonl': str(out_dir / 'events.jsonl'), 'mcap': str(out_dir / 'events.mcap')}


def main(args=None) -> int:
    """Record ``/team/events`` until shut down, then write the record to ``out_dir``."""
    rclpy.init(args=args)
    node = TeamRecorder()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        out_dir = node.get_parameter('out_dir').value or '.'
        write_record(node.events(), Path(out_dir), node.resolve_topic_name(names.TEAM_EVENTS))
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
