"""A short sample of `shoe soak casino` in the suite: every kind of fault on
real servers (hub-capture layout, whose recovery is quick), then the
central record must equal the pit stores and pass `shoe verify --central`.
The long run, and the leaf-buffer layout, are `shoe soak casino`."""

import argparse

from host_tools.qa.soak import casino as soak


def test_casino_chaos_sample():
    lines = []
    args = argparse.Namespace(seconds=8.0, tables=2, rate=5.0, seed=5, gap=0.6, cut=1.0,
                              layout="hub-capture", catch_up=40.0)
    rc = soak.run(args, out=lambda s: lines.append(str(s)))
    text = "\n".join(lines)
    assert rc == 0, text
    assert "lost 0, duplicated 0, extra 0, different 0" in text, text
    assert "verify --central ok" in text, text
