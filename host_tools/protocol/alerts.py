"""Every alert kind the record can hold, defined once (docs/protocol.md,
"Alert kinds"): the bridge, `shoe central`, the pit's monitors and the page
all use these names, with these severities, for the same situations.

A kind's ``where`` is "alert" (an ``alerts`` row surveillance acts on) or
"log" (a ``link_log`` row: counted, not alarming). Critical alerts make
``shoe verify`` fail until they are explained.
"""

from host_tools.protocol import chain

INFO, WARNING, CRITICAL = "info", "warning", "critical"
SEVERITIES = (INFO, WARNING, CRITICAL)

# NOT RECORDING for longer than this is a critical ``not_recording`` alert
# (host_tools/protocol/hostlink.py raises and clears it).
NOT_RECORDING_S = 10

# kind -> (where, severity, what it means)
KINDS = {
    # Frames that do not verify under the shoe's key: never used, counted.
    "forged_event": ("alert", WARNING, "event frames whose tag does not verify (not stored)"),
    "forged_hello": ("alert", WARNING, "hello frames whose tag does not verify under this "
                     "bridge's key (ignored; if none ever does: is --key-file this shoe's key?)"),
    "forged_beat": ("alert", WARNING, "heartbeats whose tag does not verify (ignored)"),
    "bad_crc": ("log", None, "frames with a bad CRC"),
    "bad_frame": ("log", None, "malformed frames"),
    # Frames the shoe signed but the link schema rejects (firmware/link/
    # events_schema.py): a shoe bug or a firmware newer than the host.
    "invalid_hello": ("alert", WARNING, "signed hellos the link schema rejects (ignored)"),
    "invalid_beat": ("alert", WARNING, "signed heartbeats the link schema rejects (ignored)"),
    "invalid_event": ("alert", WARNING, "signed events the link schema rejects (not stored; "
                      "the shoe keeps them and every later event)"),
    "internal": ("alert", WARNING, "frames the host failed on (skipped; a host bug)"),
    # The chain (host_tools/protocol/chain.py).
    "fork": ("alert", CRITICAL, "the shoe's key signed two different events for one seq "
             "(the stored one is kept)"),
    "rollback": ("alert", CRITICAL, "the shoe's hello is below the record (its journal was lost "
                 "or restored from an older copy)"),
    "conflict": ("alert", CRITICAL, "the store holds a different event at a seq being written"),
    "gap": ("alert", WARNING, "events wait for a predecessor that has not arrived"),
    "before_first": ("alert", WARNING, "an event before the record's first seq"),
    "shoe_changed": ("alert", CRITICAL, "a hello signed as another shoe on this table's line"),
    "no_key": ("alert", CRITICAL, "no key for the shoe: its events are held, unverified"),
    "malformed": ("alert", WARNING, "a message that is not a tagged event at all"),
    "lost_race": ("alert", CRITICAL, "verified events found already stored under the row locks "
                  "(two consumers raced; the stored rows stand)"),
    # Provenance at central (the device registry, `shoe central register`):
    # each refusal is merged into one row per cause and device, with a count.
    "unknown_device": ("alert", WARNING, "events of a device the registry does not hold "
                       "(refused; counted per publishing pit)"),
    "wrong_pit": ("alert", CRITICAL, "a registered device's events published from another pit "
                  "(refused)"),
    "table_mismatch": ("alert", WARNING, "events claiming a table other than the registered one "
                       "(filed under the registered table)"),
    # A pit's alert history and audit log at central, on the pit's own hash
    # chain (host_tools/central/pitlog.py).
    "pit_log_forged": ("alert", CRITICAL, "a pit alert or audit row that does not extend the pit's "
                       "hash chain (refused)"),
    "pit_log_gap": ("alert", WARNING, "a pit's alert or audit rows wait for a row that has not "
                    "arrived (dropped on the way?)"),
    # The pit's own monitors.
    "edge": ("alert", INFO, "the edge monitor: a side bet's expectation crossed its threshold"),
    # The table itself: what stops or puts in doubt what is recorded
    # (acknowledged by a supervisor only, host_tools/view/roles.py).
    "recording_stopped": ("alert", CRITICAL, "the table's loop died: nothing was recorded until it restarted"),
    "not_recording": ("alert", CRITICAL, "the bridge has not been recording the table's shoe for more than "
                      "%d s (the reason is the bridge's NOT RECORDING line); cleared by itself, with an info row "
                      "of this kind, once it records again" % NOT_RECORDING_S),
    "cold_deck": ("alert", CRITICAL, "the shoe stopped the game: the cards leave in deck order (Ch 5A); "
                  "clear_stop after inspection"),
    "order_mismatch": ("alert", CRITICAL, "the shoe stopped the game: a card left that is not the one the "
                       "shuffler's committed order has at its place (Ch 5B); clear_stop after inspection"),
    # The shuffler's order for the shoe (host_tools/pit/orderwatch.py; docs/shuffler.md, "Fresh and bound").
    "order_stale": ("alert", CRITICAL, "the shoe refused an order not newer than the last it opened or dealt: "
                    "a replayed or stale order on the relay (Ch 5H(4))"),
    "order_foreign": ("alert", CRITICAL, "the shoe refused an order that does not open under its pairing key: "
                      "altered, another shoe's or another pair's (Ch 5H(4))"),
    "order_not_released": ("alert", CRITICAL, "the order the shoe armed is not the batch the shuffler last "
                           "released for it"),
    "order_unchecked": ("alert", WARNING, "a shoe paired with a shuffler is dealt without the real-time check "
                        "(no order armed: dropped, lost in a power cut, or never sent)"),
    "shuffle": ("alert", WARNING, "the shoe's shuffle score says the shuffle was weak (p below its level)"),
    "firmware_mismatch": ("alert", CRITICAL, "the shoe runs firmware other than the deployed manifest's"),
    "counter_mismatch": ("alert", CRITICAL, "the shoe's secure element counter is not where its journal "
                         "left it: the journal was restored from an earlier copy or the chip swapped (tilted)"),
    "service_mode": ("alert", CRITICAL, "the shoe was put in service mode (door open, keys at hand)"),
}

