import subprocess
import sys
from pathlib import Path

import flow_cli
from flow_testing.testmap import map_problems


def test_all_names_exist() -> None:
    assert flow_cli.__all__ == ["__version__", "main"]
    for name in flow_cli.__all__:
        assert hasattr(flow_cli, name), name


def test_version_is_a_release_string() -> None:
    assert flow_cli.__version__.count(".") == 2


def test_importing_the_package_loads_no_heavy_modules() -> None:
    code = (
        "import sys, flow_cli; "
        "print(sorted(m for m in ('click', 'rich', 'flow_core', 'flow_mcp') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_test_map_names_every_module_and_test_file() -> None:
    """``tests/README.md`` maps every module of ``src`` and every file of ``tests`` and names
    no file that is gone, so a module's tests are found without searching."""
    assert map_problems(Path(__file__).parent) == []
