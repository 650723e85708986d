"""The casino record (issue 13): every pit's store streamed through NATS
JetStream into PostgreSQL, each event verified once more before it counts.
docs/casino.md has the topology and the reasons."""
