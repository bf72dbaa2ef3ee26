import flow_core


def test_all_names_exist() -> None:
    assert "__version__" in flow_core.__all__
    for name in flow_core.__all__:
        assert hasattr(flow_core, name), name


def test_version_is_a_release_string() -> None:
    assert flow_core.__version__.count(".") == 2
