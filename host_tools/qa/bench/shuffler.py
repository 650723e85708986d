"""Benchmark of the shuffler's randomness core in the controller VM.

`shoe shuffler sample --bench` runs it; `shoe bench` can list it as
``"shuffler": "host_tools.qa.bench.shuffler"`` (main(argv) is the entry).
Figures: decision time for a batch (reseed + one gap per card), per card;
the pure draw time; the elevator model's deliver time; the heap each
decision allocates (transient hash objects of the DRBG refills) and what
stays allocated after a collection; and two heap-locked runs proving that a
draw from the pool and deliver() allocate nothing.
"""

import argparse
import statistics

from host_tools import vm
from host_tools.sim import vmcode

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


# One batch through the whole device in the VM (firmware/shuffler/device.py
# on the mechanism model, no link): per-card VM time of each pass, the heap
# the passes keep, and the model's clock (the machine's modelled time).
MACHINE_PROGRAM = r"""
import binascii, gc, micropython, sys, time
from cardset import registry
from emulator import shuffler_board
from shuffler import custody, device
N = DECKS * 52
reg = registry.load("CARDSET")
tags = [binascii.unhexlify(line.strip()) for line in open("TAGS")]
class Link:
    def send(self, e): pass
    def send_all(self, es): pass
    def error(self, m): print("error", m)
board = shuffler_board.ModelBoard(1, "STATE")
dev = device.Device(board, Link(), reg, N)
dev.start()
m = board.model
for t in tags:
    m.put(t, "back_a")
t_home = m.now_us
t_check = t_home
dev.load(custody.A)
# Preallocated, so that recording a figure does not grow the heap it measures.
from array import array
times = [array("i", bytes(4 * (N + 8))), array("i", bytes(4 * (N + 8)))]
heap = [array("i", bytes(4 * (N + 8))), array("i", bytes(4 * (N + 8)))]
nt = [0, 0]
nh = [0, 0]
while dev.phase != device.IDLE:
    p = 0 if dev.phase == device.CHECK else 1
    gc.collect()
    a = gc.mem_alloc()
    # With LOCKED, every card but the first and last three of a pass runs
    # with the heap locked: an allocation there is a MemoryError.
    lock = LOCKED and 3 <= dev.i < N - 3
    t = time.ticks_us()
    if lock:
        micropython.heap_lock()
    try:
        dev.step()
    except MemoryError:
        micropython.heap_unlock()
        print("allocates", p, dev.i)
        break
    if lock:
        micropython.heap_unlock()
    times[p][nt[p]] = time.ticks_diff(time.ticks_us(), t)
    nt[p] += 1
    if dev.phase != device.IDLE:
        gc.collect()
        heap[p][nh[p]] = gc.mem_alloc() - a
        nh[p] += 1
    if p == 0 and dev.phase == device.SHUFFLE:
        t_check = m.now_us
for p in (0, 1):
    ts = sorted(times[p][:nt[p]]) or [0]
    hs = heap[p][5:nh[p] - 5]
    print("pass", p, len(ts), ts[len(ts) // 2], ts[len(ts) * 99 // 100], sum(hs), len(hs))
print("model", t_home, t_check - t_home, m.now_us - t_check, m.steps[0], m.steps[1])
print("state", dev.machine.state[custody.A])
"""


def run_machine(decks=8, heap="320k", locked=False):
    """Figures of one batch through the device and the model, in the VM, from
    the mpy-cross compiled firmware (as the emulator runs it)."""
    import os
    import subprocess
    import tempfile

    from host_tools.sim.shuffler_emulate import TwoBatchSet, stage_code
    with tempfile.TemporaryDirectory() as tmp:
        cardset = os.path.join(tmp, "cardset.bin")
        tags = os.path.join(tmp, "tags.txt")
        cards = TwoBatchSet(decks)
        with open(cardset, "wb") as f:
            f.write(cards.encode())
        with open(tags, "w") as f:
            f.write("".join(u.hex() + "\n" for u in cards.new_deck_order(1)))
        program = (MACHINE_PROGRAM.replace("DECKS", str(decks)).replace("STATE", os.path.join(tmp, "c.json"))
                   .replace("CARDSET", cardset).replace("TAGS", tags)
                   .replace("LOCKED", "True" if locked else "False"))
        env = dict(os.environ, MICROPYPATH=stage_code())
        proc = subprocess.run(vm.micropython_cmd(["-c", program], heap=heap), env=env, capture_output=True,
                              timeout=600, stdin=subprocess.DEVNULL)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    if rc != 0:
        text = (err or out).decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError("the MicroPython VM stopped with status %d: %s" % (rc, text[0]))
    fig = {}
    for line in out.decode().splitlines():
        f = line.split()
        if f[0] == "pass":
            name = ("check_pass", "shuffle_pass")[int(f[1])]
            fig[name + "_steps"] = int(f[2])
            fig[name + "_us_per_card_median"] = int(f[3])
            fig[name + "_us_per_card_p99"] = int(f[4])
            fig[name + "_heap_kept_bytes_per_card"] = int(f[5]) / max(1, int(f[6]))
        elif f[0] == "model":
            fig["model_home_s"] = int(f[1]) / 1e6
            fig["model_check_pass_s"] = int(f[2]) / 1e6
            fig["model_shuffle_pass_s"] = int(f[3]) / 1e6
            fig["model_batch_s"] = (int(f[2]) + int(f[3])) / 1e6
            fig["elevator_steps"] = int(f[4])
            fig["feed_steps"] = int(f[5])
        elif f[0] == "allocates":
            fig["allocates_in_pass_at_card"] = (("check", "shuffle")[int(f[1])], int(f[2]))
        elif f[0] == "state":
            fig["end_state"] = f[1]
    return fig


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
    parser.add_argument("--machine", action="store_true",
                        help="also run one batch through the device on the mechanism model")
    args = parser.parse_args(list(argv))
    print(report(run_bench(args.decks, args.runs), args.decks))
    if args.machine:
        print(report_machine(run_machine(args.decks), args.decks))
    return 0


def report_machine(fig, decks):
    return "\n".join(["shuffler device on the mechanism model, MicroPython unix VM (320 KiB heap), %d decks:"
                      % decks] + ["  %-40s %s" % (k, ("%.3f" % v) if isinstance(v, float) else v)
                                  for k, v in fig.items()])
