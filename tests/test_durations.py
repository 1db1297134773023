import pytest

from kubetide.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("250ms", 0.25),
        ("0", 0),
        (0, 0),
        ("2h0m5s", 7205),
        ("-5s", -5),
    ],
)
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "1d", "5 m", "m5", "1h-30m", True, None, 5])
def test_invalid(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (90, "1m30s"), (3600, "1h"), (0.25, "250ms"), (5405, "1h30m5s")]
)
def test_format(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


def test_rfc3339_whole_seconds_utc():
    from kubetide.durations import rfc3339

    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1767225610.9) == "2026-01-01T00:00:10Z"
