import flow_safeio

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
