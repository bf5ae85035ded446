"""The nodes of one episode: which must start, with what parameters, and how each is started.

:class:`EpisodeNodes` is an episode's node plan on top of :mod:`robot_team.nodes_plan` (the team's
nodes and their parameters): the simulator's two nodes (``hospital_systems``; ``motion_sim``, the
clock source, started paused), the optional FHIR gateway, and either the node objects of an
in-process episode (:meth:`EpisodeNodes.make`) or the ``python -m <module>`` command of each
node of an episode with one process per node (:meth:`EpisodeNodes.commands`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rclpy.parameter import Parameter

from robot_team.agents.fhir_gateway_node import FhirGatewayNode
from robot_team.agents.manager_node import ManagerNode
from robot_team.agents.operator_node import ScriptedOperatorNode
from robot_team.agents.robot_node import RobotNode
from robot_team.agents.supervisor_node import SupervisorNode
from robot_team.contracts.config import Scenario
from robot_team.contracts.names import FHIR_GATEWAY, HOSPITAL_SYSTEMS, MOTION_SIM, OPERATOR, SUPERVISOR, Role, role_name
from robot_team.nodes_plan import SIM_NODES, hospital_readers, node_parameters, team_nodes
from robot_team.sim.hospital_node import HospitalSystemsNode
from robot_team.sim.motion_node import MotionSimNode

TEAM_MODULES = {SUPERVISOR: ['robot_team.agents.supervisor_node'], OPERATOR: ['robot_team.agents.operator_node'],
                Role.MANAGER.value: ['robot_team.agents.manager_node']}
"""``python -m`` arguments of the team's nodes other than the robots (``robot_node <role>``)."""
SIM_MODULES = {HOSPITAL_SYSTEMS: 'robot_team.sim.hospital_node', MOTION_SIM: 'robot_team.sim.motion_node'}
"""The module that runs each simulator node."""


@dataclass
class EpisodeNodes:
    """The nodes of an episode of ``scenario`` and their parameters.

    ``brain_options`` (the manager's and robots' extra ROS parameters) is read when the nodes are
    made, so that what the LLM endpoint adds once started reaches them. ``processes``: one process
    per node (the hospital's systems then keep a checkpoint to restart from). The clock settings
    (``real_time_factor``, ``llm_clock``, ``clock``, ``jump_ahead``) go to ``motion_sim``;
    ``fhir_port`` (0: none) and ``fhir_host`` to the FHIR gateway.
    """

    scenario: Scenario
    brain: str
    brain_options: dict = field(default_factory=dict)
    processes: bool = False
    real_time_factor: float = 0.0
    llm_clock: str = 'realtime'
    clock: str = 'follow'
    jump_ahead: bool = True
    fhir_port: int = 0
    fhir_host: str = '127.0.0.1'

    def gateways(self) -> list[str]:
        """Return the optional nodes of this episode that must start with the team ([``fhir_gateway``] or none)."""
        return [FHIR_GATEWAY] if self.fhir_port else []

    def expected(self) -> set[str]:
        """Return the name of every node that must start: the team, the simulator, the gateways."""
        return set(team_nodes(self.scenario) + SIM_NODES + self.gateways())

    def gateway_parameters(self, paths: dict) -> dict:
        """Return the ROS parameters of the FHIR gateway (``fhir_gateway``): address, floor, staff directory, record."""
        return {'use_sim_time': True, 'fhir_port': self.fhir_port, 'fhir_host': self.fhir_host,
                'floor': paths['floor'], 'staff_db': paths['staff_db'], 'state_db': paths['fhir_db']}

    def sim_parameters(self, name: str, paths: dict) -> dict:
        """Return the ROS parameters of simulator node ``name`` (``hospital_systems`` or ``motion_sim``).

        ``motion_sim`` starts paused and waits for a ``/clock`` subscription from every node that
        runs on sim time (the team, the recorder, ``hospital_systems``);
        :class:`robot_team.run.clock.ClockControl` lets it go once they are all up.
        """
        if name == HOSPITAL_SYSTEMS:   # a checkpoint of the floor where its process may die and restart
            return {'scenario': paths['scenario'], 'use_sim_time': True, 'robots': self.scenario.robots,
                    'state_file': paths['hospital_state'] if self.processes else '',
                    **hospital_readers(self.scenario)}
        return {'scenario': paths['scenario'], 'real_time_factor': float(self.real_time_factor), 'paused': True,
                'robots': self.scenario.robots,
                'min_clock_subscribers': len(team_nodes(self.scenario)) + 2, 'llm_clock': self.llm_clock,
                'min_clock_followers': len(team_nodes(self.scenario)) + 1,   # the team and hospital_systems
                'clock_mode': self.clock, 'jump_ahead': self.jump_ahead}

    def make(self, context, paths: dict) -> list:
        """Return the episode's nodes, made in this process on ``context`` (in-process mode), the simulator last."""

        def overrides(name):
            params = node_parameters(name, self.scenario, paths, self.brain, self.brain_options)
            params.pop('scenario', None)
            # no manager record in one process: it cannot die and restart alone (as hospital systems' state_file)
            params.pop('state_db', None)
            return [Parameter(k, value=v) for k, v in params.items()]
        nodes = [SupervisorNode(self.scenario, context=context, parameter_overrides=overrides(SUPERVISOR)),
                 ScriptedOperatorNode(self.scenario, context=context, parameter_overrides=overrides(OPERATOR))]
        for robot in self.scenario.robots:
            nodes.append(RobotNode(role_name(robot), robot=robot, context=context,
                                   parameter_overrides=overrides(robot)))
        nodes.append(ManagerNode(context=context, parameter_overrides=overrides(Role.MANAGER.value)))
        if self.fhir_port:
            nodes.append(FhirGatewayNode(context=context, parameter_overrides=[
                Parameter(k, value=v) for k, v in self.gateway_parameters(paths).items()]))
        sim = {name: [Parameter(k, value=v) for k, v in self.sim_parameters(name, paths).items() if k != 'scenario']
               for name in SIM_NODES}
        nodes.append(HospitalSystemsNode(self.scenario, context=context, parameter_overrides=sim[HOSPITAL_SYSTEMS]))
        nodes.append(MotionSimNode(self.scenario, context=context, parameter_overrides=sim[MOTION_SIM]))
        return nodes

    def commands(self, paths: dict) -> list[tuple[str, list[str], dict]]:
        """Return ``(node, argv, parameters)`` of each node's own process (``python -m <module>``), in start order.

        The team first, then the simulator, then the FHIR gateway (whose bearer token reaches it
        through the environment, never a parameter).
        """
        out = []
        for name in team_nodes(self.scenario):
            argv = TEAM_MODULES.get(name, ['robot_team.agents.robot_node', role_name(name)])
            out.append((name, [sys.executable, '-m', *argv],
                        node_parameters(name, self.scenario, paths, self.brain, self.brain_options)))
        for name in SIM_NODES:
            out.append((name, [sys.executable, '-m', SIM_MODULES[name]], self.sim_parameters(name, paths)))
        if self.fhir_port:
            out.append((FHIR_GATEWAY, [sys.executable, '-m', 'robot_team.agents.fhir_gateway_node'],
                        self.gateway_parameters(paths)))
        return out
