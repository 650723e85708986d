"""`shoe bridge --port DEVICE [--db PATH] [--key-file F] [--no-console]`.

Runs one shoe's link into the store with the live console, and takes pit
commands from the keyboard and from the control socket ``PATH.ctl``
(host_tools/bridge/control.py). `shoe bridge --db PATH --send LINE` is that
socket's client: it asks a running bridge to do LINE and prints the reply.
Both check a command with the shoe's own parser (firmware/link/schema.py),
so a bad argument is refused with the shoe's message before it is signed.

Display work (console, edge monitor) runs after each batch of frames has
been committed and acknowledged, so it can never delay an ack.
"""

import json
import os
import signal
import sys
import time

from host_tools import vm
from host_tools.bridge import control
from host_tools.bridge.console import TableView
from host_tools.bridge.session import Bridge, read_key
from host_tools.store import db

vm.use_firmware()
from link import schema  # noqa: E402
from link.proto import Rejected  # noqa: E402

# console keys -> control lines (the same path a script uses)
KEYS = {"b": "bets", "x": "exposed", "s": "status", "n": "new_shoe", "t": "time"}
REFRESH_S = 0.25


def add_arguments(parser):
    parser.add_argument("--port", help="the shoe's serial device (e.g. /dev/ttyACM0 or a pty)")
    parser.add_argument("--db", default="shoe.db", help="the store's SQLite file (default shoe.db)")
    parser.add_argument("--key-file", help="the shoe's 32-byte key (shoe_key.bin); without it the "
                        "bridge only records and cannot acknowledge or command")
    parser.add_argument("--no-console", action="store_true", help="log lines instead of the live console")
    parser.add_argument("--send", metavar="LINE",
                        help="send LINE to the bridge already running on --db and print its reply")


def _usage():
    words = []
    for name, args in schema.COMMANDS:
        shown = "new_shoe" if name == "shoe" else name
        if args:
            shown += " [%s]" % " ".join(a[0] + "=" for a in args)
        words.append(shown)
    return ", ".join(words + ["state"])


def parse_control(line):
    """A control line -> (command name, args) for the shoe, or ("state", None).

    The line is checked by the shoe's own parser (link/schema.py) so a bad
    argument is refused here, with the shoe's message, and never signed;
    args come back in the schema's canonical order. ``new_shoe`` is ``shoe``
    and ``time`` without ``t=`` is the pit PC's clock. Raises ValueError
    with the reason for anything else.
    """
    words = line.split()
    if not words:
        raise ValueError("empty request")
    name, rest = words[0], words[1:]
    if name == "new_shoe":
        name = "shoe"
    if name == "state" and not rest:
        return "state", None
    if name not in schema.NAMES:
        raise ValueError("unknown request %r (%s)" % (line, _usage()))
    if name == "time" and not rest:
        rest = ["t=%d" % int(time.time())]
    try:
        schema.parse_command(" ".join([name] + rest))
        body = schema.command_text(name, [w.split("=", 1) for w in rest])
    except Rejected as e:
        raise ValueError(e.message)
    pairs = [tuple(w.split("=", 1)) for w in body.split()[1:]]
    return name, pairs or None


