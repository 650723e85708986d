"""Where the pit's Python time goes, from a py-spy recording of `shoe pit`.

`shoe bench pit --profile DIR` samples the pit process with py-spy's
``--gil``: only the thread holding the GIL is sampled, so a sample is a
moment of the interpreter's one core spent on that stack, and hundreds of
table threads asleep in poll() or waiting for their commit do not drown the
picture (without it they were seven samples in ten). Each sample is put in
the first stage, from its innermost frame outwards, whose code it is in.
"""

import collections

# (stage, substrings of a frame "function (file:line)"), innermost match wins.
STAGES = (
    ("edge monitor", ("pit/edges.py", "analysis/")),
    ("TLS", ("ssl.py", "sslproto.py")),
    ("frame decode", ("link/frame.py", "protocol/decoder.py")),
    ("verification (tags, chain, schema)", ("link/hmac.py", "link/auth.py", "protocol/chain.py",
                                            "events_schema.py", "link/schema.py", "untrusted.py")),
    ("ack and command frames", ("link/host_frames.py",)),
    ("fold (table state, roads)", ("view/fold.py", "roads/", "protocol/tablestate.py")),
    ("page fan-out (roles, JSON, SSE)", ("view/sse.py", "view/roles.py", "json/", "pit/web.py")),
    ("store (commit link, SQLite reads)", ("groupcommit.py", "store/db.py")),
    ("event loop, HTTP (asyncio, aiohttp)", ("asyncio/", "aiohttp/")),
    ("table loop (poll, link bookkeeping)", ("bridge/line.py", "protocol/hostlink.py", "pit/service.py")),
)
OTHER = "other"


def stage_of(frames):
    for frame in reversed(frames):
        for stage, marks in STAGES:
            if any(m in frame for m in marks):
                return stage
    return OTHER


def shares(path):
    """{stage: share of the samples}, and the number of samples, from a
    py-spy ``--format raw`` file (``frame;frame;... COUNT`` per line)."""
    counts = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack or not n.isdigit():
                continue
            frames = stack.split(";")[1:]  # the first is the thread's name
            counts[stage_of(frames)] += int(n)
            total += int(n)
    return {stage: n / total for stage, n in counts.items()} if total else {}, total


def report(path):
    try:
        got, total = shares(path)
    except OSError as e:
        return ["  pit profile: none (py-spy wrote no %s: %s)" % (path, e.strerror)]
    if not total:
        return ["  profile %s: no samples" % path]
    lines = ["  pit profile (py-spy --gil, %d samples of the thread holding the GIL): %s" % (total, path)]
    for stage, share in sorted(got.items(), key=lambda kv: -kv[1]):
        lines.append("    %-38s %5.1f%%" % (stage, 100 * share))
    return lines
