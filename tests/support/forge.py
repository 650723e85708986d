"""What an insider with everything the pit holds (the store, the device's
MAC key, the config) can do to a record: rewrite events and recompute every
tag and every SHA-256 link, so that the MAC chain alone accepts the forgery.
Shared by the shoe's and the shuffler's signed-checkpoint tests."""

import json
import sqlite3

from host_tools.store import db
from firmware.link import auth, host_frames, proto


def events(path, device_id):
    """(seq, event text) of ``device_id``'s stored events, in order."""
    con = sqlite3.connect(str(path))
    rows = con.execute("SELECT seq, event FROM events WHERE shoe_id = ? ORDER BY seq", (device_id,)).fetchall()
    con.close()
    return rows


def rewrite(path, out, device_id, key, change, fix_heads=False):
    """A new store at ``out`` holding ``change(rows)`` of the device's
    events, every tag recomputed under ``key`` and every link rebuilt;
    ``fix_heads``: each checkpoint's head is also set to the new tag before
    it (the forger's next step, which only the signature then stops). When
    the changed rows start after seq 1 (events cut from the front), the
    record starts there, linked to the original tag of the seq before, as
    a store that begins mid-record does."""
    rows = events(path, device_id)
    tags = dict(sqlite3.connect(str(path)).execute(
        "SELECT seq, mac FROM events WHERE shoe_id = ?", (device_id,)).fetchall())
    fkey = auth.frames_key(key)
    store = db.Store(str(out))
    prev = b"0" * 32
    first = True
    try:
        for seq, text in change(rows):
            if first and seq != 1:
                prev = tags[seq - 1].encode()
                body = text.encode()
                mac = host_frames.frame_mac(fkey, device_id, proto.EVENT, seq, prev, body)
                mac = mac.decode() if isinstance(mac, bytes) else mac
                store.append(device_id, seq, body, mac=mac, first_seq=seq, first_prev=prev.decode())
                prev = mac.encode()
                first = False
                continue
            first = False
            if fix_heads and '"head"' in text:
                cp = json.loads(text)
                cp["head"] = prev.decode()
                text = json.dumps(cp, separators=(",", ":"))
            body = text.encode()
            mac = host_frames.frame_mac(fkey, device_id, proto.EVENT, seq, prev, body)
            mac = mac.decode() if isinstance(mac, bytes) else mac
            store.append(device_id, seq, body, mac=mac, first_seq=1 if seq == 1 else None,
                         first_prev=prev.decode() if seq == 1 else None)
            prev = mac.encode()
    finally:
        store.close()
    return out
