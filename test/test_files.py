"""``write_atomically``: a file replaced whole, with the permissions open gives, nothing left on failure."""

import pytest

from robot_team.contracts.files import write_atomically


def test_replaces_whole_with_the_permissions_open_gives_and_leaves_no_temporary(tmp_path):
    plain = tmp_path / 'plain.json'
    plain.write_text('{}')
    path = tmp_path / 'report.json'
    assert write_atomically(path, 'first é') == path and path.read_text(encoding='utf-8') == 'first é'
    assert write_atomically(str(path), b'\x00second') == path and path.read_bytes() == b'\x00second'
    assert path.stat().st_mode == plain.stat().st_mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ['plain.json', 'report.json']


def test_a_failed_write_raises_and_keeps_the_previous_content(tmp_path):
    path = tmp_path / 'state.bin'
    write_atomically(path, b'previous')
    with pytest.raises(TypeError):
        write_atomically(path, 42)   # not str or bytes: fails while writing
    assert path.read_bytes() == b'previous' and [p.name for p in tmp_path.iterdir()] == ['state.bin']
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / 'missing' / 'x.json', '{}')
