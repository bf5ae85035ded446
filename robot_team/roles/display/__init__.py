"""The display role: show the room's care team on its screen (``decl``, ``tools``, ``protocol``)."""
