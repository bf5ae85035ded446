"""The embedded ED-floor simulator: world, occupancy grid, engine, ROS node."""
