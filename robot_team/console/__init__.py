"""The supervisor console: presenter (no Qt), ROS client, Qt widget, rqt plugin, standalone app."""
