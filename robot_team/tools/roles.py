"""Each operational role's tools class: the catalog's roles bound to their implementations.

:data:`robot_team.catalog.ROLES` gathers the roles' declarations and each role's package
implements its tools (:mod:`robot_team.roles.navigation.tools`,
:mod:`~robot_team.roles.info_collection.tools`, :mod:`~robot_team.roles.display.tools`), each
importing the catalog. This module sits above both and joins them with plain imports, so the
edge from a role to its class is one the import contracts see (``test/test_layers.py``).
``robot_team.agents.robot_node`` binds the class to its node.

Each class has a ``from_node(node, callback_group)`` classmethod (reads its node's parameters)
and its tools as methods marked with :func:`robot_team.catalog.implements`.
"""

from __future__ import annotations

from robot_team.catalog import RoleDecl
from robot_team.contracts.names import Role
from robot_team.roles.display.tools import DisplayTools
from robot_team.roles.info_collection.tools import InfoCollectionTools
from robot_team.roles.navigation.tools import NavigationTools

IMPLEMENTATIONS: dict[Role, type] = {
    Role.NAVIGATION: NavigationTools,
    Role.INFO_COLLECTION: InfoCollectionTools,
    Role.DISPLAY: DisplayTools,
}
"""Operational role -> the class that implements its tools (one per role of :data:`robot_team.catalog.ROLES`)."""


def implementation_class(role: RoleDecl) -> type:
    """Return the class that implements the tools of ``role`` (see :data:`IMPLEMENTATIONS`)."""
    return IMPLEMENTATIONS[role.role]
