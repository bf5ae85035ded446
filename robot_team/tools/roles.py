"""Each operational role's tools class: the catalog's roles bound to their implementations.

:data:`robot_team.catalog.ROLES` declares the roles and :mod:`robot_team.tools.navigation`,
:mod:`~robot_team.tools.info` and :mod:`~robot_team.tools.display` implement their tools, each
importing the catalog. This module sits above both and joins them with plain imports, so the
edge from a role to its class is one the import contracts see (``test/test_layers.py``).
``robot_team.agents.robot_node`` binds the class to its node.

Each class has a ``from_node(node, callback_group)`` classmethod (reads its node's parameters)
and its tools as methods marked with :func:`robot_team.catalog.implements`.
"""

from __future__ import annotations

from robot_team.catalog import RoleDecl
from robot_team.names import Robot
from robot_team.tools.display import DisplayTools
from robot_team.tools.info import InfoCollectionTools
from robot_team.tools.navigation import NavigationTools

IMPLEMENTATIONS: dict[Robot, type] = {
    Robot.NAVIGATION: NavigationTools,
    Robot.INFO_COLLECTION: InfoCollectionTools,
    Robot.DISPLAY: DisplayTools,
}
"""Operational role -> the class that implements its tools (one per role of :data:`robot_team.catalog.ROLES`)."""


def implementation_class(role: RoleDecl) -> type:
    """Return the class that implements the tools of ``role`` (see :data:`IMPLEMENTATIONS`)."""
    return IMPLEMENTATIONS[role.robot]
