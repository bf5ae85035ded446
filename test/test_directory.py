"""The staff directory on SQLite: creation from the seed, lookups, care teams, bad files (no ROS)."""

import sqlite3
import threading

import pytest

from robot_team.contracts.config import ConfigError, StaffSeed, load_staff_seed, share_dir
from robot_team.directory import DirectoryError, StaffDirectory, load_staff


@pytest.fixture
def seed() -> StaffSeed:
    return load_staff_seed(share_dir() / 'config' / 'staff.yaml')


@pytest.fixture
def directory(tmp_path, seed):
    with StaffDirectory.create(tmp_path / 'staff.db', seed) as created:
        yield created


def test_create_then_open_from_another_handle(tmp_path, directory):
    assert (tmp_path / 'staff.db').is_file()
    assert not list(tmp_path.glob('*.tmp'))
    with StaffDirectory(tmp_path / 'staff.db') as again:
        record = again.by_id('90')
    assert record is not None
    assert (record.badge_id, record.name, record.specialty) == ('ED-0090', 'Dr. Lucas Brennan', 'Physician')
    assert record.home_area == 'Staff lounge'


def test_lookups(directory):
    assert directory.by_badge('ED-0080').hcw_id == '80'
    assert directory.by_badge('ED-9999') is None
    assert directory.by_badge('ed-0080') is None        # badges are read exactly
    assert directory.by_id('999') is None
    assert [r.hcw_id for r in directory.by_specialty('Physician')] == ['80', '90', '91']
    assert [r.hcw_id for r in directory.by_specialty('nurse')] == ['41', '42']
    assert directory.by_specialty('Surgeon') == []
    assert directory.rooms() == ['ER-12']


def test_care_team_adds_check_ins_most_recent_first_without_duplicates(directory):
    assert [(e.hcw_id, e.role, e.source) for e in directory.care_team('ER-12')] == [
        ('41', 'Primary nurse', 'standing'), ('55', 'ED technician', 'standing')]
    directory.check_in('ER-12', '80', 'ED-0080', 10.0)
    directory.check_in('ER-12', '90', 'ED-0090', 20.0)
    directory.check_in('ER-12', '90', 'ED-0090', 25.0)     # twice: listed once
    directory.check_in('ER-12', '41', 'ED-0041', 30.0)     # a standing member checks in
    directory.check_in('ER-3', '63', 'ED-0063', 40.0)      # another room
    team = directory.care_team('ER-12')
    assert [(e.hcw_id, e.role, e.source) for e in team] == [
        ('41', 'Primary nurse', 'standing'), ('55', 'ED technician', 'standing'),
        ('90', 'Attending physician', 'check_in'), ('80', 'Attending physician', 'check_in')]
    assert team[0].checked_in_s == 30.0 and team[1].checked_in_s is None and team[2].checked_in_s == 25.0
    assert [e.hcw_id for e in directory.care_team('ER-3')] == ['63']
    assert directory.care_team('ER-99') == []
    assert directory.rooms() == ['ER-12', 'ER-3']
    # as the team stood at 22 s: the check-ins stamped up to then only
    then = directory.care_team('ER-12', as_of_s=22.0)
    assert [(e.hcw_id, e.checked_in_s) for e in then] == [('41', None), ('55', None), ('90', 20.0), ('80', 10.0)]
    assert [(c.room, c.hcw_id, c.badge_id, c.stamp_s) for c in directory.check_ins('ER-12')][:2] == [
        ('ER-12', '80', 'ED-0080', 10.0), ('ER-12', '90', 'ED-0090', 20.0)]
    assert len(directory.check_ins()) == 5 and directory.check_ins('ER-99') == []


def test_check_in_needs_a_known_hcw_with_their_own_badge(directory):
    with pytest.raises(ValueError, match="'999' is not in the staff directory"):
        directory.check_in('ER-12', '999', 'ED-0999', 1.0)
    with pytest.raises(ValueError, match="badge 'ED-0080' is not HCW 90's badge"):
        directory.check_in('ER-12', '90', 'ED-0080', 1.0)
    assert [e.source for e in directory.care_team('ER-12')] == ['standing', 'standing']


