import state


def test_register_plugin():
    state.REGISTRY["csv"] = object()


def test_csv_plugin_is_registered():
    assert "csv" in state.REGISTRY
