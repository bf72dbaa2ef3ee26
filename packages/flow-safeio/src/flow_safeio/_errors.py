"""The flow-safeio exception tree.

Every refusal or failure raised by :class:`flow_safeio.Workspace` and
:func:`flow_safeio.validate_path` is a :class:`SafeIOError`. Each class carries a
stable ``code`` string (listed in :data:`ERROR_CODES` and in the package README); callers
branch on ``code`` (or on the class), never on the message text.

The tree::

    OSError
    └── SafeIOError                       (code: "io_error")
        ├── InvalidPathError              "path_invalid"
        │   ├── PathEscapeError           "path_outside"
        │   └── GitPathError              "git_path"
        ├── ProtectedPathError            "protected"         (+ PermissionError)
        ├── GeneratedPathError            "generated_path"    (+ PermissionError)
        ├── SymlinkError                  "symlink"
        ├── HardLinkError                 "hardlink"
        ├── NotRegularFileError           "not_regular_file"
        ├── IsDirectoryError              "is_directory"      (+ IsADirectoryError)
        ├── NotDirectoryError             "not_directory"     (+ NotADirectoryError)
        ├── NotFoundError                 "not_found"         (+ FileNotFoundError)
        ├── TooLargeError                 "too_large"
        ├── NotTextError                  "not_text"
        ├── RootError                     "root_invalid"
        ├── StaleRootError                "root_stale"
        └── ClosedError                   "closed"

``SafeIOError`` derives from :class:`OSError`, so code that already handles ``OSError``
keeps working; where a builtin subclass means the same thing it is mixed in (for example
``except FileNotFoundError`` catches :class:`NotFoundError`).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ERROR_CODES",
    "ClosedError",
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


class SafeIOError(OSError):
    """Base class of every flow-safeio refusal and failure.

    Attributes:
        code: Stable machine-readable code (class attribute; see :data:`ERROR_CODES`).
        path: The path the caller asked for, exactly as given (``None`` when there is none).
        reason: Human-readable reason, without the path.

    The string form is ``"<path>: <reason>"`` so that the message always names both.
    """

    code: ClassVar[str] = "io_error"

    def __init__(self, path: object, reason: str) -> None:
        self.path: str | None = None if path is None else str(path)
        self.reason: str = reason
        shown = "<no path>" if path is None else repr(path)
        super().__init__(f"{shown}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        # OSError pickles by re-calling the class with ``args``; ours takes (path, reason).
        return (type(self), (self.path, self.reason))


class InvalidPathError(SafeIOError):
    """The path is not an acceptable relative ``/``-separated path (pure syntax)."""

    code: ClassVar[str] = "path_invalid"


class PathEscapeError(InvalidPathError):
    """The path would leave the workspace (absolute, drive letter, ``..``, or outside root)."""

    code: ClassVar[str] = "path_outside"


class GitPathError(InvalidPathError):
    """A component names the Git metadata directory (``.git`` in any spelling)."""

    code: ClassVar[str] = "git_path"


class ProtectedPathError(SafeIOError, PermissionError):
    """The path is, or lies under, a protected path: readable, never writable."""

    code: ClassVar[str] = "protected"


class GeneratedPathError(SafeIOError, PermissionError):
    """The path lies inside a generated or environment folder (``Workspace.check_generated``)."""

    code: ClassVar[str] = "generated_path"


class SymlinkError(SafeIOError):
    """A component of the path, or the target itself, is a symbolic link."""

    code: ClassVar[str] = "symlink"


class HardLinkError(SafeIOError):
    """The file has more than one hard link (it may alias a file outside the root)."""

    code: ClassVar[str] = "hardlink"


class NotRegularFileError(SafeIOError):
    """The target is a FIFO, socket, device or other non-regular file."""

    code: ClassVar[str] = "not_regular_file"


class IsDirectoryError(SafeIOError, IsADirectoryError):
    """A file operation named a directory."""

    code: ClassVar[str] = "is_directory"


class NotDirectoryError(SafeIOError, NotADirectoryError):
    """A parent component, or the argument of a listing, is not a directory."""

    code: ClassVar[str] = "not_directory"


class NotFoundError(SafeIOError, FileNotFoundError):
    """The path (or one of its parents) does not exist."""

    code: ClassVar[str] = "not_found"


class TooLargeError(SafeIOError):
    """The file, or the data to write, is larger than the workspace's ``max_bytes``."""

    code: ClassVar[str] = "too_large"


class NotTextError(SafeIOError):
    """Bytes could not be decoded (read) or text could not be encoded (write)."""

    code: ClassVar[str] = "not_text"


class RootError(SafeIOError):
    """The root given to :class:`~flow_safeio.Workspace` is not an absolute directory."""

    code: ClassVar[str] = "root_invalid"


class StaleRootError(SafeIOError):
    """The root path no longer names the directory that was opened (renamed or replaced)."""

    code: ClassVar[str] = "root_stale"


class ClosedError(SafeIOError):
    """The workspace was closed."""

    code: ClassVar[str] = "closed"


#: Every stable error code, mapped to a one-line meaning (documented in the README).
ERROR_CODES: dict[str, str] = {
    "io_error": "the operating system reported an unexpected I/O failure",
    "path_invalid": "the path is empty, has a backslash, control character or odd spelling",
    "path_outside": "the path is absolute, has a drive letter or '..', or leaves the root",
    "git_path": "a component names the .git metadata directory in some spelling",
    "protected": "the path is an operator-protected path: readable but never writable",
    "generated_path": "the path lies in a generated or environment folder (.venv, node_modules, "
    "build, any directory holding pyvenv.cfg, ...); files there are never written",
    "symlink": "a component of the path, or the target, is a symbolic link",
    "hardlink": "the file has more than one hard link",
    "not_regular_file": "the target is a FIFO, socket, device or other non-regular file",
    "is_directory": "a file operation named a directory",
    "not_directory": "a parent component (or the listed path) is not a directory",
    "not_found": "the path or one of its parents does not exist",
    "too_large": "the file or the data exceeds the workspace's max_bytes",
    "not_text": "the bytes are not valid in the requested text encoding",
    "root_invalid": "the workspace root is not an existing absolute directory",
    "root_stale": "the root path no longer names the directory that was opened",
    "closed": "the workspace has been closed",
}
