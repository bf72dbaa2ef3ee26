"""Tests for calc.py: ``inclusive_sum`` must include its upper bound."""

from calc import average, inclusive_sum


def test_inclusive_sum_counts_both_ends() -> None:
    assert inclusive_sum(1, 3) == 6


def test_inclusive_sum_of_one_number() -> None:
    assert inclusive_sum(5, 5) == 5


def test_average() -> None:
    assert average([1.0, 2.0, 3.0]) == 2.0
