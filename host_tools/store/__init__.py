"""The pit PC's durable record of every shoe event.

One SQLite file holds every shoe's events, each chained by SHA-256 to the one
before it so that an edited, deleted, inserted or reordered row is found by
`shoe verify`; `shoe export` and `shoe recall` read it back.
"""