class Runner:
    """The bridge plus everything around it that a person or a script sees."""

    def __init__(self, bridge, view, console=None, monitor_factory=None):
        self.bridge = bridge
        self.view = view
        self.console = console
        self.pending = []
        self.monitor_factory = monitor_factory
        self.monitor = None
        self.primed = None  # the shoe whose stored history the view holds
        bridge.on_event = lambda seq, event: self.pending.append((seq, event))
        bridge.on_link = self._link

    def _link(self, state, detail):
        self.view.link_state(state, detail)
        tilt = (self.bridge.hello or {}).get("tilt")
        if tilt:
            self.view.tilt = tilt  # the hello repeats it at every connection
        if self.console is None:
            print("link %s: %s" % (state, detail), flush=True)

    def handle(self, line):
        try:
            name, args = parse_control(line)
        except ValueError as e:
            return "error %s" % e
        if name == "state":
            return "ok " + json.dumps(self.bridge.status(), sort_keys=True)
        return self.bridge.command(name, args)

    def _prime(self, shoe_id):
        """A (re)started bridge shows the table as the store knows it, not an
        empty screen: replay the stored history into the view, and the
        current card set's cards into the edge monitor."""
        self.view = TableView(shoe_id)
        self.view.link_state(self.bridge.state)
        self.primed = shoe_id
        history = [(seq, json.loads(text)) for _s, seq, text, _p, _h in self.bridge.store.events(shoe_id)]
        last_set = max([i for i, (_q, e) in enumerate(history) if e.get("type") == "shoe"], default=None)
        for i, (seq, event) in enumerate(history):
            self.view.event(event, seq)
            if last_set is not None and i >= last_set and event.get("type") in ("shoe", "card"):
                self._monitor(event)
        done = history[-1][0] if history else 0
        self.pending = [(q, e) for q, e in self.pending if q > done]
        self.view.tilt = (self.bridge.hello or {}).get("tilt") or self.view.tilt

    def drain(self):
        """Show what was committed since the last turn."""
        if self.bridge.shoe_id is not None and self.primed != self.bridge.shoe_id:
            self._prime(self.bridge.shoe_id)
        pending, self.pending = self.pending, []
        for seq, event in pending:
            self.view.event(event, seq)
            self._monitor(event)
            if self.console is None and event.get("type") in ("irregularity", "error", "tilt",
                                                              "shoe_end", "link_down", "link_up"):
                print("seq %d %s" % (seq, json.dumps(event)), flush=True)
        return bool(pending)

    def _monitor(self, event):
        if self.monitor_factory is None:
            return
        if event.get("type") == "shoe" or self.monitor is None:
            try:
                self.monitor = self.monitor_factory(event)
            except Exception as e:  # the monitor is advisory; the record is not
                self.view.alert("edge monitor unavailable: %s" % e)
                self.monitor_factory = None
                return
        try:
            raised = self.monitor.observe(event)
        except Exception as e:
            self.view.alert("edge monitor failed on %s: %s" % (event.get("type"), e))
            return
        for alert in raised or ():
            if "house_edge" in alert:
                self.view.alert("%s round %s: %s house edge %.3f%% with %s cards left" % (
                    alert.get("type"), alert.get("round"), alert.get("wager"),
                    100.0 * alert["house_edge"], alert.get("cards_left")))
            else:
                self.view.alert("%s: %s" % (alert.get("type"), alert.get("message")))
        if getattr(self.monitor, "last", None):
            low = min(self.monitor.last.items(), key=lambda kv: kv[1])
            self.view.edges = "lowest house edge: %s %.3f%%" % (low[0], 100.0 * low[1])


def edge_monitor_factory():
    """The analysis package's EdgeMonitor, when that package is installed."""
    try:
        from host_tools.analysis.monitor import EdgeMonitor
    except ImportError:
        return None

    def make(event):
        settings = {"designation": event.get("designation", "standard")}
        return EdgeMonitor(decks=event.get("decks", 8), table_settings=settings)
    return make


def run(args):
    if args.send:
        try:
            parse_control(args.send)  # refused here, with the shoe's message, before any bridge sees it
        except ValueError as e:
            print("error %s" % e)
            return 2
        try:
            print(control.request(args.db, args.send))
        except OSError as e:
            print("bridge: no bridge is listening on %s (%s)" % (control.socket_path(args.db), e),
                  file=sys.stderr)
            return 2
        return 0
    if not args.port:
        print("bridge: --port is required", file=sys.stderr)
        return 2
    key = None
    if args.key_file:
        try:
            key = read_key(args.key_file)
        except (OSError, ValueError) as e:
            print("bridge: %s" % e, file=sys.stderr)
            return 2
    store = db.Store(args.db)
    bridge = Bridge(store, args.port, key)
    view = TableView()
    console = None
    if not args.no_console:
        from rich.console import Console
        console = Console()
    runner = Runner(bridge, view, console, edge_monitor_factory())
    server = control.ControlServer(control.socket_path(args.db), runner.handle)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    if key is None:
        print("bridge: no --key-file: recording only (no acks, no commands)", file=sys.stderr)
    try:
        if console is None:
            _loop(runner, server, stopping)
        else:
            _live(runner, server, stopping, console)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        bridge.close()
        store.close()
    return 0


def _loop(runner, server, stopping, extra_fd=None, on_key=None, redraw=None):
    fds = [server.fileno()] + ([extra_fd] if extra_fd is not None else [])
    last_draw = 0.0
    while not stopping:
        ready = runner.bridge.poll(0.1, fds)
        if server.fileno() in ready:
            server.serve_ready()
        if extra_fd is not None and extra_fd in ready:
            if on_key(os.read(extra_fd, 16)) is False:
                return
        changed = runner.drain()
        now = time.monotonic()
        if redraw is not None and (changed or now - last_draw > 1.0) and now - last_draw > REFRESH_S:
            redraw()
            last_draw = now


def _live(runner, server, stopping, console):
    import termios
    import tty

    from rich.live import Live

    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    saved = termios.tcgetattr(fd) if fd is not None else None

    def on_key(data):
        for ch in data.decode(errors="replace").lower():
            if ch == "q":
                return False
            if ch in KEYS:
                runner.view.notice = runner.handle(KEYS[ch])
        return True

    try:
        if fd is not None:
            tty.setcbreak(fd)
        with Live(runner.view.render(), console=console, auto_refresh=False) as live:
            _loop(runner, server, stopping, fd, on_key,
                  lambda: live.update(runner.view.render(), refresh=True))
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
