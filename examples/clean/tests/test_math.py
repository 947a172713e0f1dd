def total(counts):
    return sum(counts)


def test_total():
    assert total([3, 0, 12]) == 15


def test_total_of_nothing():
    assert total([]) == 0
