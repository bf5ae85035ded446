"""``$N.path`` references between the tool calls of one LLM reply (pure logic)."""

import pytest

from robot_team.llm.references import CallReferenceError, has_reference, resolve

OUTPUTS = {1: {'badge_id': 'ED-0090', 'staff': [{'hcw_id': '90', 'x': 22.0, 'y': 3.5}]},
           2: {'hcw_id': '90', 'name': 'Dr. Lucas Brennan'}}
NAMES = {1: 'read_badge_scan', 2: 'lookup_staff_by_badge', 3: 'record_check_in'}


def test_a_whole_reference_keeps_the_type_and_text_references_are_interpolated():
    args = {'badge_id': '$1.badge_id', 'x': '$1.staff.0.x', 'who': '$2', 'note': 'HCW #$2.hcw_id $2.name, done.',
            'ids': ['$2.hcw_id', 'plain'], 'n': 3}
    out = resolve(args, OUTPUTS, NAMES)
    assert out == {'badge_id': 'ED-0090', 'x': 22.0, 'who': OUTPUTS[2], 'note': 'HCW #90 Dr. Lucas Brennan, done.',
                   'ids': ['90', 'plain'], 'n': 3}
    assert isinstance(out['x'], float)


def test_arguments_without_references_pass_through_unchanged():
    args = {'room': 'ER-12', 'message': 'costs nothing', 'timeout_s': 30.0}
    assert resolve(args, {}, NAMES) == args and not has_reference(args)
    assert has_reference({'a': ['x', {'b': '$1.badge_id'}]})


@pytest.mark.parametrize('ref, expected', [
    ('$3.hcw_id', 'call 3 has not run successfully before this one'),
    ('$2.specialty', "$2 (lookup_staff_by_badge) has no 'specialty' (it has keys hcw_id, name)"),
    ('$1.staff.4.x', "$1.staff (read_badge_scan) has no '4' (it has 1 items)"),
    ('$1.badge_id.more', "$1.badge_id (read_badge_scan) has no 'more' (it has str)"),
])
def test_a_bad_reference_names_itself_and_what_exists(ref, expected):
    with pytest.raises(CallReferenceError) as err:
        resolve({'v': ref}, OUTPUTS, NAMES)
    assert ref in str(err.value) and expected in str(err.value)
