"""The run layer: one episode of the team on the embedded simulator, from start to report.

- :mod:`~robot_team.run.episode`: :class:`~robot_team.run.episode.Episode`,
  :func:`~robot_team.run.episode.run_episode` and its :class:`~robot_team.run.episode.RunResult`;
- :mod:`~robot_team.run.nodes`: the episode's nodes, their parameters, made in-process or as commands;
- :mod:`~robot_team.run.processes`: one process per node: start, watch, restart, measure, stop;
- :mod:`~robot_team.run.restarts`: the restart policy and the team's Fast DDS profile (rclpy-free,
  shared with the launch files' respawn);
- :mod:`~robot_team.run.waits`: waiting for the team to start, then for the episode's end;
- :mod:`~robot_team.run.clock`: resuming the sim clock, the wall-time bound, the clock's report;
- :mod:`~robot_team.run.llm_endpoint`: brain kinds, the local or chance LLM endpoint and its report;
- :mod:`~robot_team.run.dds`: localhost DDS discovery and the team namespace's ROS arguments;
- :mod:`~robot_team.run.lifecycle`: signals, the orderly teardown, exit codes.

This ``__init__`` imports nothing: :mod:`robot_team.bringup` loads :mod:`robot_team.run.restarts`
without the nodes and the simulator that an episode imports.
"""
