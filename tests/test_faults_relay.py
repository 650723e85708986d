"""The fault relay itself: clean when asked to be, and damaging bytes at the
seeded rates when asked to, so the fault tests really exercise the link."""

import os
import time
import tty

import serial

from host_tools.bridge.relay import Relay


def _pair():
    master, slave = os.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    return master, os.ttyname(slave), slave


def _collect(port, n, timeout=5.0):
    data = b""
    end = time.monotonic() + timeout
    while len(data) < n and time.monotonic() < end:
        data += port.read(n - len(data))
    return data


def test_clean_relay_passes_bytes_both_ways():
    master, shoe_path, slave = _pair()
    relay = Relay(shoe_path).start()
    try:
        port = serial.Serial(relay.path, 115200, timeout=0.1)
        payload = bytes(range(256)) * 8
        os.write(master, payload)
        assert _collect(port, len(payload)) == payload
        port.write(b"ack 1\n")
        time.sleep(0.2)
        assert os.read(master, 100) == b"ack 1\n"
        assert relay.faults == {"dropped": 0, "corrupted": 0, "duplicated": 0}
        port.close()
    finally:
        relay.stop()
        os.close(master)
        os.close(slave)


def test_faulty_relay_damages_at_the_seeded_rates():
    master, shoe_path, slave = _pair()
    relay = Relay(shoe_path, seed=5, drop=0.01, corrupt=0.01, duplicate=0.01).start()
    try:
        port = serial.Serial(relay.path, 115200, timeout=0.1)
        payload = b"0123456789" * 2000
        for i in range(0, len(payload), 1000):
            os.write(master, payload[i:i + 1000])
        time.sleep(0.3)
        got = _collect(port, len(payload) + relay.faults["duplicated"], timeout=2.0)
        f = relay.faults
        assert all(80 < f[k] < 330 for k in f), f  # about 1% of 20000 each
        assert len(got) == len(payload) - f["dropped"] + f["duplicated"]
        assert got != payload
        port.close()
    finally:
        relay.stop()
        os.close(master)
        os.close(slave)
