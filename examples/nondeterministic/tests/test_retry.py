import os


def backoff(attempt):
    return min(2 ** attempt, 60)


def test_backoff_doubles():
    assert [backoff(n) for n in range(4)] == [1, 2, 4, 8]


def test_backoff_is_capped():
    assert backoff(10) == 60


def test_retry_budget():
    # Nondeterministic: fails about half the time. It uses os.urandom, not `random`:
    # evgate reseeds `random` per test, which would make a random.random() coin flip
    # the same in every run of an order.
    jitter = os.urandom(1)[0]
    assert jitter < 128, f"jitter {jitter} exceeded the budget"
