"""Reading a sender's bytes without trusting them (host_tools/protocol/untrusted.py)."""

from host_tools.protocol.untrusted import shown


def test_shown_truncates_and_escapes_the_senders_text():
    text = shown(b'{"a":"\\' + b"\x1b[2J" + b"y" * 100)
    assert "\x1b" not in text and text.startswith('"{\\"a\\":\\"\\\\\\u001b[2J')
    assert text.endswith("y" * 35 + '"... (111 bytes)')
