import plugins


def test_register_csv_plugin():
    # The state-setter: leaves "csv" in the module-level registry for the rest of the process.
    plugins.register("csv", lambda: "csv-writer")
    assert plugins.lookup("csv")() == "csv-writer"


def test_register_rejects_nothing():
    plugins.register("null", lambda: None)
    assert plugins.lookup("null")() is None
