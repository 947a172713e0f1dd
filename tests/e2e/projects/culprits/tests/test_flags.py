import state


def test_set_flag_one():
    state.FLAGS["one"] = True


def test_set_flag_two():
    state.FLAGS["two"] = True


def test_not_both_flags():
    assert not (state.FLAGS["one"] and state.FLAGS["two"])
