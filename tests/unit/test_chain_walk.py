"""protocol/walk.py, the one chain walk the central consumer and `shoe verify`
share, fed candidates straight (no store, no server): what links is stored in
seq order, what a forger sent is refused, what waits for a predecessor is left."""

import host_tools  # noqa: F401  (makes the firmware package importable)
from host_tools.protocol import chain, walk
from firmware.link import auth, host_frames

KEY = bytes(range(32))
FKEY = auth.frames_key(KEY)
SHOE = "W1"


def _events(n, key=KEY):
    """Seqs 1..n of a shoe as it tags them: each over the previous tag."""
    fkey, prev, out = auth.frames_key(key), auth.ZERO_MAC, {}
    for seq in range(1, n + 1):
        body = b'{"type":"bets","round":%d}' % seq
        tag = host_frames.frame_mac(fkey, SHOE, ord("E"), seq, prev, body)
        out[seq] = walk.Candidate(seq, body, tag.decode(), None, False)
        prev = tag
    return out


def _start(seq):
    return chain.ZERO_HEX if seq == 1 else None


def test_a_shuffled_batch_is_stored_in_seq_order_and_a_gap_is_left_waiting():
    ev = _events(5)
    cands = {s: [ev[s]] for s in (3, 1, 2, 5)}     # 4 has not arrived
    done = walk.walk(FKEY, SHOE, chain.Head(), cands, _start)
    assert [m.seq for m, _event in done.stored] == [1, 2, 3]
    assert [m.seq for m in done.left] == [5] and not done.refused
    assert (done.head.first_seq, done.head.last_seq, done.head.last_mac) == (1, 3, ev[3].mac)
    # the rest arrives: the walk goes on from the head it left
    later = walk.walk(FKEY, SHOE, done.head, {4: [ev[4]], 5: [ev[5]]}, _start)
    assert [m.seq for m, _e in later.stored] == [4, 5] and later.head.last_seq == 5


def test_a_forgery_beside_the_real_event_is_refused_and_the_real_one_stored():
    ev = _events(2)
    forged = _events(2, key=bytes(32))[2]._replace(held=True)
    done = walk.walk(FKEY, SHOE, chain.Head(), {1: [ev[1]], 2: [forged, ev[2]]}, _start)
    assert [m.seq for m, _e in done.stored] == [1, 2] and done.stored[1][0] is ev[2]
    assert [(m, kind) for m, kind, _why in done.refused] == [(forged, "forged_event")]
    assert done.settled == [forged]   # a held copy that was decided leaves the held rows


def test_a_new_shoe_starts_only_at_its_first_event():
    ev = _events(3)
    done = walk.walk(FKEY, SHOE, chain.Head(), {2: [ev[2]], 3: [ev[3]]}, _start)
    assert not done.stored and not done.refused and sorted(m.seq for m in done.left) == [2, 3]


def test_the_verifier_links_a_signed_event_the_schema_refuses_and_the_writer_does_not():
    body = b'{"type":"no_such_event"}'
    tag = host_frames.frame_mac(FKEY, SHOE, ord("E"), 1, auth.ZERO_MAC, body).decode()
    bad = walk.Candidate(1, body, tag, None, False)
    writer = walk.Walk(FKEY, SHOE, chain.Head(), _start).step(1, [bad])
    assert writer.winner is None and writer.malformed
    verifier = walk.Walk(FKEY, SHOE, chain.Head(), _start, schema=False).step(1, [bad])
    assert verifier.winner is bad and verifier.verdict.kind == chain.MALFORMED
