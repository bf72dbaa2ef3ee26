import flow_mcp


def test_all_names_exist() -> None:
    assert "__version__" in flow_mcp.__all__
    for name in flow_mcp.__all__:
        assert hasattr(flow_mcp, name), name


def test_version_is_a_release_string() -> None:
    assert flow_mcp.__version__.count(".") == 2
