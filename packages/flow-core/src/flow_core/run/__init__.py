"""The verified runtime: ``Runtime`` and the reviewer's reply schema."""

from flow_core.run._review import REVIEW_SCHEMA, ReviewReply
from flow_core.run._runtime import Runtime

__all__ = ["REVIEW_SCHEMA", "ReviewReply", "Runtime"]
