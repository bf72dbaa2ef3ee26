"""Exam helpers for Flow's second bench project (one wrong comparison)."""


def passed(score: int, pass_mark: int) -> bool:
    """Return True when ``score`` reaches ``pass_mark`` (a score equal to the mark passes).

    >>> passed(50, 50)
    True
    """
    return score > pass_mark


def best(scores: list[int]) -> int:
    """Return the highest of ``scores`` (which must not be empty)."""
    if not scores:
        raise ValueError("best() needs at least one score")
    return max(scores)
