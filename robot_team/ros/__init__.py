"""ROS 2 helpers the team's nodes share: the layer between the nodes and the rclpy-free rules.

Each module wraps one rclpy concern: :mod:`~robot_team.ros.util` (futures, services, spinning a node
as a program), :mod:`~robot_team.ros.executor` (the in-process team's executor), :mod:`~robot_team.ros.spin`
(spinning an executor on a thread without losing what ends the spin),
:mod:`~robot_team.ros.action_client` (an action client whose goal futures always complete),
:mod:`~robot_team.ros.emitter` (a node's event emitter), :mod:`~robot_team.ros.messages` (the team's
messages to and from their models), :mod:`~robot_team.ros.stamps` (ROS time stamps),
:mod:`~robot_team.ros.clock` (following the team's clock), :mod:`~robot_team.ros.liveness` (watching
nodes' liveliness), :mod:`~robot_team.ros.scene` and :mod:`~robot_team.ros.markers` (the floor as
messages and RViz markers). Nothing here imports a node, the simulator or the runner.
"""
