"""The navigation robot's tools: RTLS lookup, paging, route planning and Nav2 navigation.

Each tool wraps a real ROS interface (or the robot's own map) and is registered in the
navigation robot's :class:`~robot_team.tools.base.Toolbox`, so only that robot can call it
(declared in :mod:`robot_team.roles.navigation.decl`):

- ``Tool.LOCATE_STAFF`` -> the RTLS service ``names.LOCATE_STAFF`` (robot_team/srv/LocateStaff)
- ``Tool.PAGE_STAFF`` -> the paging system's action ``names.PAGE_STAFF`` (robot_team/action/PageStaff)
- ``Tool.ROOM_DOOR_POSE`` -> the floor description (:mod:`robot_team.contracts.floor`): rooms and doors in ``map``
- ``Tool.PLAN_PATH`` -> ``<robot>/compute_path_to_pose`` (nav2_msgs/action/ComputePathToPose, Nav2's
  planner server on the map server's map; the real floor may differ: a closed door), from the
  robot's pose (:class:`~robot_team.tools.localization.RobotPose`: TF or ``amcl_pose``), through
  :class:`~robot_team.tools.navigation.ComputePathClient`
- ``Tool.NAVIGATE_TO_POSE`` -> Nav2's ``<robot>/navigate_to_pose`` (nav2_msgs/action/NavigateToPose),
  with feedback and cancel, through :func:`~robot_team.tools.navigation.make_navigator`'s client

Only interfaces every Nav2 robot has: nothing here knows the embedded simulator.
"""

from __future__ import annotations

import math
import threading

from action_msgs.msg import GoalStatus

from robot_team.action import PageStaff
from robot_team.contracts import names
from robot_team.catalog import OBSERVE_WAIT_S, ClosedSet, TaskFacts, Tool, WorldFact, implements, register_tools
from robot_team.contracts.config import ConfigError
from robot_team.contracts.errors import ToolError
from robot_team.contracts.floor import load_floor
from robot_team.contracts.names import team_name
from robot_team.roles.navigation.decl import (
    NAVIGATION_ROLE, LocateStaffInput, NavigateInput, PageStaffInput, PlanPathInput, RoomInput)
from robot_team.ros.action_client import TeamActionClient
from robot_team.ros.clock import ResultWait
from robot_team.ros.stamps import now_s
from robot_team.ros.util import (SERVER_WAIT_S, call_service, discovery_hold_of, wait_for_server, wait_future,
                                 watch_ros_time)
from robot_team.srv import LocateStaff
from robot_team.tools.base import Toolbox, check_declared_fact, task_value
from robot_team.tools.localization import RobotPose
from robot_team.tools.navigation import ComputePathClient, NavOutcome, make_navigator

#: Wall seconds route planning waits for the robot's first pose (a node that has just started), like
#: the timeout of a TF lookup; past it the tool fails.
POSE_WAIT_S = 5.0

#: ROS seconds past a page's ``timeout_s`` within which its result should come (the paging system
#: answers at the time out; a system that went down never does): past it the call fails.
PAGE_RESULT_GRACE_S = 10.0


def page_result(output: dict) -> dict:
    """Return a page's ``output`` if the HCW acknowledged it; raise otherwise.

    ``output`` has ``hcw_id``, ``delivered``, ``acknowledged``, ``reply`` and
    ``response_time_s`` (sim s waited), and after no acknowledgement ``available``: the HCWs of the
    same specialty the RTLS finds available (named in the error, so the failure can be acted on:
    another HCW). A page is the tool's way to get the HCW's answer, so no
    acknowledgement is a failed call (later calls of the same plan, such as driving to the
    HCW, do not run); the output stays in the journal as evidence.

    Raises
    ------
    ToolError
        If the page was not delivered or not acknowledged in time.
    """
    if not output.get('delivered'):
        raise ToolError(f"page to HCW #{output.get('hcw_id')} not delivered", output=output)
    if not output.get('acknowledged'):
        available = output.get('available') or []
        alternatives = ('; available of the same specialty (RTLS): '
                        + ', '.join(f"#{a['hcw_id']} ({a.get('area') or '?'})" for a in available)) if available \
            else ''
        raise ToolError(f"HCW #{output.get('hcw_id')} did not acknowledge the page within "
                        f"{output.get('response_time_s', 0):g} s{alternatives}", output=output)
    return output


