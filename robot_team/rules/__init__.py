"""The rules layer: the checks every decision passes through, whatever brain made it.

A brain (:mod:`robot_team.brains`, an LLM's or a role's protocol) proposes; these rules decide
what of it the team accepts. Pure logic, no ROS:

- :mod:`~robot_team.rules.grounding`: a claimed success grounded in the world (the catalog's
  proofs and world facts), at the robot and again at the manager;
- :mod:`~robot_team.rules.guards`: the manager-side guards (a report checked against what the
  robot fetched, the reflection against the record, lost robots);
- :mod:`~robot_team.rules.workflow`: the ED workflow the supervisor enforces: its gate, deadlines
  and escalations.
"""
