from pathlib import Path

import flow_safeio
from flow_testing.testmap import map_problems

EXPECTED = {
    "__version__",
    "Workspace",
    "Entry",
    "EntryKind",
    "Listing",
    "Resolver",
    "validate_path",
    "SKIPPED_DIRS",
    "is_generated_dir",
    "is_generated_name",
    "DEFAULT_MAX_BYTES",
    "openat2_available",
    "WayProblem",
    "WayReason",
    "change_problem",
    "owned_way",
    "ERROR_CODES",
    "SafeIOError",
    "InvalidPathError",
    "PathEscapeError",
    "GitPathError",
    "ProtectedPathError",
    "GeneratedPathError",
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
}


def test_all_is_exactly_the_public_api() -> None:
    assert set(flow_safeio.__all__) == EXPECTED
    assert len(flow_safeio.__all__) == len(EXPECTED)
    for name in flow_safeio.__all__:
        assert hasattr(flow_safeio, name), name


def test_version_is_a_release_string() -> None:
    assert flow_safeio.__version__.count(".") == 2


def test_the_test_map_names_every_module_and_test_file() -> None:
    """``tests/README.md`` maps every module of ``src`` and every file of ``tests`` and names
    no file that is gone, so a module's tests are found without searching."""
    assert map_problems(Path(__file__).parent) == []
