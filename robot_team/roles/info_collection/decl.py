"""The info-collection role's declaration: its tools' schemas, what their outputs prove, and the role.

The info-collection robot reads the badge scan at the room's door, looks the badge up in the staff
directory (the HCW's ID, name and specialty) and records the HCW's check-in. Its tools are
implemented by :class:`robot_team.roles.info_collection.tools.InfoCollectionTools`, its protocol
brain is :class:`robot_team.roles.info_collection.protocol.InfoCollectionProtocolBrain`;
:mod:`robot_team.catalog` gathers :data:`INFO_COLLECTION_TOOLS` and :data:`INFO_COLLECTION_ROLE`
with the other roles'.

At the bottom layer (contracts), below the catalog: it imports only :mod:`robot_team.roles.base`,
:mod:`robot_team.contracts.names`, :mod:`robot_team.contracts.reports` and pydantic.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, Field

from robot_team.contracts.names import Role, Tool
from robot_team.contracts.reports import TaskType
from robot_team.roles.base import ClosedSet, Proof, RoleDecl, RubricUse, ToolDecl, ToolOutput, WorldFact


# --- Input schemas (validation and LLM schema; the docstring is the tool's description) ------

class ReadBadgeScanInput(BaseModel):
    """Read the latest badge scan at a room's door reader (waits for one)."""

    room: str = Field(min_length=1)
    timeout_s: float = Field(120.0, gt=0, le=900, description='How long to wait for a scan, s.')
    max_age_s: float = Field(600.0, gt=0, description='Ignore scans older than this, s.')


class BadgeInput(BaseModel):
    """Look up a badge's HCW in the staff directory."""

    badge_id: str = Field(min_length=1, description='As scanned')


class CheckInInput(BaseModel):
    """Record an HCW's check-in at a room (joins its care team)."""

    room: str = Field(min_length=1)
    hcw_id: str = Field(min_length=1)
    badge_id: str = Field(min_length=1)


# --- Output schemas (what a successful call returns; extra fields are allowed) ----------------

class BadgeScanOutput(ToolOutput):
    """A badge scan at a door reader (stamp in sim s)."""

    badge_id: str
    reader_id: str
    room: str
    stamp_s: float


class StaffRecordOutput(ToolOutput):
    """An HCW's staff directory record."""

    hcw_id: str
    badge_id: str
    name: str
    specialty: str
    role: str


class CheckInOutput(ToolOutput):
    """A check-in as written to the staff directory (stamp in sim s)."""

    room: str
    hcw_id: str
    badge_id: str
    stamp_s: float


# --- Tools ------------------------------------------------------------------------------------

def _badge_of_another_hcw(args: Mapping[str, Any], output: Mapping[str, Any], hcw_id: str) -> str:
    """The scanned badge belongs to another HCW than the task's."""
    found = str(output.get('hcw_id') or '')
    if hcw_id and found and found != hcw_id:
        return f"badge {output.get('badge_id', args.get('badge_id', '?'))} belongs to HCW #{found}, not #{hcw_id}"
    return ''


INFO_COLLECTION_TOOLS: tuple[ToolDecl, ...] = (
    ToolDecl(Tool.READ_BADGE_SCAN, Role.INFO_COLLECTION, TaskType.INFO_COLLECTION, ReadBadgeScanInput,
             BadgeScanOutput, evidence=True, key=True, closed=(('room', ClosedSet.TASK_ROOM),),
             closes=((ClosedSet.SCANNED_BADGE, 'badge_id'),),
             proof=Proof('the HCW badged in at the door', required=True, missing='no badge scan was read')),
    ToolDecl(Tool.LOOKUP_STAFF_BY_BADGE, Role.INFO_COLLECTION, TaskType.INFO_COLLECTION, BadgeInput,
             StaffRecordOutput, evidence=True, rubric=RubricUse.IDENTITY, requires=(Tool.READ_BADGE_SCAN,),
             final=True, closed=(('badge_id', ClosedSet.SCANNED_BADGE),),
             negative=_badge_of_another_hcw,
             proof=Proof("the scanned badge is the escorted HCW's", required=True,
                         missing='no badge was found in the staff directory', task_hcw_key='hcw_id',
                         claim_keys=('hcw_id', 'name', 'specialty'))),
    ToolDecl(Tool.RECORD_CHECK_IN, Role.INFO_COLLECTION, TaskType.INFO_COLLECTION, CheckInInput, CheckInOutput,
             evidence=True,
             closed=(('room', ClosedSet.TASK_ROOM), ('hcw_id', ClosedSet.TASK_HCW),
                     ('badge_id', ClosedSet.SCANNED_BADGE)),
             requires=(Tool.LOOKUP_STAFF_BY_BADGE,),
             proof=Proof("the directory recorded the HCW's check-in at the room", required=True,
                         missing='the check-in was never recorded')),
)
"""The info-collection robot's tools, in the order they are offered."""


# --- The role ---------------------------------------------------------------------------------

def _truth(evidence: Mapping[str, Any]) -> str:
    scan_item, who_item = evidence.get(Tool.READ_BADGE_SCAN.value), evidence.get(Tool.LOOKUP_STAFF_BY_BADGE.value)
    if not (scan_item or who_item):
        return ''
    scan, who = (scan_item or {}).get('output') or {}, (who_item or {}).get('output') or {}
    return f"badge {scan.get('badge_id', '?')} -> {who.get('name', 'not found')}"


INFO_COLLECTION_ROLE = RoleDecl(
    Role.INFO_COLLECTION, TaskType.INFO_COLLECTION, _truth,
    tuple((key, f'from {Tool.LOOKUP_STAFF_BY_BADGE.value}') for key in ('hcw_id', 'name', 'specialty')),
    world=(WorldFact.CHECKED_IN,), needs_hcw=True)
"""The info-collection robot's role: identify the HCW who badged in at the room and check them in."""
