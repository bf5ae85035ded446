"""The team core: the manager's, the robots' and the supervisor's loops, with no rclpy in them.

Each role's logic lives here once, with the ROS side injected (as rai injects a connector into
its tools): :class:`~robot_team.core.manager.ManagerCore` talks to the team through
:class:`~robot_team.core.manager_ports.ManagerPorts` (authorise, escalate, send a task, submit the
reflection), :class:`~robot_team.core.robot.RobotCore` runs one task with the robot's toolbox
and builds its grounded report, :class:`~robot_team.core.supervisor.SupervisorCore` gates
delegations, records reports and runs deadlines. The ROS 2 nodes in ``robot_team.agents`` are
thin wiring over these classes; the tests' in-memory team (``test/team_harness.py``) wires the same
classes to each other in memory. Every decision is an event through an injected ``emit``
(:meth:`robot_team.ros.emitter.EventEmitter.emit`'s signature).

Each loop composes collaborators kept beside it: the manager's cases and their lanes
(``manager_cases``), its guard feedback to the brain (``manager_feedback``), the check of a
finished task's report (``manager_results``) and the reflection step with the lessons kept
(``manager_reflection``); the supervisor's book of cases (``supervisor_cases``), its stored state
(``supervisor_state``), deadlines as events (``supervisor_deadlines``), safe-default directives
(``supervisor_directives``) and the reports it parses or closes itself (``supervisor_reports``).
"""
