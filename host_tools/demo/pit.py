"""`shoe demo --tables N --serve [--port P]`: a pit of emulated tables, served until Ctrl-C.

What a newcomer (or a page developer) needs: a live pit to look at. N
tables run under the real pit service (service.py, one bridge thread each,
group commit into one store) with its page (web.py); the address is
printed, and every table deals shoe after shoe until SIGINT or SIGTERM,
which end it cleanly with exit 0.

The shoes: up to ``VM_TABLES`` tables are the firmware in the MicroPython
VM (host_tools/sim/emulate.py, as `shoe demo` runs it), each dealt seeded shoes
by the simulated dealer at ``--pace``. More tables than that would need a
VM process each, so they are CPython stand-ins (standin.py: the firmware's
shoe session, game and link core under CPython on a pty, one per table)
dealt seeded shoes at a dealer's pace; what runs is said on the first line.
"""

import asyncio
import os
import sys
import threading
import time

VM_TABLES = 4


def add_arguments(parser):
    """`shoe demo`'s options for the pit (host_tools/demo/shoe.py has the rest)."""
    parser.add_argument("--tables", type=int, help="with --serve: how many tables (default 2)")
    parser.add_argument("--serve", action="store_true",
                        help="serve the tables under the pit service and its page until Ctrl-C")
    parser.add_argument("--port", type=int, default=8080,
                        help="with --serve: the page's port on 127.0.0.1 (0: any free one; default 8080)")
    parser.add_argument("--shoes", choices=("auto", "vm", "standin"), default="auto",
                        help="with --serve: firmware in the VM, CPython stand-ins, or auto "
                             "(the VM up to %d tables)" % VM_TABLES)


def check(args):
    """None, or the one-line reason these options cannot run."""
    if args.tables is not None and not args.serve:
        return "--tables needs --serve (`shoe demo` alone deals one shoe and ends)"
    if args.serve:
        tables = 2 if args.tables is None else args.tables
        if not 1 <= tables <= 512:
            return "--tables must be 1..512, not %d" % tables
        if not 0 <= args.port <= 65535:
            return "--port must be 0..65535, not %d" % args.port
        if args.port:
            taken = _port_taken(args.port)
            if taken:
                return taken
    return None


def _port_taken(port):
    """Why the page cannot have ``port`` on 127.0.0.1, or None: asked before
    any emulator boots, so a taken port is said at once, not after them."""
    import errno
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the page's own server binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return "--port %d is taken on 127.0.0.1 (another program listens there): give another, " \
                       "or --port 0 for any free one" % port
            return "--port %d cannot be used on 127.0.0.1: %s" % (port, e.strerror or e)
    return None


class VMTable:
    """One table's shoe in the VM and its dealer thread: shoe after shoe."""

    def __init__(self, devices, shoe_id, seed, pace, irregularities):
        from host_tools.sim.emulate import Emulator
        self.emu = Emulator(os.path.join(devices, shoe_id), shoe_id, secure=True)
        self.shoe_id, self.key, self.path = shoe_id, self.emu.key, self.emu.host_path
        self.seed, self.pace, self.irregularities = seed, pace, irregularities
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._deal, name="dealer-%s" % shoe_id, daemon=True)

    def start(self):
        self.emu.start()
        self.thread.start()

    def _deal(self):
        from host_tools.sim import dealer
        self.emu.wait_booted()
        seed = self.seed
        while not self.stop.is_set():
            for line in dealer.Dealer(seed, irregularity_rate=self.irregularities).lines():
                if self.stop.wait(self.pace):
                    return
                try:
                    self.emu.deal(line)
                except OSError:
                    return  # the VM is being closed
            seed += 1000
            self.stop.wait(3 * self.pace)  # the table is cleared between shoes

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.emu.close()


def _write_key(path, key):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)


def _demo_logins(users_file):
    """One login per staff role, each with a new random password, so that
    the page can be tried at once: [(name, password)], also written to the
    demo's users file (argon2 hashes, as `shoe pit adduser` writes it)."""
    import secrets
    from host_tools.pit import users as users_mod
    made = []
    for role in users_mod.ROLES:
        password = secrets.token_urlsafe(12)
        users_mod.add(users_file, role, role, password)
        made.append((role, password))
    return made


