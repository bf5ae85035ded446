"""The info-collection role: identify the HCW at the room's door, check them in (``decl``, ``tools``, ``protocol``)."""
