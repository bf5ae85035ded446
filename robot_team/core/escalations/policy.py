"""The escalation policy: who may decide, deadlines per severity, re-notification, the safe default.

Loaded from ``config/escalations.yaml`` by :func:`load_escalation_policy`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from robot_team.contracts.config import _validate, load_yaml, share_dir
from robot_team.contracts.escalation_model import Severity


class SeverityBySource(BaseModel):
    """Default severity of escalations by who raised them (stop-and-hold is always critical)."""

    model_config = ConfigDict(extra='forbid')
    manager: Severity = Severity.HIGH
    supervisor: Severity = Severity.HIGH
    concern: Severity = Severity.NORMAL


class EscalationPolicy(BaseModel):
    """Who may decide, how long escalations wait, and what happens when nobody answers.

    Loaded from ``config/escalations.yaml`` by :func:`load_escalation_policy`. Times are ROS
    time, s.
    """

    model_config = ConfigDict(extra='forbid')
    operators: list[str] = Field(min_length=1, description='Operator IDs allowed to acknowledge, resolve and '
                                                           'instruct.')
    deadlines_s: dict[Severity, float] = Field(
        default_factory=lambda: {Severity.CRITICAL: 120.0, Severity.HIGH: 300.0, Severity.NORMAL: 600.0},
        description='Time from opening to expiry per severity, s (hold escalations never expire).')
    renotify_s: float = Field(30.0, gt=0, description='Re-announce an unacknowledged escalation this often, s.')
    on_expiry: Literal['hold', 'abort'] = Field('hold', description='The safe default when an escalation expires.')
    severity: SeverityBySource = Field(default_factory=SeverityBySource)

    @field_validator('operators')
    @classmethod
    def _no_blank_operator(cls, value: list[str]) -> list[str]:
        ids = [str(v).strip() for v in value]
        if any(not v for v in ids):
            raise ValueError('operator IDs must not be empty')
        return ids

    @field_validator('deadlines_s')
    @classmethod
    def _every_severity(cls, value: dict) -> dict:
        missing = [s.value for s in Severity if s not in value]
        if missing:
            raise ValueError(f"missing deadline(s) for severity {', '.join(missing)}")
        bad = [f'{k.value}: {v}' for k, v in value.items() if not v > 0]
        if bad:
            raise ValueError(f"deadlines must be positive seconds ({', '.join(bad)})")
        return value

    def authorised(self, operator_id: str) -> bool:
        """Return whether ``operator_id`` may acknowledge, resolve and instruct."""
        return str(operator_id or '').strip() in self.operators

    def unauthorised_message(self, operator_id: str, what: str) -> str:
        """Return the refusal for an operator who may not ``what`` (names who may)."""
        who = str(operator_id or '').strip()
        return (f"operator {who!r} is not authorised to {what}; authorised operators: {', '.join(self.operators)} "
                f"(escalation policy, config/escalations.yaml)" if who else
                f"{what} needs an operator_id; authorised operators: {', '.join(self.operators)}")


def load_escalation_policy(path: str | os.PathLike | None = None) -> EscalationPolicy:
    """Load the escalation policy from ``path`` (default ``config/escalations.yaml``).

    Raises
    ------
    ConfigError
        If the file is missing, not YAML, or does not validate (the message names the field).
    """
    path = Path(path) if path else share_dir() / 'config' / 'escalations.yaml'
    return _validate(EscalationPolicy, load_yaml(path, 'escalation policy'), path, 'escalation policy')
