"""Benchmark of the shuffler's randomness core in the controller VM.

`shoe shuffler sample --bench` runs it; `shoe bench` can list it as
``"shuffler": "host_tools.shuffler.bench"`` (main(argv) is the entry).
Figures: decision time for a batch (reseed + one gap per card), per card;
the pure draw time; the elevator model's deliver time; the heap each
decision allocates (transient hash objects of the DRBG refills) and what
stays allocated after a collection; and two heap-locked runs proving that a
draw from the pool and deliver() allocate nothing.
"""

import argparse
import statistics

from host_tools import vm, vmcode

PROGRAM = vmcode.LOCK_HEAP + r"""
import gc, time
from shuffler import shuffle, entropy
N = DECKS * 52
d = shuffle.Decider(entropy.SeededSource(1), max_cards=N)
d.shuffle(N)
for r in range(RUNS):
    gc.collect()
    gc.disable()
    a0 = gc.mem_alloc()
    t0 = time.ticks_us()
    d.decide(N)
    t1 = time.ticks_us()
    a1 = gc.mem_alloc()
    gc.enable()
    t2 = time.ticks_us()
    shuffle.plan(N, d.uniform, d.gaps)
    t3 = time.ticks_us()
    print("decide_us", time.ticks_diff(t1, t0), "alloc", a1 - a0, "plan_us", time.ticks_diff(t3, t2))
gc.collect()
lock_heap()
t0 = time.ticks_us()
shuffle.deliver(d.gaps, N, d.order)
t1 = time.ticks_us()
micropython.heap_unlock()
print("deliver_us", time.ticks_diff(t1, t0))
d.uniform.drbg.generate_into(d.uniform.pool)
d.uniform.pos = 0
lock_heap()
for i in range(40):
    d.uniform.below(52)
micropython.heap_unlock()
print("draw_locked ok")
gc.collect()
m0 = gc.mem_alloc()
for r in range(20):
    d.shuffle(N)
gc.collect()
print("retained", gc.mem_alloc() - m0)
"""


def run_bench(decks=8, runs=15, heap=vm.DEFAULT_HEAP):
    program = PROGRAM.replace("DECKS", str(decks)).replace("RUNS", str(runs))
    rc, out, err = vm.run_micropython(["-c", program], heap=heap, timeout=300)
    if rc != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError("the MicroPython VM stopped with status %d: %s" % (rc, last[0]))
    decide, alloc, plan = [], [], []
    facts = {}
    for line in out.decode().splitlines():
        f = line.split()
        if f[0] == "decide_us":
            decide.append(int(f[1]))
            alloc.append(int(f[3]))
            plan.append(int(f[5]))
        else:
            facts[f[0]] = f[1]
    n = decks * 52
    return {
        "cards": n,
        "decide_ms_median": statistics.median(decide) / 1000,
        "decide_ms_p90": sorted(decide)[int(0.9 * (len(decide) - 1))] / 1000,
        "plan_us_per_card": statistics.median(plan) / n,
        "decide_us_per_card": statistics.median(decide) / n,
        "alloc_bytes_per_card": statistics.median(alloc) / n,
        "deliver_ms": int(facts["deliver_us"]) / 1000,
        "deliver_allocates": "no (heap locked)",
        "draw_allocates": "no (heap locked)" if facts.get("draw_locked") == "ok" else "?",
        "retained_bytes_after_20_batches": int(facts["retained"]),
    }


def report(figures, decks):
    lines = ["shuffler core, MicroPython unix VM, %d decks (%d cards):" % (decks, figures["cards"])]
    for key, value in figures.items():
        if key != "cards":
            lines.append("  %-32s %s" % (key, ("%.3f" % value) if isinstance(value, float) else value))
    return "\n".join(lines)


def main(argv=()):
    parser = argparse.ArgumentParser(prog="shoe bench shuffler")
    parser.add_argument("--decks", type=int, default=8)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(list(argv))
    print(report(run_bench(args.decks, args.runs), args.decks))
    return 0
