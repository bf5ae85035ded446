"""The suite's ROS domain IDs: each pytest-xdist worker reserves from its own slice, so workers never share one."""

import pytest

from ros_helpers import worker_domains


@pytest.mark.parametrize('count', [1, 2, 3, 4])
def test_workers_slices_are_disjoint_and_cover_every_domain(monkeypatch, count):
    slices = []
    for index in range(count):
        monkeypatch.setenv('PYTEST_XDIST_WORKER', f'gw{index}')
        monkeypatch.setenv('PYTEST_XDIST_WORKER_COUNT', str(count))
        slices.append(set(worker_domains()))
    assert set().union(*slices) == set(range(1, 102))
    assert sum(len(s) for s in slices) == 101
    assert all(len(s) >= 4 for s in slices)     # test_bench_teams reserves 4 consecutive IDs


def test_without_xdist_the_process_has_every_domain(monkeypatch):
    monkeypatch.delenv('PYTEST_XDIST_WORKER', raising=False)
    monkeypatch.delenv('PYTEST_XDIST_WORKER_COUNT', raising=False)
    assert worker_domains() == range(1, 102)
