"""No observable of the shuffler before the reveal depends on the gaps
(host_tools/qa/shuffler_channels.py; docs/shuffler.md, "Motion and timing
that carry no order"): over many batches of the firmware's device on the
mechanism model, the per-card cycle time, the reply delay of a link request
and the lateness of a heartbeat (both set by the main loop's link service
instants), and the sizes of the events sent before the reveal, each against
the length and the direction of the elevator's move.

The same figures on the elevator without its fixed slot (the rig's
LeakyElevator, the behaviour before) must show the leak: that is what makes
"near zero" mean something."""

from host_tools.qa import shuffler_channels as ch

R_MAX = 0.05     # |Pearson r| of within-index ranks: many thousand samples, sd under 0.015
MI_MAX = 0.01    # bits, given the card index


def test_nothing_observed_depends_on_the_gaps():
    fig = ch.figures(batches=60, decks=1)
    for name, f in fig.items():
        for what in ("length", "direction"):
            assert abs(f["r_" + what]) < R_MAX, (name, what, f)
            assert f["mi_" + what] < MI_MAX, (name, what, f)
    assert fig["cycle"]["n"] == 60 * 51 and fig["reply"]["n"] > 10000 and fig["heartbeat"]["n"] > 5000


def test_the_same_figures_catch_the_elevator_that_leaks():
    # 15 batches (765 cycles, 3,068 replies, 1,369 heartbeats; seeded): the
    # leak shows as r 1.0, 0.21, 0.20 and MI 1.46, 0.055, 0.039 bits, each
    # clear of its bound below; 30 batches give the same at twice the CPU.
    fig = ch.figures(batches=15, decks=1, leaky=True)
    assert fig["cycle"]["r_length"] > 0.9 and fig["cycle"]["mi_length"] > 1.0, fig["cycle"]
    for name in ("reply", "heartbeat"):
        assert fig[name]["r_length"] > 0.1 and fig[name]["mi_length"] > 2 * MI_MAX, (name, fig[name])


def test_the_estimators_see_a_planted_dependence_and_not_an_independent_one():
    import random
    rng = random.Random(4)
    rows = [(i, rng.random(), rng.random()) for i in range(10) for _ in range(300)]
    indep = ch._centre(rows)
    assert abs(ch.pooled_r(indep)) < R_MAX and ch.conditional_mi(indep) < MI_MAX
    dep = ch._centre([(i, x + 0.3 * o, x) for i, o, x in rows])
    assert ch.pooled_r(dep) > 0.5 and ch.conditional_mi(dep) > 0.3
