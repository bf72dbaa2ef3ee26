import threading
from pathlib import Path

import flow_rose
from flow_testing.testmap import map_problems


def test_all_names_exist() -> None:
    assert set(flow_rose.__all__) == {
        "DEFAULT_TIMEOUT",
        "EDITOR_ERROR_CODES",
        "EDITOR_TOOLS",
        "MAX_TIMEOUT",
        "MIN_TIMEOUT",
        "READ_ONLY_EDITOR_TOOLS",
        "RoseBridge",
        "__version__",
        "validate_socket",
    }
    for name in flow_rose.__all__:
        assert hasattr(flow_rose, name), name


def test_version_is_a_release_string() -> None:
    assert flow_rose.__version__.count(".") == 2


def test_allowlists() -> None:
    tools = set(flow_rose.EDITOR_TOOLS)
    assert tools == {
        "editor_context",
        "editor_diagnostics",
        "editor_symbols",
        "editor_references",
        "editor_lint",
        "editor_check",
        "editor_scip",
        "editor_debug",
    }
    assert tools - flow_rose.READ_ONLY_EDITOR_TOOLS == {
        "editor_lint",
        "editor_check",
    }
    assert not {"file_read", "file_write"} & flow_rose.EDITOR_TOOLS


def test_error_codes_are_documented() -> None:
    for code, meaning in flow_rose.EDITOR_ERROR_CODES.items():
        assert code.startswith("editor_")
        assert meaning.strip()


def test_pynvim_was_imported_on_the_main_thread() -> None:
    # pynvim records the thread that first imported it (flow_rose imports it at import time,
    # which happens on the main thread); the bridge's worker is therefore never that thread.
    from pynvim.msgpack_rpc.event_loop import base

    assert base.main_thread is threading.main_thread()


def test_the_test_map_names_every_module_and_test_file() -> None:
    """``tests/README.md`` maps every module of ``src`` and every file of ``tests`` and names
    no file that is gone, so a module's tests are found without searching."""
    assert map_problems(Path(__file__).parent) == []
