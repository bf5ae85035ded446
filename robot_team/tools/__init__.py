"""Robot tools: each wraps a real ROS interface and belongs to exactly one robot."""
