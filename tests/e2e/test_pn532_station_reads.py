"""The enrollment station's reads from a PN532 on a real pty: each read ends
with the frame it holds. A USB-serial adapter hands a frame over in packets
(a latency timer of 1-16 ms between them), and a late chip can put two
answers on the line at once; a read that stopped at a pause cut the frame
short, and one that took all it could swallow the next answer unread."""

import os
import threading
import time

import serial

from host_tools.enroll import FrameSerial
from host_tools.sim import ptys
from host_tools.sim.pn532 import ACK, reply_frame

UID = bytes.fromhex("04A1B2C3D4E5F6")


def _target_reply(uid):
    return reply_frame(0x4A, bytes([1, 1, 0x00, 0x44, 0x00, len(uid)]) + uid)


def _line():
    master, slave, path = ptys.open_raw()
    port = serial.Serial(path, 115200, timeout=1.0)
    return master, slave, port


def test_a_frame_split_by_a_pause_is_read_whole():
    master, slave, port = _line()
    frame = _target_reply(UID)
    try:
        def send():
            os.write(master, frame[:7])
            time.sleep(0.05)   # longer than any pause inside one frame on the wire
            os.write(master, frame[7:])
        writer = threading.Thread(target=send)
        writer.start()
        got = FrameSerial(port).read(64 + 7)
        writer.join()
        assert got == frame
    finally:
        port.close()
        ptys.close(master, slave)


def test_a_read_takes_one_frame_and_leaves_the_next_on_the_line():
    master, slave, port = _line()
    first, second = _target_reply(UID), _target_reply(bytes.fromhex("04010203040506"))
    try:
        os.write(master, ACK + first + ACK + second)
        line = FrameSerial(port)
        assert [line.read(6), line.read(64 + 7), line.read(6), line.read(64 + 7)] == [ACK, first, ACK, second]
    finally:
        port.close()
        ptys.close(master, slave)


def test_noise_without_a_frame_ends_at_the_count_asked_for():
    master, slave, port = _line()
    try:
        os.write(master, b"\x55\xaa\x13\x00\x37\xfe\x00\x00\x42" + ACK)
        assert FrameSerial(port).read(6) == b"\x55\xaa\x13\x00\x37\xfe"   # the driver then says "no ACK"
    finally:
        port.close()
        ptys.close(master, slave)
