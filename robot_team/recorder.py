"""The team recorder: subscribes to ``/team/events`` (and the floor's poses) and writes the run's record.

The record is written as ``events.jsonl`` (one JSON event per line), ``scene.jsonl`` (the robots'
poses and the HCWs' RTLS locations as the recorder took them, :class:`robot_team.contracts.scene.Sample`)
and ``events.mcap``, written with ``foxglove-sdk``'s MCAP writer:

- ``/team/events``: the ``robot_team/msg/TeamEvent`` messages, CDR-encoded (``ros2msg`` schema),
  readable by ``ros2 bag`` tools and Foxglove (:func:`read_mcap_events`);
- ``/team/scene``: Foxglove ``SceneUpdate`` (the floor once, then robots, HCWs, cases and open
  escalations over time) and ``/team/log``: the events as Foxglove ``Log``
  (:mod:`robot_team.scene_foxglove`).

Live, it also publishes the scene as rviz2 markers (``visualization_msgs/MarkerArray``) on
``team/floor_markers`` while anyone subscribes (:mod:`robot_team.ros.markers`).

In a namespaced team every topic is under its namespace. Per-actor sequence numbers let
:func:`robot_team.contracts.events.sequence_gaps` prove the record is complete.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import foxglove
import rclpy
from mcap.reader import make_reader
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from visualization_msgs.msg import MarkerArray

from robot_team.contracts import names
from robot_team.contracts.events import TeamEventModel
from robot_team.contracts.jsonl import read_lines
from robot_team.msg import TeamEvent
from robot_team.ros.liveness import announce_alive
from robot_team.ros.markers import FLOOR_MARKERS, floor_markers
from robot_team.ros.messages import event_from_msg, event_to_msg, events_qos
from robot_team.ros.scene import SceneFeed
from robot_team.contracts.scene import SCENE_FILE, Sample, SceneState, floor_of, write_samples
from robot_team.scene_foxglove import write_foxglove

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


MARKERS_PERIOD_S = 0.2
"""Wall seconds between two ``team/floor_markers`` arrays (5 a second, the console's pace)."""


class TeamRecorder(Node):
    """Collect every team event, and the robots' poses and HCWs' locations; thread-safe accessors for the runner.

    Poses come from each robot's ``amcl_pose`` (the robots named by ``hospital_systems``' or
    ``motion_sim``'s ``node_started`` event), locations from ``ed/rtls/locations``
    (:class:`robot_team.ros.scene.SceneFeed`), all in the recorder's (the team's) namespace.

    Parameters
    ----------
    context, parameter_overrides
        As for :class:`rclpy.node.Node`. Parameter ``out_dir``: where :func:`main` writes the
        record on shutdown.
    on_event
        Called with each event received (in the executor's thread).
    """

    def __init__(self, *, context=None, parameter_overrides=None, on_event=None):
        super().__init__(names.RECORDER, context=context, parameter_overrides=parameter_overrides or [])
        self.declare_parameter('out_dir', '')
        self._events: list[TeamEventModel] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._on_event = on_event
        self.scene = SceneState(keep_samples=True)
        self._feed = SceneFeed(self, self.scene, self.get_namespace())
        self.create_subscription(TeamEvent, names.TEAM_EVENTS, self.event_callback, events_qos())
        # rviz2's view of the scene, 5 times a wall second while someone subscribes (nothing otherwise)
        self._markers = self.create_publisher(MarkerArray, FLOOR_MARKERS, 1)
        self.create_timer(MARKERS_PERIOD_S, self._publish_markers, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._heartbeat = announce_alive(self)   # the supervisor watches this node's liveness (ros.liveness)

    def _publish_markers(self) -> None:
        """Publish the scene as rviz2 markers on ``team/floor_markers``, if anyone listens (rviz2)."""
        if self._markers.get_subscription_count() == 0:
            return
        self._markers.publish(floor_markers(self.scene.snapshot(), self.scene.floor, self.get_clock().now().to_msg()))

    def event_callback(self, msg) -> None:
        """Store one event received on ``team/events`` (and pass it to ``on_event``)."""
        self.add(event_from_msg(msg))

    def add(self, event: TeamEventModel) -> None:
        """Store ``event`` as if received (and pass it to ``on_event``); thread-safe.

        For the runner's own events when nothing spins this node any more (its executor stopped).
        """
        self._feed.on_event(event)
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()
        if self._on_event is not None:
            self._on_event(event)

    def recorded_all(self, emitters, timeout_s: float) -> bool:
        """Wait until the last event of each of ``emitters`` arrived, ``timeout_s`` wall s at most; return whether so.

        ``emitters``: :class:`~robot_team.ros.emitter.EventEmitter` s (``actor``, ``count``: the
        ``seq`` of its last event). An emitter with no event yet is not waited for.
        """
        def arrived() -> bool:
            have = {(e.actor, e.seq) for e in self._events}
            return all((em.actor, em.count) in have for em in emitters if em.count)
        with self._changed:
            return self._changed.wait_for(arrived, timeout=timeout_s)

    def events(self) -> list[TeamEventModel]:
        """Return the events received so far, ordered by (stamp, wall time)."""
        with self._lock:
            return sorted(self._events, key=lambda e: (e.stamp_s, e.wall_time))

    def samples(self) -> list[Sample]:
        """Return the poses and locations kept so far (:meth:`robot_team.contracts.scene.SceneState.samples`)."""
        return self.scene.samples()

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
    return read_lines(path, TeamEventModel.model_validate_json, what='a team event')


def write_mcap(events: list[TeamEventModel], path: Path, topic: str = '/team/events',
               samples: list[Sample] | None = None) -> None:
    """Write the run's MCAP: the events as ``robot_team/msg/TeamEvent`` on ``topic`` (absolute), and the scene.

    The scene (Foxglove ``SceneUpdate`` and ``Log``, :func:`robot_team.scene_foxglove.write_foxglove`)
    goes on ``team/scene`` and ``team/log`` next to ``topic``; its floor is the run's
    (:func:`robot_team.contracts.scene.floor_of`). An existing file is replaced. Events are logged at their
    wall time (ns), chunks zstd-compressed.
    """
    path = Path(path)
    path.unlink(missing_ok=True)
    context = foxglove.Context()      # a private context: nothing else logs into this file
    schema = foxglove.Schema(name='robot_team/msg/TeamEvent', encoding='ros2msg',
                             data=TEAM_EVENT_DEFINITION.encode())
    with foxglove.open_mcap(path, context=context):     # zstd-compressed chunks (the SDK's default)
        channel = foxglove.Channel(topic, schema=schema, message_encoding='cdr', context=context)
        for event in events:
            channel.log(serialize_message(event_to_msg(event)), log_time=int(event.wall_time * 1e9))
        prefix = topic[:-len(names.TEAM_EVENTS)] if topic.endswith(names.TEAM_EVENTS) else '/'
        write_foxglove(context, events, samples or [], floor_of(events), prefix)


def read_mcap_events(path: Path) -> list[TeamEventModel]:
    """Read the team events back from a run's ``events.mcap`` (every ``robot_team/msg/TeamEvent`` channel).

    Events come in log (wall-time) order.
    """
    with open(path, 'rb') as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        topics = [c.topic for c in summary.channels.values()
                  if summary.schemas[c.schema_id].name == 'robot_team/msg/TeamEvent'] if summary else []
        return [event_from_msg(deserialize_message(message.data, TeamEvent))
                for _, _, message in reader.iter_messages(topics=topics)] if topics else []


def write_record(events: list[TeamEventModel], out_dir: Path, topic: str = '/team/events',
                 samples: list[Sample] | None = None) -> dict[str, str]:
    """Write ``events.jsonl``, ``scene.jsonl`` (if ``samples`` is given) and ``events.mcap`` into ``out_dir``.

    Returns the paths written by key (``jsonl``, ``mcap``, ``scene``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(events, out_dir / 'events.jsonl')
    files = {'jsonl': str(out_dir / 'events.jsonl'), 'mcap': str(out_dir / 'events.mcap')}
    if samples is not None:
        write_samples(samples, out_dir / SCENE_FILE)
        files['scene'] = str(out_dir / SCENE_FILE)
    write_mcap(events, out_dir / 'events.mcap', topic, samples)
    return files


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
        write_record(node.events(), Path(out_dir), node.resolve_topic_name(names.TEAM_EVENTS), node.samples())
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
