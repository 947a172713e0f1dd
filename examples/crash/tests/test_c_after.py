def test_shutdown():
    assert True


def test_cleanup_order():
    assert sorted([3, 1, 2]) == [1, 2, 3]
