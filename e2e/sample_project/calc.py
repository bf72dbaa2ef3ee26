"""Small arithmetic helpers for the Flow demo project."""


def inclusive_sum(start: int, stop: int) -> int:
    """Return the sum of every integer from ``start`` to ``stop``, both included.

    >>> inclusive_sum(1, 3)
    6
    """
    return sum(range(start, stop))


def average(values: list[float]) -> float:
    """Return the arithmetic mean of ``values`` (which must not be empty)."""
    if not values:
        raise ValueError("average() needs at least one value")
    return sum(values) / len(values)
