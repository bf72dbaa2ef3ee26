"""Safe, descriptor-relative file I/O confined to one workspace root (stdlib only, POSIX).

Open a :class:`Workspace` on an absolute directory and use workspace-relative ``/`` paths::

    with Workspace("/abs/project", protected=["flow.toml"]) as ws:
        text = ws.read_text("src/app.py")
        ws.write_text("src/app.py", text.replace("old", "new"))

Every refusal is a :class:`SafeIOError` subclass with a stable ``code`` (:data:`ERROR_CODES`).
The rules come from the Flow reference README, section "Trust and security".
"""

from flow_safeio.__about__ import __version__
from flow_safeio._errors import (
    ERROR_CODES,
    ClosedError,
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
from flow_safeio._openat2 import available as openat2_available
from flow_safeio._paths import SKIPPED_DIRS, validate_path
from flow_safeio._workspace import (
    DEFAULT_MAX_BYTES,
    Entry,
    EntryKind,
    Listing,
    Resolver,
    Workspace,
)

__all__ = [
    # version
    "__version__",
    # workspace and its results
    "Workspace",
    "Entry",
    "EntryKind",
    "Listing",
    "Resolver",
    # path rules and limits
    "validate_path",
    "SKIPPED_DIRS",
    "DEFAULT_MAX_BYTES",
    "openat2_available",
    # errors
    "ERROR_CODES",
    "SafeIOError",
    "InvalidPathError",
    "PathEscapeError",
    "GitPathError",
    "ProtectedPathError",
    "SymlinkError",
    "HardLinkError",
    "NotRegularFileError",
    "IsDirectoryError",
    "NotDirectoryError",
    "NotFoundError",
    "TooLargeError",
    "NotTextError",
    "RootError",
    "StaleRootError",
    "ClosedError",
]
