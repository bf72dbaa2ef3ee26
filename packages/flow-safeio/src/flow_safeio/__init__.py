"""Safe, descriptor-relative file I/O confined to one workspace root (stdlib only, POSIX).

Open a :class:`Workspace` on an absolute directory and use workspace-relative ``/`` paths::

    with Workspace("/abs/project", protected=["flow.toml"]) as ws:
        text = ws.read_text("src/app.py")
        ws.write_text("src/app.py", text.replace("old", "new"))

Every refusal is a :class:`SafeIOError` subclass with a stable ``code`` (:data:`ERROR_CODES`).
The rules are described in ``docs/architecture.md``, sections "Trust" and "File I/O".
"""

from flow_safeio.__about__ import __version__
from flow_safeio._errors import (
    ERROR_CODES,
    ClosedError,
    GeneratedPathError,
    GitPathError,
    HardLinkError,
    InvalidPathError,
    IsDirectoryError,
    NotDirectoryError,
    NotFoundError,
    NotRegularFileError,
    NotTextError,
    PathEscapeError,
    ProtectedPathError,
    RootError,
    SafeIOError,
    StaleRootError,
    SymlinkError,
    TooLargeError,
)
from flow_safeio._generated import is_generated_dir, is_generated_name
from flow_safeio._openat2 import available as openat2_available
from flow_safeio._owned import WayProblem, WayReason, change_problem, owned_way
from flow_safeio._paths import SKIPPED_DIRS, validate_path
from flow_safeio._workspace import (
    DEFAULT_MAX_BYTES,
    Entry,
    EntryKind,
    Listing,
    Resolver,
    Workspace,
)

# Grouped by topic on purpose (readers scan it as the API map), so not one sorted run.
__all__ = [  # noqa: RUF022
    # version
    "__version__",
    # workspace and its results
    "Entry",
    "EntryKind",
    "Listing",
    "Resolver",
    "Workspace",
    # path rules and limits
    "DEFAULT_MAX_BYTES",
    "SKIPPED_DIRS",
    "is_generated_dir",
    "is_generated_name",
    "openat2_available",
    "validate_path",
    # who else can change the way to a folder
    "WayProblem",
    "WayReason",
    "change_problem",
    "owned_way",
    # errors
    "ClosedError",
    "ERROR_CODES",
    "GeneratedPathError",
    "GitPathError",
    "HardLinkError",
    "InvalidPathError",
    "IsDirectoryError",
    "NotDirectoryError",
    "NotFoundError",
    "NotRegularFileError",
    "NotTextError",
    "PathEscapeError",
    "ProtectedPathError",
    "RootError",
    "SafeIOError",
    "StaleRootError",
    "SymlinkError",
    "TooLargeError",
]
