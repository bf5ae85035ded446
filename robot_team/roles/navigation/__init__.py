"""The navigation role: locate and page the task's HCW, escort them to the room (``decl``, ``tools``, ``protocol``)."""
