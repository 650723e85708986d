"""`shoe soak casino`: the chaos run of issue 13 on this machine.

Two pits of simulated tables (one process each), a hub, a leaf per pit,
two `shoe central` processes and PostgreSQL (host_tools/sim/rigs/casino.py).
At random moments it SIGKILLs and restarts the hub, a leaf, a consumer,
PostgreSQL or a pit server, cuts a pit off the hub (its leaf restarted
without its remote for a while), and injects forged and replayed events at
a leaf. Then the pits stop dealing and it waits for the record to catch up.

It prints the kills of each kind and the counts, and exits 1 unless the
central record equals the union of the pit stores event for event (0 lost,
0 duplicated, 0 extra, 0 different), `shoe verify --central` passes with
the shoes' public keys from the device registry (every simulated shoe
signs its checkpoints with a simulated secure element, sim/tablechips.py),
and every injected event was refused with an alert.
"""

import random
import tempfile
import time

from host_tools import argtypes
from host_tools.sim.rigs.casino import Rig

ACTIONS = ("hub", "leaf", "consumer", "postgres", "pit", "cut", "inject")


def add_arguments(parser):
    parser.add_argument("--seconds", type=argtypes.seconds(), default=60.0, help="how long the chaos lasts")
    parser.add_argument("--tables", type=int, default=4, help="tables per pit")
    parser.add_argument("--rate", type=float, default=5.0, help="events per second per table")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gap", type=argtypes.seconds(), default=2.0, help="mean seconds between two faults")
    parser.add_argument("--cut", type=argtypes.seconds(), default=5.0, help="seconds a pit stays cut off")
    parser.add_argument("--layout", choices=("leaf-buffer", "hub-capture"), default="leaf-buffer",
                        help="leaf nodes with their own JetStream domain, or plain leaves")
    parser.add_argument("--catch-up", type=float, default=180.0,
                        help="seconds allowed for the record to catch up at the end")


def run(args, out=print):
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="shoe-soak-casino-")
    # chips: every simulated shoe signs its checkpoints and verify --central
    # checks them with the registered public keys (not --mac-only)
    rig = Rig(workdir, pits=2, tables=args.tables, rate=args.rate,
              domains=args.layout == "leaf-buffer", chips=True)
    kills = {a: 0 for a in ACTIONS}
    injected = 0
    try:
        rig.start()
        out("soak casino: %s layout, %d pits x %d tables at %.0f events/s each, %.0f s of chaos, "
            "seed %d (logs in %s)" % (args.layout, len(rig.pits), args.tables, args.rate, args.seconds,
                                     args.seed, workdir))
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            time.sleep(rng.expovariate(1.0 / args.gap))
            action = rng.choice(ACTIONS)
            pit = rng.choice(rig.pits)
            down = rng.uniform(0.2, 2.0)
            if action == "hub":
                rig.hub.kill(); time.sleep(down); rig.hub.start()
            elif action == "leaf":
                rig.leaves[pit].kill(); time.sleep(down); rig.leaves[pit].start()
            elif action == "consumer":
                i = rng.randrange(rig.n_consumers)
                rig.kill_consumer(i); time.sleep(down); rig.start_consumer(i)
            elif action == "postgres":
                rig.pg.kill(); time.sleep(down); rig.pg.start()
            elif action == "pit":
                rig.kill_pit(pit); time.sleep(down); rig.start_pit(pit)
            elif action == "cut":
                leaf = rig.leaves[pit]
                remote, leaf.hub_leaf_url = leaf.hub_leaf_url, None
                leaf.stop(); leaf.start()
                time.sleep(args.cut)
                leaf.hub_leaf_url = remote
                leaf.stop(); leaf.start()
            elif action == "inject":
                try:
                    injected += rig.inject(pit)
                except Exception as e:  # the leaf may be down right now: that is not a finding
                    out("  inject at %s failed: %s" % (pit, e))
                    continue
            kills[action] += 1
        rig.stop_dealing()
        took = rig.converge(args.catch_up)
        c = rig.compare()
        rc_verify, verify_out = rig.verify_central()
    finally:
        rig.close()
    refused = c["alerts"].get("forged_event", 0)
    out("kills: hub %d, leaf %d, consumer %d, postgres %d, pit server %d; cuts %d; injections %d "
        "(%d events)" % (kills["hub"], kills["leaf"], kills["consumer"], kills["postgres"],
                         kills["pit"], kills["cut"], kills["inject"], injected))
    out("events %d, central %d, lost %d, duplicated %d, extra %d, different %d, refused forgeries %d "
        "of %d injected; caught up %s; verify --central %s" % (
            c["events"], c["central"], c["lost"], c["duplicated"], c["extra"], c["different"],
            refused, injected, "in %.1f s" % took if took is not None else "NOT in %.0f s" % args.catch_up,
            "ok" if rc_verify == 0 else "FAILED"))
    out("alerts: %s" % (", ".join("%s %d" % kv for kv in sorted(c["alerts"].items())) or "none"))
    ok = (not (c["lost"] or c["duplicated"] or c["extra"] or c["different"]) and rc_verify == 0
          and refused >= injected and took is not None)
    if rc_verify:
        out(verify_out.strip().splitlines()[-5:])
    if ok:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1

