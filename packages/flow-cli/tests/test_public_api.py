import flow_cli


def test_all_names_exist() -> None:
    assert "__version__" in flow_cli.__all__
    for name in flow_cli.__all__:
        assert hasattr(flow_cli, name), name


def test_version_is_a_release_string() -> None:
    assert flow_cli.__version__.count(".") == 2
