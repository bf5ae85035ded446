"""The segment test of trigger zones: where a straight step comes closest to a zone's centre."""

import numpy as np
import pytest

from robot_team.sim.common import Polyline, segment_near


def test_segment_near_finds_the_closest_point_of_the_segment():
    centres = [[5.0, 1.0], [12.0, 0.0], [-1.0, 0.5], [5.0, -1.3]]
    near, closest, along = segment_near((0.0, 0.0), (10.0, 0.0), centres, [1.2, 1.9, 1.2, 1.3])
    assert near.tolist() == [True, False, True, True]      # both ends outside the first zone: passed through
    assert closest.tolist() == [[5.0, 0.0], [10.0, 0.0], [0.0, 0.0], [5.0, 0.0]]
    assert along.tolist() == [0.5, 1.0, 0.0, 0.5]          # the second: beyond b, on the line but not the segment
    near, closest, along = segment_near((1.0, 1.0), (1.0, 1.0), [[1.0, 2.0], [1.0, 2.1]], 1.0)   # a point
    assert near.tolist() == [True, False] and closest.tolist() == [[1.0, 1.0]] * 2 and along.tolist() == [0, 0]
    near, closest, _ = segment_near((0.0, 0.0), (1.0, 1.0), np.zeros((0, 2)), np.zeros(0))
    assert near.shape == (0,) and closest.shape == (0, 2)
    with pytest.raises(ValueError):
        segment_near((0.0, 0.0), (1.0, 1.0), [[0.0, 0.0], [1.0, 1.0]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        segment_near((0.0, 0.0, 0.0), (1.0, 1.0), [[0.0, 0.0]], 1.0)


def test_polyline_between_is_the_way_walked():
    line = Polyline([(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (2.0, 1.0)])
    assert line.between(0.5, 2.5) == [(0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (1.5, 1.0)]
    assert line.between(1.0, 2.0) == [(1.0, 0.0), (1.0, 1.0)]        # a vertex at an end is not repeated
    assert line.between(-1.0, 0.25) == [(0.0, 0.0), (0.25, 0.0)]      # clamped to the polyline
    assert line.between(2.5, 9.0) == [(1.5, 1.0), (2.0, 1.0)]
