"""One lazy package door (PEP 562 module ``__getattr__``), written once for every package.

A door lists each public name once, grouped by the module that defines it; ``__all__``,
``__getattr__`` and ``__dir__`` all derive from that one table. A name is imported from its
module the first time it is used and then kept in the package's namespace, so importing the
package loads nothing behind it (``bench/bench_cli.py`` measures what that saves). Type
checkers read the door's ``if TYPE_CHECKING:`` imports, written ``import X as X`` (an explicit
re-export, PEP 484), and a test checks that they and the table name the same modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["LazyDoor", "lazy_door"]


class LazyDoor:
    """The three module attributes of a lazy door (see :func:`lazy_door`).

    Attributes:
        exports: each public name and the module that defines it.
        names: ``__all__``, sorted, with ``eager`` names (already in the namespace) included.
    """

    def __init__(
        self,
        package: str,
        table: Mapping[str, Iterable[str]],
        namespace: MutableMapping[str, Any],
        eager: Iterable[str] = (),
    ) -> None:
        self.package = package
        self.exports: dict[str, str] = {
            name: module for module, names in table.items() for name in names
        }
        self.names: list[str] = sorted({*self.exports, *eager})
        self._namespace = namespace

    def getattr(self, name: str) -> Any:
        """The module ``__getattr__``: import ``name`` from its module, keep it, return it.

        Raises:
            AttributeError: ``name`` is not in the door's table.
        """
        module = self.exports.get(name)
        if module is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        self._namespace[name] = value
        return value

    def dir(self) -> list[str]:
        """The module ``__dir__``: what is loaded plus every public name."""
        return sorted(set(self._namespace) | set(self.names))


def lazy_door(
    package: str,
    table: Mapping[str, Iterable[str]],
    namespace: MutableMapping[str, Any],
    *,
    eager: Iterable[str] = (),
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]], dict[str, str]]:
    """Build a package door from one table.

    Args:
        package: the package's ``__name__``.
        table: module name (absolute) -> the public names it defines, in the order to read.
        namespace: the package's ``globals()``; each name is stored there once loaded.
        eager: public names the package defines itself (``__version__``).

    Returns:
        ``(__all__, __getattr__, __dir__, exports)``; ``exports`` maps name -> module.

    Usage::

        __all__, __getattr__, __dir__, _EXPORTS = lazy_door(__name__, {...}, globals())
    """
    door = LazyDoor(package, table, namespace, eager)
    return door.names, door.getattr, door.dir, door.exports
