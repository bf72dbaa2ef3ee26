"""The verified runtime: ``Runtime`` and the reviewer's reply schema.

``REVIEW_SCHEMA`` is generated from ``ReviewReply`` on first use (``run/_review.py``).
"""

from typing import TYPE_CHECKING, Any

from flow_core.run._review import ReviewReply
from flow_core.run._runtime import Runtime

if TYPE_CHECKING:
    from flow_core.run._review import REVIEW_SCHEMA

__all__ = ["REVIEW_SCHEMA", "ReviewReply", "Runtime"]


def __getattr__(name: str) -> Any:
    if name == "REVIEW_SCHEMA":
        from flow_core.run._review import review_schema

        return review_schema()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
