import flow_safeio


def test_all_names_exist() -> None:
    assert "__version__" in flow_safeio.__all__
    for name in flow_safeio.__all__:
        assert hasattr(flow_safeio, name), name


def test_version_is_a_release_string() -> None:
    assert flow_safeio.__version__.count(".") == 2
