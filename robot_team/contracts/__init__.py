"""The team's contracts: the names, data and rules every layer above shares, with no ROS and no I/O of the team's own.

:mod:`~robot_team.contracts.names` (ROS names, roles, tools), :mod:`~robot_team.contracts.config`
(scenarios, deadlines, staff: validated settings), :mod:`~robot_team.contracts.errors`,
:mod:`~robot_team.contracts.reports` (task reports, task types), :mod:`~robot_team.contracts.events`
(the event record's data), :mod:`~robot_team.contracts.decisions`,
:mod:`~robot_team.contracts.escalation_model` (one escalation and its lifecycle),
:mod:`~robot_team.contracts.cases` (a shift's cases in order), :mod:`~robot_team.contracts.floor`
(the floor description), :mod:`~robot_team.contracts.scene` (the floor as shapes),
:mod:`~robot_team.contracts.geometry`, :mod:`~robot_team.contracts.nav2_codes` (Nav2's error codes),
:mod:`~robot_team.contracts.clock_sync` (the follow clock's rules) and
:mod:`~robot_team.contracts.liveness` (who is lost and back). The bottom layer of
``setup.cfg``'s layers contract: nothing here imports another robot_team package.
"""
