"""The :class:`Workspace`: descriptor-relative file I/O confined to one root directory.

Source of the rules: ``docs/architecture.md``, sections "Trust" and "File I/O". In short: the
root is held open by descriptor; every path is checked syntactically first
(:func:`flow_safeio.validate_path`), then resolved from that descriptor without ever following a
symbolic link (Linux ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS`` where available, else a component-by-component walk with
``O_NOFOLLOW``); only regular files with a single hard link are read or replaced; sizes are
capped; writes are atomic renames of a temporary file in the same directory.

The class is assembled from one module per job: ``_resolve`` (the held root and path
resolution), ``_reading`` (reads, metadata, listings, the walk), ``_writing`` (atomic writes,
removal, the write-target rules) and ``_entries`` (what listings report).
"""

from __future__ import annotations

from flow_safeio._entries import Entry, EntryKind, Listing
from flow_safeio._reading import Reader
from flow_safeio._resolve import DEFAULT_MAX_BYTES, Resolver
from flow_safeio._writing import Writer

__all__ = ["DEFAULT_MAX_BYTES", "Entry", "EntryKind", "Listing", "Resolver", "Workspace"]


class Workspace(Reader, Writer):
    """Safe file access below one root directory, held open by descriptor.

    Args:
        root: An existing directory, as an absolute path (``str`` or path-like). Symbolic
            links in the root path itself are the operator's choice and are followed once,
            when the workspace is opened.
        max_bytes: Cap on one read or write, in bytes (default 262144 = 256 KiB).
        protected: Relative paths that may be read but never written (operator
            configuration). A protected directory protects everything beneath it. Compared
            after path normalisation, Unicode NFC and case folding.
        resolver: ``"auto"`` (default) resolves with Linux ``openat2`` where available and
            the ``O_NOFOLLOW`` walk elsewhere; ``"openat2"`` requires it; ``"walk"`` forces
            the walk. Both give the same answers; the switch exists so tests can run each.

    Raises:
        RootError: ``root`` is not absolute, does not exist or is not a directory; or
            ``resolver="openat2"`` where the kernel lacks it; or ``max_bytes`` < 0.
        InvalidPathError: A ``protected`` entry is not a valid relative path.

    Every method first checks that the workspace is open (:class:`ClosedError`) and that
    ``root`` still names the directory held open (:class:`StaleRootError`). Methods are safe
    to call from several threads at once, but not concurrently with :meth:`close`.
    """