def test_text_from_the_database_is_data(tmp_path, seed):
    hostile = seed.model_copy(deep=True)
    hostile.staff[0].name = "Robert'); DROP TABLE staff;--"
    with StaffDirectory.create(tmp_path / 'staff.db', hostile) as directory:
        assert directory.by_id('80').name == "Robert'); DROP TABLE staff;--"
        assert directory.by_badge("x' OR '1'='1") is None
        assert len(directory.by_specialty('Physician')) == 3


def test_check_ins_from_several_threads(directory):
    def check_in(i):
        directory.check_in('ER-12', '90', 'ED-0090', float(i))

    threads = [threading.Thread(target=check_in, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    team = directory.care_team('ER-12')
    assert [e.hcw_id for e in team] == ['41', '55', '90'] and team[2].checked_in_s == 7.0


def test_create_replaces_an_old_directory(tmp_path, seed):
    path = tmp_path / 'staff.db'
    with StaffDirectory.create(path, seed) as first:
        first.check_in('ER-12', '90', 'ED-0090', 5.0)
    with StaffDirectory.create(path, seed) as fresh:
        assert [e.hcw_id for e in fresh.care_team('ER-12')] == ['41', '55']


def test_contradicting_seed_is_refused(tmp_path, seed):
    bad = seed.model_copy(deep=True)
    bad.staff[1].badge_id = bad.staff[0].badge_id
    with pytest.raises(DirectoryError, match='contradicts itself'):
        StaffDirectory.create(tmp_path / 'staff.db', bad)
    assert not (tmp_path / 'staff.db').exists()


def test_missing_file_is_never_created(tmp_path):
    path = tmp_path / 'nope.db'
    with pytest.raises(DirectoryError, match='no such file') as info:
        StaffDirectory(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ConfigError)
    assert not path.exists()


def test_garbage_file_is_refused_naming_the_path(tmp_path):
    path = tmp_path / 'garbage.db'
    path.write_bytes(b'this is not a database, just text\n' * 200)
    with pytest.raises(DirectoryError, match='not a usable SQLite database') as info:
        StaffDirectory(path)
    assert str(path) in str(info.value)


def test_database_without_the_tables_is_refused(tmp_path):
    path = tmp_path / 'other.db'
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE staff (hcw_id TEXT, name TEXT)')
    conn.close()
    with pytest.raises(DirectoryError, match=r"missing table\(s\) 'care_teams', 'check_ins'") as info:
        StaffDirectory(path)
    assert str(path) in str(info.value)
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE care_teams (room TEXT, hcw_id TEXT, role TEXT)')
    conn.execute('CREATE TABLE check_ins (room TEXT, hcw_id TEXT, badge_id TEXT, stamp_s REAL)')
    conn.close()
    with pytest.raises(DirectoryError, match="table 'staff' lacks column"):
        StaffDirectory(path)


def test_a_sqlite_directory_gives_the_seed_back_and_a_role_where_it_has_none(tmp_path, seed):
    path = tmp_path / 'hospital.sqlite'
    StaffDirectory.create(path, seed).close()
    again = load_staff(path)
    assert [(m.hcw_id, m.badge_id, m.specialty, m.area) for m in again.staff] == [
        (m.hcw_id, m.badge_id, m.specialty, m.area) for m in seed.staff]
    assert {room: [m.hcw_id for m in team] for room, team in again.care_teams.items()} == {
        room: [m.hcw_id for m in team] for room, team in seed.care_teams.items()}
    assert load_staff(share_dir() / 'config' / 'staff.yaml') == load_staff_seed(share_dir() / 'config' / 'staff.yaml')
    bare = StaffSeed.model_validate({'staff': [{'hcw_id': '7', 'badge_id': 'B7', 'name': 'N', 'specialty': 'Nurse',
                                                'area': 'ER-1'}]})
    with StaffDirectory.create(tmp_path / 'bare.sqlite', bare) as directory:
        directory.check_in('ER-1', '7', 'B7', 3.0)
        assert [(m.hcw_id, m.role) for m in directory.care_team('ER-1')] == [('7', 'Nurse')]
        directory._conn.execute("UPDATE staff SET home_area = '' WHERE hcw_id = '7'")
        with pytest.raises(DirectoryError, match='#7 has no home_area'):
            directory.seed()
