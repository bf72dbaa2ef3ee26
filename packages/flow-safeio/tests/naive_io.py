"""A deliberately unsafe file layer: the negative control of the attack suite.

It does what careless tools do: join the caller's path onto the root and call ``open()``.
Two habits of such tools are modelled on purpose, so that the Windows-style and NUL attacks
have something to exploit on POSIX:

* Windows separators are "helpfully" converted (``\\`` becomes ``/``), as portable tools do.
* The path is cut at the first NUL, which is what the operating system sees when a C library
  or a ``ctypes`` call receives the string.

Every attack in ``test_attacks.py`` must demonstrably escape or clobber through this class;
if one does not, the test itself is broken (it could not see an escape).
"""

from __future__ import annotations

import os
from typing import Any

#: Upper bound on a naive read, so a device node cannot exhaust memory during the tests.
READ_CAP = 4 * 1024 * 1024


class NaiveWorkspace:
    """Same method names as ``flow_safeio.Workspace``; no checks at all."""

    def __init__(self, root: str, **_ignored: Any) -> None:
        self.root = root

    def _join(self, rel: str) -> str:
        rel = rel.split("\x00", 1)[0].replace("\\", "/")
        return os.path.join(self.root, rel)

    def read_bytes(self, rel: str) -> bytes:
        with open(self._join(rel), "rb") as f:
            return f.read(READ_CAP)

    def read_text(self, rel: str, encoding: str = "utf-8") -> str:
        return self.read_bytes(rel).decode(encoding)

    def write_bytes(self, rel: str, data: bytes) -> None:
        path = self._join(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def write_text(self, rel: str, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(rel, text.encode(encoding))

    def exists(self, rel: str) -> bool:
        return os.path.exists(self._join(rel))

    def list_dir(self, rel: str = ".") -> list[str]:
        return sorted(os.listdir(self._join(rel)))

    def close(self) -> None:
        pass
