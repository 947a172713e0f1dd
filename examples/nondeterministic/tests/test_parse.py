def parse_amount(text):
    whole, _, cents = text.partition(".")
    return int(whole) * 100 + int(cents or 0)


def test_parse_whole():
    assert parse_amount("12") == 1200


def test_parse_cents():
    assert parse_amount("12.34") == 1234
