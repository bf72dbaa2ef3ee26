import flow_rose


def test_all_names_exist() -> None:
    assert "__version__" in flow_rose.__all__
    for name in flow_rose.__all__:
        assert hasattr(flow_rose, name), name


def test_version_is_a_release_string() -> None:
    assert flow_rose.__version__.count(".") == 2
