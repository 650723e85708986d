"""`shoe central demo`: a two-pit casino on this machine (hub, leaves, PostgreSQL,
consumers and the central view), dealing simulated tables for ``--seconds``."""

import signal
import sys

from host_tools.casino import secrets
import tempfile
import time


def run(args):
    from host_tools.demo import proof
    from host_tools.sim.rigs.casino import Rig
    workdir = tempfile.mkdtemp(prefix="shoe-casino-")
    if not (args.rate > 0 and 1 <= args.tables <= 256):
        print("central demo: --rate must be positive and --tables 1..256", file=sys.stderr)
        return 2
    # chips: every table's shoe signs its checkpoints with its simulated
    # secure element, its public key registered centrally (sim/tablechips.py),
    # so the verify command printed below checks the auditor's rule.
    rig = Rig(workdir, pits=2, tables=args.tables, rate=args.rate, chips=True)
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
    viewer = None
    try:
        rig.start()
        print("casino demo: hub %s, leaves %s, PostgreSQL %s (TLS, NKEY users, SCRAM roles;"
              " every device registered)" % (
                  rig.hub.url, ", ".join("%s %s" % (p, leaf.url) for p, leaf in rig.leaves.items()),
                  secrets.dsn_label(rig.pg.dsn)))
        viewer = rig._spawn([sys.executable, "-m", "host_tools.cli", "central", "view", "--dsn",
                             rig.reader_dsn, "--host", args.host, "--port", str(args.port)], "view.log")
        print("  the central view (read-only): http://%s:%d/" % (args.host, args.port))
        print("  pit stores: %s" % ", ".join(rig.store_path(p) for p in rig.pits))
        print("  look: psql \"%s\" -c 'SELECT pit, tbl, count(*) FROM events GROUP BY 1, 2'"
              " (the read-only role; its password is in the passfile the DSN names)" % rig.reader_dsn)
        print("  certificates and credentials (0600): %s" % rig.trial.dir)
        print("  logs and keys: %s; dealing for %.0f s (Ctrl-C stops)" % (workdir, args.seconds),
              flush=True)
        t_end = time.monotonic() + args.seconds
        try:
            while time.monotonic() < t_end and not stopped:
                time.sleep(1)
                print("  central holds %d events" % rig.central_count(), flush=True)
        except KeyboardInterrupt:
            print("  interrupted")
        rig.stop_dealing()
        took = rig.converge(120)
        c = rig.compare()
        argv = proof.verify_argv(None, key_dir=rig.keydir, central=rig.reader_dsn)
        rc, out = proof.run_verify(argv)
        print("casino demo: %d events in the pit stores, %d central, lost %d, duplicated %d, extra %d"
              " (caught up in %s s)" % (
                  c["events"], c["central"], c["lost"], c["duplicated"], c["extra"],
                  "%.1f" % took if took is not None else "more than 120"))
        print("  %s" % proof.command_line(argv))
        print("  the central record %s" % ("is every shoe's own: exit 0" if rc == 0 else "FAILED (exit %d):" % rc))
        if rc:
            print(out)
        return 0 if rc == 0 and not (c["lost"] or c["duplicated"] or c["extra"]) else 1
    finally:
        if viewer is not None and viewer.poll() is None:
            viewer.terminate()
            try:
                viewer.wait(10)
            except Exception:
                rig.kill_proc(viewer)
        rig.close()
