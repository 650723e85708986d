"""The host link: framing, authentication, the session and the power-loss journal.

The bridge on the pit PC imports `frame`, `hmac` and `commands` from here under
CPython, so the shoe and the host can never disagree on a byte of the protocol
(docs/protocol.md).
"""