def serve(args, console=None):
    """Run the pit until SIGINT/SIGTERM; the exit code."""
    from host_tools.pit import config as config_mod
    from host_tools.sim import standin

    from host_tools.demo import proof
    from host_tools.sim import tablechips

    n = 2 if args.tables is None else args.tables
    pace = 0.5 if args.pace is None else args.pace
    vm_shoes = args.shoes == "vm" or (args.shoes == "auto" and n <= VM_TABLES)
    store = args.db   # checked and made absolute by `shoe demo` (proof.store_path)
    workdir = os.path.dirname(store)
    # Every table's flash (or stand-in journal), link key, chip and public
    # key in one private directory beside the store (proof.py).
    keys = proof.device_dir(store)
    ids = ["DEMO%d" % (i + 1) for i in range(n)]
    shoes, floor = [], None
    code, argv = 1, None
    try:
        if vm_shoes:
            print("shoe demo: %d tables, each the firmware in the MicroPython VM with its simulated secure "
                  "element, dealt seeded shoes one line every %.2f s" % (n, pace), flush=True)
            for i, shoe_id in enumerate(ids):
                shoes.append(VMTable(keys, shoe_id, args.seed + i, pace, args.irregularities))
        else:
            print("shoe demo: %d tables, each the firmware's shoe session under CPython (a stand-in) with a "
                  "simulated secure element, dealt seeded shoes from seed %d, one dealer action every %.1f s"
                  % (n, args.seed, standin.PACE_S), flush=True)
            standin.room_for(n)
            tablechips.provision(keys, ids)
            for i, shoe_id in enumerate(ids):
                shoes.append(standin.StandIn(shoe_id, seed=args.seed + i, irregularities=args.irregularities,
                                             workdir=workdir, secure=tablechips.chip(keys, shoe_id),
                                             manifest=tablechips.MANIFEST))
        # HTTPS even on loopback: the demo runs as a pit does (a trial pair, `shoe pit selfsigned`).
        from host_tools.pit import tls
        cert, tls_key = os.path.join(workdir, "tls", "pit.crt"), os.path.join(workdir, "tls", "pit.key")
        if not (os.path.exists(cert) and os.path.exists(tls_key)):
            for p in (cert, tls_key):
                if os.path.exists(p):
                    os.unlink(p)
            tls.selfsigned(cert, tls_key, ["127.0.0.1", "localhost"])
        lines = ['store = "%s"' % store, "[web]", 'host = "127.0.0.1"', "port = %d" % args.port,
                 'cert = "%s"' % cert, 'key = "%s"' % tls_key]
        for i, s in enumerate(shoes):
            key_file = os.path.join(keys, "%s.key" % s.shoe_id)
            if not os.path.exists(key_file):
                _write_key(key_file, s.key)
            lines += ["[[table]]", 'name = "T%d"' % (i + 1), 'port = "%s"' % s.path,
                      'key_file = "%s"' % key_file, 'shoe = "%s"' % s.shoe_id]
        config_path = os.path.join(workdir, "pit.toml")
        with open(config_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        cfg = config_mod.load(config_path)
        proof.close_up(keys)
        print("  logins (this demo only): " + ", ".join("%s / %s" % np for np in _demo_logins(cfg.users)),
              flush=True)
        if vm_shoes:
            for s in shoes:
                with proof.held():
                    s.start()
        else:
            floor = standin.Floor(shoes, seed=args.seed)
            floor.start()
            floor.start_dealing()
        argv = proof.verify_argv(store, key_dir=keys)
        print("  the record's proof, once stopped: %s" % proof.command_line(argv), flush=True)
        code = asyncio.run(_serve(cfg, config_path))
    except KeyboardInterrupt:
        code = 0
    finally:
        if floor is not None:
            floor.close()
        elif vm_shoes:
            for s in shoes:
                s.close()
        proof.close_up(keys)
    if code == 0 and argv is not None:
        code = _prove(proof, argv)
    return code


def _prove(proof, argv):
    """Run the printed verify command on the stopped pit's store: the
    demo's own check that what it recorded is every shoe's own."""
    rc, out = proof.run_verify(argv)
    print("%s: %s" % (proof.command_line(argv), "exit 0, every table's record its shoe's own" if rc == 0
                      else "FAILED (exit %d)" % rc), flush=True)
    if rc:
        print(out, flush=True)
    return 0 if rc == 0 else 1


async def _serve(cfg, config_path):
    from host_tools.pit import command as pit_command
    from host_tools.pit import serving, tls
    from host_tools.pit.service import Pit

    serving.raise_nofile()
    ssl_context = tls.context(cfg.cert, cfg.key)
    pit = Pit(cfg)
    pit.start()
    started = time.monotonic()

    def announce(port):
        print("  store %s; config %s (add a login: shoe pit adduser NAME --role supervisor --config %s); "
              "certificate %s (self-signed); Ctrl-C ends" % (cfg.store, config_path, config_path, cfg.cert),
              flush=True)
    try:
        code = await pit_command.serve(pit, cfg, ssl_context, "pit", announce)
        if code == pit_command.EXIT_OK:
            print("demo: stopped after %.0f s" % (time.monotonic() - started), flush=True)
        return code
    finally:
        pit.close()
