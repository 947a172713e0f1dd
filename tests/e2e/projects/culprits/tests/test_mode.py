import state


def test_enter_bad_mode():
    state.MODE["value"] = "bad"


def test_reset_mode():
    state.MODE["value"] = "good"


def test_mode_is_good():
    assert state.MODE["value"] == "good"
