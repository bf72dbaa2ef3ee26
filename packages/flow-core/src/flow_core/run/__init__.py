"""The verified runtime: ``Runtime`` and the reviewer's reply schema.

Names are loaded on first use (PEP 562, through ``flow_core._lazy.lazy_door``), so importing a
submodule of ``flow_core.run`` does not load the whole runtime. ``REVIEW_SCHEMA`` is generated
from ``ReviewReply`` on first use (``run/_review.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_core._lazy import lazy_door

if TYPE_CHECKING:
    from flow_core.run._review import (
        REVIEW_SCHEMA as REVIEW_SCHEMA,
        ReviewReply as ReviewReply,
    )
    from flow_core.run._runtime import Runtime as Runtime
else:
    __all__, __getattr__, __dir__, _EXPORTS = lazy_door(
        __name__,
        {
            "flow_core.run._review": ("REVIEW_SCHEMA", "ReviewReply"),
            "flow_core.run._runtime": ("Runtime",),
        },
        globals(),
    )
