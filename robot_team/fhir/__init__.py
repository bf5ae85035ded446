"""The team's door to the hospital's systems: FHIR Encounter notifications in (no rclpy).

- :mod:`robot_team.fhir.encounters`: parse a FHIR R5 ``subscription-notification`` Bundle (or an
  R4/R4B Subscriptions Backport ``history`` Bundle, or a bare Encounter) with ``fhir.resources``
  and map each emergency Encounter to a patient's arrival, or to the end of their case;
- :mod:`robot_team.fhir.gateway`: who may send (loopback, or a bearer token), repeats, and the
  HTTP answers (``OperationOutcome`` s), with the ROS side injected;
- :mod:`robot_team.fhir.server`: the HTTP endpoint (the standard library's threading server).

The node that wires them to ROS is :mod:`robot_team.agents.fhir_gateway_node`.
"""
