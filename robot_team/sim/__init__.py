"""The embedded ED-floor simulator: robot motion (Gazebo + Nav2 stand-in) and the hospital's systems.

Two rclpy-free engines (:mod:`~robot_team.sim.motion`, :mod:`~robot_team.sim.hospital`), each
wrapped by a thin node (``motion_sim``, ``hospital_systems``); the floor (:mod:`~robot_team.sim.world`)
and its occupancy grid (:mod:`~robot_team.sim.grid`). Robot-side modules never import this package.
"""
