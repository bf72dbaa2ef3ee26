"""Tests for grade.py: a score equal to the pass mark passes."""

from grade import best, passed


def test_a_score_equal_to_the_mark_passes() -> None:
    assert passed(50, 50)


def test_a_lower_score_fails() -> None:
    assert not passed(49, 50)


def test_best() -> None:
    assert best([3, 9, 4]) == 9
