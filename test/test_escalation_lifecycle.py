"""The one escalation model's lifecycle: the transition table and the one function that applies it."""

import pytest

from robot_team.core.escalations import TRANSITIONS as REEXPORTED
from robot_team.contracts.escalation_model import (
    TRANSITIONS, EscalationRecord, LifecycleAction, LifecycleError, LifecycleState, transition)

OPEN, ACKNOWLEDGED = LifecycleState.OPEN, LifecycleState.ACKNOWLEDGED
RESOLVED, EXPIRED = LifecycleState.RESOLVED, LifecycleState.EXPIRED
ACKNOWLEDGE, RESOLVE, EXPIRE = LifecycleAction.ACKNOWLEDGE, LifecycleAction.RESOLVE, LifecycleAction.EXPIRE

ALLOWED = {
    (OPEN, ACKNOWLEDGE): ACKNOWLEDGED,
    (OPEN, RESOLVE): RESOLVED,
    (OPEN, EXPIRE): EXPIRED,
    (ACKNOWLEDGED, RESOLVE): RESOLVED,
    (ACKNOWLEDGED, EXPIRE): EXPIRED,
}


def test_the_table_is_open_acknowledged_resolved_or_expired():
    assert TRANSITIONS == ALLOWED
    assert REEXPORTED is TRANSITIONS


@pytest.mark.parametrize(('state', 'action'), sorted(ALLOWED, key=str))
def test_every_allowed_transition(state, action):
    record = EscalationRecord(escalation_id='esc-3', state=state)
    assert transition(record, action) is ALLOWED[state, action]
    assert record.state is ALLOWED[state, action]
    assert record.is_open == (record.state in (OPEN, ACKNOWLEDGED))
    assert record.status == ('open' if record.is_open else 'resolved')


DISALLOWED = [(s, a) for s in LifecycleState for a in LifecycleAction if (s, a) not in ALLOWED]


def test_every_other_transition_is_disallowed():
    assert (RESOLVED, ACKNOWLEDGE) in DISALLOWED and (ACKNOWLEDGED, ACKNOWLEDGE) in DISALLOWED
    assert len(DISALLOWED) == len(LifecycleState) * len(LifecycleAction) - len(ALLOWED)


@pytest.mark.parametrize(('state', 'action'), DISALLOWED, ids=lambda v: v.value)
def test_a_disallowed_transition_raises_and_changes_nothing(state, action):
    record = EscalationRecord(escalation_id='esc-7', state=state)
    with pytest.raises(LifecycleError) as caught:
        transition(record, action)
    assert record.state is state
    message = str(caught.value)
    assert 'esc-7' in message and state.value in message and action.value in message


def test_resolved_cannot_be_acknowledged():
    record = EscalationRecord(escalation_id='esc-1', raised_by='manager', reason='door closed')
    transition(record, 'resolve')
    with pytest.raises(LifecycleError, match=r'escalation esc-1 is resolved: cannot acknowledge it'):
        transition(record, 'acknowledge')
    assert record.state is RESOLVED


def test_an_unknown_action_is_refused():
    record = EscalationRecord(escalation_id='esc-1')
    with pytest.raises(ValueError):
        transition(record, 'reopen')
    assert record.state is OPEN