# A verdict of the one chain acceptance -> the alert kind it raises (None: no alert).
FOR_VERDICT = {
    chain.STORED: None,
    chain.DUPLICATE: None,
    chain.GAP: "gap",
    chain.BEFORE_FIRST: "before_first",
    chain.FORGED: "forged_event",
    chain.FORK: "fork",
    chain.MALFORMED: "invalid_event",
}

# Kinds that are a condition rather than an event: raised at one severity
# while it lasts, and closed by a later INFO row of the same kind (its clear).
CLEARS_ITSELF = ("not_recording",)

CRITICAL_KINDS = tuple(k for k, (_w, sev, _t) in KINDS.items() if sev == CRITICAL)


def severity(kind):
    return KINDS[kind][1]


def vocabulary():
    """What the page is served: each kind's severity and meaning."""
    return {k: {"severity": sev, "what": what} for k, (where, sev, what) in KINDS.items()
            if where == "alert"}


def open_only(rows):
    """``rows`` (alert dicts, oldest first) without the self-clearing
    conditions that have been cleared, and without their clears: what a
    person still has to look at. The stored rows all stay (the record)."""
    closed = set()
    raised = {}
    for a in rows:
        if a["kind"] in CLEARS_ITSELF:
            key = (a.get("shoe_id"), a["kind"])
            if a["severity"] == INFO:
                closed.add(a["id"])
                closed.update(raised.pop(key, ()))
            else:
                raised.setdefault(key, []).append(a["id"])
    return [a for a in rows if a["id"] not in closed]


def cleared(rows, alert):
    """Whether ``alert`` (one of ``rows``, oldest first) is a self-clearing
    condition that a later clear closed, or such a clear."""
    return alert["kind"] in CLEARS_ITSELF and all(a["id"] != alert["id"] for a in open_only(rows))
