"""guard.py's rules one by one, with a clock the test moves: the login
throttle's window and lock, the caps' counting, the Host name parsing and
the forged-write checks (requests made by aiohttp's own test helper)."""

from aiohttp.test_utils import make_mocked_request

from host_tools.view import guard


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_ten_failures_in_a_minute_lock_until_the_oldest_leaves_the_window():
    clock = Clock()
    th = guard.Throttle(limit=10, window=60.0, clock=clock)
    for i in range(9):
        assert th.fail("user vic") == []
        clock.t += 1
    assert th.retry_after("user vic") == 0
    assert th.fail("user vic") == ["user vic"]          # the tenth locks
    assert 50 < th.retry_after("user vic") <= 60        # until the first failure (t=1000) is 60 s old
    assert th.retry_after("user sam", "address 10.0.0.1") == 0
    clock.t = 1000.0 + 60.0 + 0.5                        # the first failure left the window
    assert th.retry_after("user vic") == 0


def test_failures_spread_beyond_the_window_never_lock():
    clock = Clock()
    th = guard.Throttle(limit=10, window=60.0, clock=clock)
    for _ in range(100):
        th.fail("address 127.0.0.9")
        clock.t += 7.0                                   # at most 9 in any 60 s
    assert th.retry_after("address 127.0.0.9") == 0


def test_caps_count_per_address_and_in_all():
    caps = guard.Caps(streams=3, streams_per_address=2, requests=10, requests_per_address=10)
    assert caps.take("stream", "a") is None and caps.take("stream", "a") is None
    assert caps.take("stream", "a").status == 429
    assert caps.take("stream", "b") is None
    assert caps.take("stream", "c").status == 503
    caps.give("stream", "a")
    assert caps.take("stream", "c") is None
    assert caps.total["stream"] == 3 and dict(caps.by_address["stream"]) == {"a": 1, "b": 1, "c": 1}


def test_host_names_without_ports():
    assert guard.host_name("pit1.casino.lan:8443") == "pit1.casino.lan"
    assert guard.host_name("[::1]:8443") == "::1"
    assert guard.host_name("127.0.0.1") == "127.0.0.1"
    assert guard.is_loopback("127.3.4.5") and guard.is_loopback("::1") and not guard.is_loopback("10.0.0.1")


def _req(headers):
    return make_mocked_request("POST", "/api/login", headers=dict({"Host": "pit1:8443"}, **headers))


def test_a_write_must_be_json_from_the_pits_own_origin():
    own = "http://pit1:8443"
    assert guard.forged_write(_req({"Content-Type": "application/json", "Origin": own})) is None
    assert guard.forged_write(_req({"Content-Type": "application/json; charset=utf-8", "Referer": own + "/t"})) is None
    assert "application/json" in guard.forged_write(_req({"Content-Type": "text/plain", "Origin": own}))
    assert "Origin" in guard.forged_write(_req({"Content-Type": "application/json", "Origin": own + ".evil"}))
    assert guard.forged_write(_req({"Content-Type": "application/json", "Referer": own + ".evil/"})) is not None
    assert guard.forged_write(_req({"Content-Type": "application/json"})) is not None


def test_the_slow_down_grows_with_failures_and_stops_at_its_cap():
    clock = Clock()
    th = guard.Throttle(limit=10, window=60.0, clock=clock)
    waits = []
    for _ in range(guard.SLOW_AFTER + 6):
        waits.append(th.slow_down("user vic", "address 10.0.0.1"))
        th.fail("user vic")
    assert waits[:guard.SLOW_AFTER] == [0.0] * guard.SLOW_AFTER
    assert waits[guard.SLOW_AFTER] == guard.SLOW_BASE and waits == sorted(waits)
    assert waits[-1] == guard.SLOW_MAX
    clock.t += 61.0  # the failures left the window
    assert th.slow_down("user vic") == 0.0


def test_the_staff_reserve_is_kept_from_the_public_and_a_refusal_closes_its_connection():
    caps = guard.Caps(streams=10, streams_per_address=100, requests=10, requests_per_address=10,
                      reserve={"stream": 4})
    for i in range(6):
        assert caps.take("stream", "10.0.0.%d" % i) is None
    no = caps.take("stream", "10.0.0.99")
    assert no.status == 503 and no.keep_alive is False        # the public stops 4 short
    for _ in range(4):
        assert caps.take("stream", "10.0.0.1", staff=True) is None  # staff, even from a crowded address
    assert caps.take("stream", "10.0.0.1", staff=True).status == 503  # the whole cap holds for all
    caps.give("stream", "10.0.0.1", staff=True)
    assert caps.total["stream"] == 9 and caps.public["stream"] == 6


def test_a_body_is_a_json_object_of_bounded_depth_or_a_one_line_refusal():
    import pytest
    assert guard.json_object(b'{"command": "shoe", "args": {"decks": 8}}') == {"command": "shoe", "args": {"decks": 8}}
    deep = b'{"a":' + b"[" * (guard.JSON_DEPTH - 1) + b"]" * (guard.JSON_DEPTH - 1) + b"}"
    assert guard.json_object(deep)["a"]  # exactly JSON_DEPTH levels
    for raw in (b"[" * 60000, b'{"a":' * 60000, b"[" * 30000 + b"]" * 30000, b'{"a":' + b"[" * guard.JSON_DEPTH
                + b"]" * guard.JSON_DEPTH + b"}", b"\xff\xfe", b"[]", b"7", b""):
        with pytest.raises(guard.BadBody) as e:
            guard.json_object(raw)
        assert "\n" not in str(e.value) and "JSON" in str(e.value), raw[:20]
