"""Comparing two reports of the same run: what may differ between any two runs is dropped.

Used by the store-transparency tests (flow-core's ``tests/test_store_transparency.py``,
flow-cli's ``tests/test_run_record.py``): a run with the run store and the same run without it
must report the same apart from the record's id and folder and wall-clock times.
"""

from __future__ import annotations

from typing import Any

#: Report keys whose values differ between two runs of the same scenario.
RUN_SPECIFIC = frozenset({"run_id", "run_dir", "timings"})


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a ``Report.to_dict()`` or the CLI's JSON) without ``RUN_SPECIFIC`` keys and
    without any key ending in ``_ms`` (durations), at every depth."""

    def drop(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: drop(v)
                for k, v in value.items()
                if k not in RUN_SPECIFIC and not k.endswith("_ms")
            }
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    out: dict[str, Any] = drop(report)
    return out