class NavigationTools:
    """The navigation robot's tools, bound to its node and static map.

    Parameters
    ----------
    node
        The navigation robot's node (namespace ``/navigation_robot``).
    world
        The :class:`~robot_team.contracts.floor.Floor` (the robot's semantic map: rooms, doors, areas).
    callback_group
        Group for the clients' callbacks (reentrant, so worker threads can wait on them).
    """

    def __init__(self, node, world, callback_group=None, *, pose_source: str = 'auto',
                 pose_topic: str = names.AMCL_POSE, base_frame: str = names.BASE_FRAME, navigator: str = 'auto'):
        self._node = node
        self._world = world
        self.pose = RobotPose(node, source=pose_source, topic=pose_topic, base_frame=base_frame,
                              callback_group=callback_group)
        self.planner = ComputePathClient(node, names.COMPUTE_PATH_TO_POSE, callback_group)
        self._locate = node.create_client(LocateStaff, team_name(node, names.LOCATE_STAFF),
                                          callback_group=callback_group)
        self._page = TeamActionClient(node, PageStaff, team_name(node, names.PAGE_STAFF),
                                      callback_group=callback_group)
        self._page_stop = threading.Event()   # set: the page awaited is abandoned (the task was stopped)
        self.nav = make_navigator(node, navigator, callback_group)

    @classmethod
    def from_node(cls, node, callback_group=None) -> 'NavigationTools':
        """Build the tools for ``node`` from its parameters.

        Declares and reads ``pose_source`` (``auto``|``tf``|``amcl_pose``), ``pose_topic``,
        ``base_frame`` and ``navigator`` (``auto``|``basic_navigator``|``builtin``); reads ``floor``.

        Raises
        ------
        ValueError
            If a parameter is out of its set.
        ConfigError
            If the floor description cannot be loaded.
        """
        # Nav2's interfaces only: the pose from TF (where tf2_ros is installed) or amcl_pose.
        pose = {key: node.declare_parameter(key, default).value for key, default in (
            ('pose_source', 'auto'), ('pose_topic', names.AMCL_POSE), ('base_frame', names.BASE_FRAME),
            ('navigator', 'auto'))}
        return cls(node, load_floor(node.get_parameter('floor').value), callback_group, **pose)

    @property
    def started_data(self) -> dict:
        """What the robot's ``node_started`` event records about these tools (navigator, pose source)."""
        return {'navigator': type(self.nav).__name__, 'pose_source': self.pose.source}

    def cancel(self) -> None:
        """Cancel the Nav2 goal in flight and abandon the page awaited, if any (the robot's task was stopped)."""
        self._page_stop.set()
        self.nav.cancel()

    def register(self, toolbox: Toolbox) -> None:
        """Register every navigation tool in ``toolbox``."""
        register_tools(toolbox, self)

    @implements(Tool.LOCATE_STAFF)
    def locate(self, args: LocateStaffInput) -> dict:
        """Query the RTLS; return ``{'staff': [...], 'unknown_ids': [...]}`` (poses in 'map', m)."""
        wait_for_server(self._locate, SERVER_WAIT_S, f'service {names.LOCATE_STAFF}', discovery_hold_of(self._node))
        response = call_service(self._node, self._locate, LocateStaff.Request(
            hcw_ids=list(args.hcw_ids), specialty=args.specialty), SERVER_WAIT_S, f'response of {names.LOCATE_STAFF}')
        staff = []
        for s in response.staff:
            p = s.pose.pose.position
            staff.append({'hcw_id': s.hcw_id, 'specialty': s.specialty, 'area': s.area,
                          'x': round(p.x, 2), 'y': round(p.y, 2), 'availability': s.availability,
                          'detail': s.detail})
        return {'staff': staff, 'unknown_ids': list(response.unknown_ids)}

    @implements(Tool.PAGE_STAFF)
    def page(self, args: PageStaffInput) -> dict:
        """Page an HCW; return delivered/acknowledged/reply/response_time_s (sim s).

        The page names the task's room (the patient's), as a hospital's paging system carries the
        location, whatever the message says.
        """
        self._page_stop.clear()
        wait_for_server(self._page, SERVER_WAIT_S, f'action server {names.PAGE_STAFF}',
                        discovery_hold_of(self._node))
        goal = PageStaff.Goal(hcw_id=args.hcw_id, message=args.message, robot=self._node.get_name(),
                              room=task_value(ClosedSet.TASK_ROOM), timeout_s=args.timeout_s)
        start = now_s(self._node)
        handle = wait_future(self._page.send_goal_async(goal), SERVER_WAIT_S, f'goal response of {names.PAGE_STAFF}')
        if not handle.accepted:
            raise ToolError(f'{names.PAGE_STAFF}: the paging system refused the page')
        response = self._page_result(handle, start + args.timeout_s + PAGE_RESULT_GRACE_S)
        output = {'hcw_id': args.hcw_id, 'delivered': response.delivered, 'acknowledged': response.acknowledged,
                  'reply': response.reply, 'response_time_s': round(response.response_time_s, 2)}
        if not response.acknowledged:
            output['available'] = self._available_like(args.hcw_id)
        else:
            output['meet_at'] = self._where(args.hcw_id)
        return page_result(output)

    def _page_result(self, handle, deadline_s: float):
        """Wait for the result of the accepted page ``handle`` until ``deadline_s`` (ROS time, s); return it.

        The paging system has the page (its goal was accepted) and answers when the HCW does or the
        page runs out, which it tells the follow clock: the robot has nothing to do meanwhile
        (:class:`~robot_team.ros.clock.ResultWait`). ``PageStaff.Result``.

        Raises
        ------
        ToolError
            If no result came by ``deadline_s``, the task was stopped meanwhile, or the page did
            not succeed (the paging system stopped).
        """
        future = handle.get_result_async()
        wait = ResultWait(self._node, future, deadline_s)
        try:
            while not wait.done.wait(0.01):
                if self._page_stop.is_set():
                    raise ToolError(f'{names.PAGE_STAFF}: the page was abandoned, the task was stopped')
                if now_s(self._node) > deadline_s:
                    raise ToolError(f'{names.PAGE_STAFF}: no result by {deadline_s:g} s (ROS time): the paging '
                                    'system did not answer')
        finally:
            wait.end()
        wrapped = future.result()
        if wrapped.status != GoalStatus.STATUS_SUCCEEDED:
            raise ToolError(f'{names.PAGE_STAFF}: the page ended without an answer (goal status {wrapped.status})')
        return wrapped.result

    def _rtls_entry(self, hcw_id: str) -> dict | None:
        """Return the RTLS's entry for ``hcw_id`` (as :meth:`locate` gives it); None if it cannot say."""
        try:
            staff = self.locate(LocateStaffInput(hcw_ids=[hcw_id]))['staff']
        except ToolError:
            return None
        return next((s for s in staff if s['hcw_id'] == hcw_id), None)

    def observe(self, fact: WorldFact, task: TaskFacts, until) -> dict:
        """Return what the RTLS shows of ``fact`` (:attr:`WorldFact.HCW_AT_ROOM`) for ``task``.

        ``{hcw_id, room, located: {area, x, y} | None, door: {x, y}, entry: {x, y}}``: where the RTLS
        sees the task's HCW, and the room's door (corridor approach) and entry pose from the floor
        description (``map``, m); asked again as ROS time passes until ``until`` holds of it, at
        most :data:`~robot_team.catalog.OBSERVE_WAIT_S` (the HCW steps in behind the robot).

        Raises
        ------
        ValueError
            If ``fact`` is not one this role observes.
        ConfigError
            If the task's room is not on the floor.
        """
        check_declared_fact(NAVIGATION_ROLE, fact)
        room = self._world.room(task.room)
        place = {'hcw_id': task.hcw_id, 'room': task.room, 'door': {'x': room.door.x, 'y': room.door.y},
                 'entry': {'x': room.entry.x, 'y': room.entry.y}}
        return watch_ros_time(self._node, lambda: {**place, 'located': self._where(task.hcw_id) or None},
                              until, OBSERVE_WAIT_S)

    def _where(self, hcw_id: str) -> dict:
        """Return where the RTLS sees ``hcw_id`` now (``area``, ``x``, ``y`` in ``map``, m); {} if it cannot say."""
        entry = self._rtls_entry(hcw_id)
        return {k: entry[k] for k in ('area', 'x', 'y')} if entry is not None else {}

    def _available_like(self, hcw_id: str) -> list[dict]:
        """Return the HCWs of ``hcw_id``'s specialty the RTLS finds available (``hcw_id``, ``area``); [] if none."""
        specialty = (self._rtls_entry(hcw_id) or {}).get('specialty', '')
        if not specialty:
            return []
        try:
            others = self.locate(LocateStaffInput(specialty=specialty))['staff']
        except ToolError:
            return []
        return [{'hcw_id': s['hcw_id'], 'area': s['area']} for s in others
                if s['hcw_id'] != hcw_id and s['availability'] == 'available']

    @implements(Tool.ROOM_DOOR_POSE)
    def door_pose(self, args: RoomInput) -> dict:
        """Return the pose just inside ``room``'s door (x, y, yaw) and the corridor approach ('door'); m, rad, 'map'."""
        try:
            room = self._world.room(args.room)
        except ConfigError as exc:
            raise ToolError(str(exc)) from exc
        d, e = room.door, room.entry
        return {'room': room.name, 'x': round(e.x, 3), 'y': round(e.y, 3), 'yaw': round(e.yaw, 4),
                'door': {'x': round(d.x, 3), 'y': round(d.y, 3), 'yaw': round(d.yaw, 4)}}

    @implements(Tool.PLAN_PATH)
    def plan(self, args: PlanPathInput) -> dict:
        """Plan with Nav2's planner server; return length_m, a few waypoints and the areas crossed (m, 'map')."""
        if args.start_x is None or args.start_y is None:
            # A node that just started may not have its first pose yet: wait like a TF lookup with a timeout.
            start = self.pose.get(POSE_WAIT_S)[:2]
            path = self.planner.plan((args.goal_x, args.goal_y))
        else:
            start = (args.start_x, args.start_y)
            path = self.planner.plan((args.goal_x, args.goal_y), start)
        step = max(1, len(path) // 8)
        waypoints = [[round(float(x), 2), round(float(y), 2)] for x, y in path[::step]]
        waypoints.append([round(float(path[-1][0]), 2), round(float(path[-1][1]), 2)])
        areas: list[str] = []
        for x, y in path[::max(1, len(path) // 40)]:
            area = self._world.room_at(float(x), float(y))
            if area and (not areas or areas[-1] != area):
                areas.append(area)
        length = sum(math.dist(a, b) for a, b in zip(path, path[1:]))
        return {'start': [round(start[0], 2), round(start[1], 2)], 'goal': [args.goal_x, args.goal_y],
                'length_m': round(float(length), 2), 'waypoints': waypoints, 'areas': areas}

    @implements(Tool.NAVIGATE_TO_POSE)
    def navigate(self, args: NavigateInput) -> dict:
        """Drive there through navigate_to_pose; return the Nav2 goal result (evidence).

        A goal that aborts or is cancelled is a tool failure whose message names the Nav2
        error code; the full result is still in the journal as the tool's output.
        """
        result = self.nav.go_to(args.x, args.y, args.yaw, timeout_s=args.timeout_s)
        evidence = result.as_dict()
        if result.outcome is not NavOutcome.SUCCEEDED:
            raise NavigationFailed(evidence)
        return evidence

    def distance_to(self, x: float, y: float) -> float | None:
        """Return the straight-line distance (m) from the robot to (x, y), if its pose is known."""
        pose = self.pose.latest()
        if pose is None:
            return None
        return math.hypot(pose[0] - x, pose[1] - y)


class NavigationFailed(ToolError):
    """A navigate_to_pose goal that did not succeed; ``evidence`` holds the Nav2 result."""

    def __init__(self, evidence: dict):
        super().__init__(
            f"{names.NAVIGATE_TO_POSE} {evidence['outcome']}: error {evidence['error_code']} "
            f"({evidence['error_name']}) {evidence['error_msg']}".strip(), output=evidence)
