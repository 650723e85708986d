"""The serial bridge between a shoe and the store, with its live console.

It is the only writer of shoe events into the store: it acknowledges an event
to the shoe only after the event is committed, so a crash at any moment loses
nothing (the shoe retransmits what was not acknowledged).
"""
