"""The operational roles, each a vertical slice: its declaration, its tools and its protocol brain.

One package per role (``navigation``, ``info_collection``, ``display``), each with three modules at
three layers (``setup.cfg``, ``[importlinter]``):

- ``decl``: the role's declaration (contracts): its tools' input and output schemas, their
  :class:`~robot_team.roles.base.ToolDecl` (what an output proves, what it shows against the task),
  the role's :class:`~robot_team.roles.base.RoleDecl` and its truth; :mod:`robot_team.catalog`
  gathers the three roles' declarations;
- ``tools``: the class that implements the role's tools on its robot's node (tools layer), bound
  to the role by :mod:`robot_team.tools.roles`;
- ``protocol``: the role's protocol brain (brains layer), returned by
  :func:`robot_team.brains.protocol.protocol_robot_brain`.

:mod:`robot_team.roles.base` holds what the declarations are made of. The role packages import
nothing of each other, and their ``__init__`` modules nothing at all: importing a declaration
never loads a role's tools or brain.
"""
