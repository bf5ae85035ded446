"""Bringup: what Gazebo, Nav2 and ``ros2 launch`` need, derived from the floor description and names.

- :mod:`~robot_team.bringup.platform`: the mobile robots' platform (footprint, speeds, lidar).
- :mod:`~robot_team.bringup.gazebo`: the world's systems, robot models (SDFormat), ros_gz_bridge
  configuration.
- :mod:`~robot_team.bringup.nav2`: Nav2 parameters per robot namespace, the map for map_server.
- :mod:`~robot_team.bringup.plan`: what each launch file starts, as plain data (checked before
  anything starts); ``launch/*.launch.py`` turn it into launch actions.
- :mod:`~robot_team.bringup.episode`: the episode's end for ``ros2 launch`` (record and report.json).

No import of ``robot_team.sim``, ``robot_team.run`` (but its rclpy-free :mod:`robot_team.run.restarts`:
the restart defaults and DDS profile launch's respawn shares) or the nodes (``robot_team.agents``),
not even indirectly (a contract of ``setup.cfg``): the launch files run on machines (physical
robots) where the simulator is not used. What the team's nodes are and their parameters come from
:mod:`robot_team.nodes_plan`, below the runner. rclpy is imported
(through :mod:`robot_team.tools.localization` and :mod:`robot_team.llm.lockstep`, for their
names): a physical robot has ROS 2 installed; :mod:`~robot_team.bringup.episode` is a node.
"""
