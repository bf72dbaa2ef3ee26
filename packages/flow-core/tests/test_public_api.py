import ast
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import flow_core
import flow_core.run
import flow_core.store
import flow_core.verify
from flow_testing.testmap import map_problems


def test_all_names_exist() -> None:
    assert "__version__" in flow_core.__all__
    for name in flow_core.__all__:
        assert hasattr(flow_core, name), name


def test_version_is_a_release_string() -> None:
    assert flow_core.__version__.count(".") == 2


def _type_checking_imports(door: ModuleType = flow_core) -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` in a door's __init__.py."""
    tree = ast.parse(Path(str(door.__file__)).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                for alias in stmt.names:
                    # ``import X as X``: an explicit re-export type checkers honour.
                    assert alias.asname == alias.name, ast.unparse(stmt)
                    found[alias.name] = str(stmt.module)
    return found


def test_lazy_table_matches_the_imports_type_checkers_read() -> None:
    # One name, one module: the runtime table and the static imports must agree.
    assert _type_checking_imports() == flow_core._EXPORTS
    assert set(flow_core.__all__) == {*flow_core._EXPORTS, "__version__"}


@pytest.mark.parametrize("door", [flow_core, flow_core.run, flow_core.store, flow_core.verify])
def test_every_door_is_one_table(door: ModuleType) -> None:
    # __all__ derives from the door's table; the static imports name the same modules.
    exports = door._EXPORTS  # type: ignore[attr-defined]
    assert _type_checking_imports(door) == exports
    assert set(door.__all__) - {"__version__"} == set(exports)
    for name in door.__all__:
        assert getattr(door, name) is not None, name
    assert set(door.__all__) <= set(dir(door))


def test_import_loads_no_public_module_until_a_name_is_used() -> None:
    code = (
        "import sys, flow_core\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('flow_core.') "
        "and m not in ('flow_core.__about__', 'flow_core._lazy'))\n"
        "assert loaded == [], loaded\n"
        "assert 'pydantic' not in sys.modules\n"
        "from flow_core import Report, load_config\n"
        "assert 'flow_core._report' in sys.modules\n"
        "for heavy in ('httpx', 'flow_core.verify._checks', 'flow_core.tools._toolbox'):\n"
        "    assert heavy not in sys.modules, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = flow_core.no_such_name


def test_the_test_map_names_every_module_and_test_file() -> None:
    """``tests/README.md`` maps every module of ``src`` and every file of ``tests`` and names
    no file that is gone, so a module's tests are found without searching."""
    assert map_problems(Path(__file__).parent) == []


def test_the_map_check_sees_a_missing_module_and_a_stale_name(tmp_path: Path) -> None:
    """The control: a module without a row and a row for a file that is gone are both named."""
    package = tmp_path / "pkg" / "src" / "mod"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "_a.py", "sub/_b.py"):
        (package / name).write_text("")
    tests = tmp_path / "pkg" / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("")
    (tests / "README.md").write_text("`__init__.py`, `_a.py`, `_b.py`, `_gone.py`: `test_a.py`\n")
    assert map_problems(tests) == [
        "unnamed: sub/_b.py",
        "no such file: _b.py",
        "no such file: _gone.py",
    ]
