from pathlib import Path

import flow_mcp
from flow_testing.testmap import map_problems


def test_all_names_exist() -> None:
    assert "__version__" in flow_mcp.__all__
    for name in flow_mcp.__all__:
        assert hasattr(flow_mcp, name), name


def test_version_is_a_release_string() -> None:
    assert flow_mcp.__version__.count(".") == 2


def test_the_test_map_names_every_module_and_test_file() -> None:
    """``tests/README.md`` maps every module of ``src`` and every file of ``tests`` and names
    no file that is gone, so a module's tests are found without searching."""
    assert map_problems(Path(__file__).parent) == []
