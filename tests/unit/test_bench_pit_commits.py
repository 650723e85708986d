"""`shoe bench pit` reads the pit's commit histogram twice and quotes the
commit stage of the window between: a bucket bound, never a guess."""

from host_tools.qa.bench.pit import bucket_percentile

INF = float("inf")


def test_the_percentile_is_the_first_bound_holding_that_share_of_the_window():
    before = {0.001: 10, 0.005: 10, 0.02: 10, INF: 10}      # counted before the window opened
    after = {0.001: 60, 0.005: 100, 0.02: 109, INF: 110}
    assert bucket_percentile(before, after, 50) == 0.001
    assert bucket_percentile(before, after, 90) == 0.005
    assert bucket_percentile(before, after, 99) == 0.02
    assert bucket_percentile(before, after, 100) == INF     # one commit past the last bound


def test_no_commit_in_the_window_is_no_figure():
    same = {0.001: 5, INF: 7}
    assert bucket_percentile(same, same, 99) is None
    assert bucket_percentile({}, {}, 99) is None
