"""rviz2's view of the floor: the recorder's ``visualization_msgs/MarkerArray`` on ``team/floor_markers``.

A real rclpy graph: the team recorder (whose scene a run's topics and events feed; here set
directly) and a subscriber as rviz2 would be. The array draws every shape of the floor, each
robot where its pose says with its heading, each HCW, the case on its room in its ESI colour and
an open escalation's ring; nothing is published while nobody subscribes.
"""

import math
import threading
import time

from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

from robot_team.contracts.events import TeamEventModel
from robot_team.contracts.floor import load_floor
from robot_team.recorder import TeamRecorder
from robot_team.ros.markers import FLOOR_MARKERS
from robot_team.contracts.scene import ESI_COLOURS, floor_geometry


def _event(event_kind, actor='supervisor', seq=1, **data):
    return TeamEventModel(stamp_s=10.0, wall_time=time.time(), seq=seq, actor=actor, kind=event_kind, data=data)


def test_the_recorder_publishes_the_scene_as_markers_only_while_someone_listens(ros_context, executor):
    recorder = TeamRecorder(context=ros_context)
    floor = load_floor('ed_floor.yaml')
    recorder.scene.floor = floor
    recorder.scene.observe_robot('navigation_robot', 12.5, 7.5, math.pi / 2, 10.0)
    recorder.scene.observe_staff('314', x=13.0, y=7.0, stamp_s=10.0, availability='available', robot='')
    recorder.scene.apply(_event('case_opened', case_id='P-31', patient_id='P-31', room='ER-4', esi_level=2))
    recorder.scene.apply(_event('escalation', seq=2, escalation_id='esc-1', case_id='P-31', kind='task_failure'))
    executor.add_node(recorder)
    time.sleep(0.6)
    assert recorder._markers.get_subscription_count() == 0   # nobody listens: nothing built nor sent
    got, arrived = [], threading.Event()
    viewer = Node('rviz2_stand_in', context=ros_context)
    viewer.create_subscription(MarkerArray, FLOOR_MARKERS, lambda msg: (got.append(msg), arrived.set()), 1)
    executor.add_node(viewer)
    try:
        assert arrived.wait(10.0), 'no MarkerArray on team/floor_markers'
        markers = got[-1].markers
        assert markers[0].action == Marker.DELETEALL
        by_ns: dict[str, list[Marker]] = {}
        for m in markers[1:]:
            assert m.header.frame_id == 'map' and m.action == Marker.ADD
            by_ns.setdefault(m.ns, []).append(m)
        shapes = [m for m in by_ns['floor'] if m.type != Marker.TEXT_VIEW_FACING]
        assert len(shapes) == len(floor_geometry(floor))
        assert len({(m.ns, m.id) for m in markers[1:]}) == len(markers) - 1      # ids unique per namespace
        (arrow,) = by_ns['robots']
        assert arrow.type == Marker.ARROW and (arrow.pose.position.x, arrow.pose.position.y) == (12.5, 7.5)
        yaw = 2 * math.atan2(arrow.pose.orientation.z, arrow.pose.orientation.w)
        assert abs(yaw - math.pi / 2) < 1e-9
        (sphere,) = by_ns['hcws']
        assert (sphere.pose.position.x, sphere.pose.position.y) == (13.0, 7.0)
        tile = next(m for m in by_ns['cases'] if m.type == Marker.CUBE)
        room = floor.rooms['ER-4']
        assert (tile.pose.position.x, tile.pose.position.y) == room.center
        assert abs(tile.color.r - ESI_COLOURS[2][0]) < 1e-6
        (ring,) = by_ns['escalations']
        assert (ring.pose.position.x, ring.pose.position.y) == room.center
    finally:
        executor.remove_node(viewer)
        viewer.destroy_node()
        executor.remove_node(recorder)
        recorder.destroy_node()
