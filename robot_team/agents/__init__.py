"""The team members as ROS 2 nodes: manager, robots, supervisor, scripted operator."""
