"""`shoe bridge --port DEVICE [--db PATH] [--key-file F] [--table NAME] [--no-console]`.

Runs one shoe's link into the store with the live console, and takes pit
commands from the keyboard and from the control socket ``PATH.ctl``
(host_tools/bridge/control.py). `shoe bridge --db PATH --send LINE` is that
socket's client: it asks a running bridge to do LINE and prints the reply.
Both check a command with the shoe's own parser (firmware/link/schema.py),
so a bad argument is refused with the shoe's message before it is signed.
`shoe bridge --db PATH --check` prints the running bridge's recording state
in one line (``RECORDING: ...`` or ``NOT RECORDING: <reason>``) and exits 0
only while it records: a monitoring script needs nothing else.

Exit statuses (host_tools/exits.py; each failure one line, never a traceback):
0 ok (the shoe accepted the command) / RECORDING; 1 NOT RECORDING
(``--check``), or a request the bridge or the shoe refused, with the shoe's
reason, or one the shoe did not answer within answers.ANSWER_S (``--send``);
2 bad arguments, a bad request line or an unusable key file; 5 the store
cannot be used; 7 another bridge owns this store, or another program holds
the port; 8 no bridge is running on this store (``--send``, ``--check``).

Display work (console, edge monitor) runs after each batch of frames has
been committed and acknowledged, so it can never delay an ack. The bridge
logs (stdlib logging, timestamped) to ``PATH.log`` beside the store.
"""

import getpass
import json
import logging
import os
import signal
import socket
import sys
import time

from host_tools import logfile
from host_tools.exits import EXIT_BUSY, EXIT_FOUND, EXIT_NO_BRIDGE, EXIT_OK, EXIT_STORE, EXIT_USAGE
from host_tools.analysis.monitor import factory as edge_monitor_factory
from host_tools.bridge import control
from host_tools.bridge.console import TableView, event_line
from host_tools.bridge.line import Bridge
from host_tools.protocol import alerts, answers
from host_tools.protocol.command_line import parse_command_line
from host_tools.protocol.keys import key_id, read_key
from host_tools.protocol.untrusted import parse_json, shown
from host_tools.store import audit, db

from firmware.link import events_schema

log = logging.getLogger("shoe.bridge")


# console keys -> control lines (the same path a script uses)
KEYS = {"b": "bets", "x": "exposed", "s": "status", "n": "new_shoe", "t": "time", "c": "clear_stop"}
# Keys that change the game ask first: one stray keypress must not void a
# round (y confirms; any other key cancels).
CONFIRM = {"b": "close betting (no more bets) for the next round",
           "x": "deal the next round exposed: it will be void for wagers",
           "n": "start a NEW SHOE: the round in play is void and this shoe ends",
           "c": "CLEAR the cold-deck STOP (Ch 5A): only after inspecting the cards"}
REFRESH_S = 0.25


def add_arguments(parser):
    parser.add_argument("--port", help="the shoe's serial device (e.g. /dev/ttyACM0 or a pty)")
    parser.add_argument("--db", default="shoe.db", help="the store's SQLite file (default shoe.db)")
    parser.add_argument("--key-file", help="the shoe's 32-byte key (shoe_key.bin); without it the "
                        "bridge only records and cannot acknowledge or command")
    parser.add_argument("--no-console", action="store_true", help="log lines instead of the live console")
    parser.add_argument("--send", metavar="LINE",
                        help="send LINE to the bridge already running on --db and print its reply")
    parser.add_argument("--check", action="store_true",
                        help="print RECORDING or NOT RECORDING: <reason> for the bridge running on "
                        "--db; exit 0 only while it records")
    parser.add_argument("--table", metavar="NAME", help="the table's name on the console "
                        "(default: the shoe id)")


class Runner:
    """The bridge plus everything around it that a person or a script sees."""

    def __init__(self, bridge, view, console=None, monitor_factory=None, table=None):
        self.bridge = bridge
        self.view = view
        self.console = console
        self.table = table
        self.pending = []
        self.monitor_factory = monitor_factory
        self.monitor = None
        self.primed = None  # the shoe whose stored history the view holds
        self.asking = None  # a game-changing key waiting for y
        self.said = None    # the recording state last printed (--no-console)
        self.shown = 0      # the last seq the view took from the store when it was primed
        # The link calls these as it commits, changes state or stores an
        # alert (the Bridge passes the writes on to its link).
        self.waiting = []   # Answers: commands sent, the shoe's answer not yet shown
        self.answers = {}   # command counter -> the shoe's answer event, until its Answer takes it
        bridge.on_event = self._committed
        bridge.on_link = self._link
        bridge.on_alert = self._alert

    def _committed(self, seq, event):
        self.pending.append((seq, event))
        counter = answers.answer_counter(event)
        if counter is not None and any(a.counter == counter for a in self.waiting):
            self.answers[counter] = event

    def _link(self, state, detail):
        self.view.link_state(state, detail)
        tilt = (self.bridge.hello or {}).get("tilt")
        if tilt:
            self.view.tilt = tilt  # the hello repeats it at every connection
        if self.console is None:
            print("link %s: %s" % (state, detail), flush=True)

    def _alert(self, severity, kind, detail):
        if kind in alerts.CLEARS_ITSELF and severity == alerts.INFO:
            self.view.clear(kind)  # the condition is over: its alarm goes, this note stays
        self.view.alert("%s: %s" % (kind, detail), severity, kind)
        if self.console is None:
            print("alert %s %s: %s" % (severity, kind, detail), flush=True)

    def handle(self, line):
        try:
            name, args = parse_command_line(line)
        except ValueError as e:
            return "error %s" % e
        if name == "state":
            return "ok " + json.dumps(self.bridge.status(), sort_keys=True)
        reply = self.bridge.command(name, args)
        if answers.sent_counter(reply) is None:
            self._audit(name, reply)  # not sent: this line is the whole answer
            if name == "status":
                reply += "; " + self.bridge.recording_line()
            return reply
        answer = Answer(self, name, reply)
        self.waiting.append(answer)
        return answer

    def _audit(self, name, reply):
        """A command from this console (or its control socket) is a row of
        the store's chained audit log, as one from the pit page is
        (host_tools/store/audit.py): who sent what, and the bridge's reply.
        The person at the console is the pit PC's logged-in user."""
        user = getpass.getuser()
        table = self.table or self.bridge.shoe_id or "-"
        try:
            self.bridge.store.write(lambda store: audit.record(
                store.db, user, "console", "console on %s" % socket.gethostname(), table, "command",
                name, shown(reply, 160)))
        except db.StoreError as e:
            log.error("the audit row of %s could not be written: %s", name, e)

    def _answered(self):
        """Show each command's answer once the shoe gave it (or its time ran out)."""
        for answer in list(self.waiting):
            text = answer()
            if text is not None:
                self.waiting.remove(answer)
                if answer.on_console:
                    self.view.notice = text

    def _from_key(self, line):
        reply = self.handle(line)
        if isinstance(reply, Answer):
            reply.on_console = True
            return "%s; waiting for the shoe's answer" % reply.sent
        return reply

    def key(self, ch):
        """One console keypress; False to quit. Game-changing keys ask
        first (y/N); every reply is shown on the console's reply line."""
        if self.asking is not None:
            asked, self.asking = self.asking, None
            self.view.prompt = ""
            if ch == "y":
                self.view.notice = self._from_key(KEYS[asked])
            else:
                self.view.notice = "cancelled: %s" % KEYS[asked]
            return True
        if ch == "q":
            return False
        if ch in CONFIRM:
            self.asking = ch
            self.view.prompt = "%s%s? y = yes, any other key = no" % (CONFIRM[ch][0].upper(), CONFIRM[ch][1:])
        elif ch in KEYS:
            self.view.notice = self._from_key(KEYS[ch])
        return True

    def _prime(self, shoe_id):
        """A (re)started bridge shows the table as the store knows it, not an
        empty screen: feed the stored history into the view, and the
        current card set's cards into the edge monitor. A stored row the
        link schema rejects (an older bridge stored it, or someone edited
        the file) is skipped and named in an alert: it never stops a start."""
        self.view = TableView(shoe_id, table=self.table)
        self.view.link_state(self.bridge.state)
        self.primed = shoe_id
        history = []
        for _s, seq, text, _p, _h in self.bridge.store.events(shoe_id):
            event, why = parse_json(text)
            if why is None:
                why = events_schema.check_event(event)
            if why is not None:
                message = "stored event seq %d fails the link schema (%s): skipped" % (seq, shown(why, 100))
                log.warning("shoe %s: %s", shoe_id, message)
                self.view.alert(message, "warning")
                continue
            history.append((seq, event))
        last_set = max([i for i, (_q, e) in enumerate(history) if e.get("type") == "shoe"], default=None)
        for i, (seq, event) in enumerate(history):
            self.view.event(event, seq)
            if last_set is not None and i >= last_set and event.get("type") in ("shoe", "card"):
                self._monitor(event)
        self.shown = history[-1][0] if history else 0
        self.view.tilt = (self.bridge.hello or {}).get("tilt") or self.view.tilt

    def drain(self):
        """Show what was committed since the last turn: on the console, and
        in quiet mode one line per event this bridge committed."""
        if self.bridge.shoe_id is not None and self.primed != self.bridge.shoe_id:
            self._prime(self.bridge.shoe_id)
        pending, self.pending = self.pending, []
        for seq, event in pending:
            if self.console is None:
                print(event_line(seq, event), flush=True)
            if seq <= self.shown:
                continue  # already in the view, from the store at its priming
            self.view.event(event, seq)
            self._monitor(event)
        self._answered()
        self.view.recording = ok, why = self.bridge.recording()
        # A line when the state or the reason changes, not at every stored seq.
        said = (ok, None if ok else why)
        if said != self.said:
            self.said = said
            line = self.bridge.recording_line()
            log.info(line)
            if self.console is None:
                print(line, flush=True)
        return bool(pending)

    def _monitor(self, event):
        if self.monitor_factory is None:
            return
        if event.get("type") == "shoe" or self.monitor is None:
            try:
                self.monitor = self.monitor_factory(event)
            except Exception as e:  # the monitor is advisory; the record is not
                self.view.alert("edge monitor unavailable: %s" % e, "info")
                self.monitor_factory = None
                return
        try:
            raised = self.monitor.observe(event)
        except Exception as e:
            self.view.alert("edge monitor failed on %s: %s" % (event.get("type"), e), "info")
            return
        for alert in raised or ():
            if "house_edge" in alert:
                self.view.alert("%s round %s: %s house edge %.3f%% with %s cards left" % (
                    alert.get("type"), alert.get("round"), alert.get("wager"),
                    100.0 * alert["house_edge"], alert.get("cards_left")), "info",
                    "edge %s %s" % (alert.get("type"), alert.get("wager")))
            else:
                self.view.alert("%s: %s" % (alert.get("type"), alert.get("message")), "info")
        if getattr(self.monitor, "last", None):
            low = min(self.monitor.last.items(), key=lambda kv: kv[1])
            self.view.edges = "lowest house edge: %s %.3f%%" % (low[0], 100.0 * low[1])


class Answer:
    """A command the shoe has been sent: called, its reply line once the
    shoe's own answer came (answers.reply_line) or ANSWER_S passed, else
    None. The control socket keeps the client's connection until then; the
    audit row records the answer, not the sending."""

    def __init__(self, runner, name, sent):
        self.runner, self.name, self.sent = runner, name, sent
        self.counter = answers.sent_counter(sent)
        self.deadline = time.monotonic() + answers.ANSWER_S
        self.on_console = False
        self.text = None

    def __call__(self):
        if self.text is None:
            event = self.runner.answers.pop(self.counter, None)
            if event is None and time.monotonic() < self.deadline:
                return None
            text = answers.reply_line(self.sent, event)
            if self.name == "status":
                # what the supervisor asks "status" for: is this table recorded?
                text += "; " + self.runner.bridge.recording_line()
            self.runner._audit(self.name, text)
            self.text = text
        return self.text


def run(args):
    if args.send or args.check:
        return _client(args)
    if not args.port:
        print("bridge: --port is required", file=sys.stderr)
        return EXIT_USAGE
    key = None
    if args.key_file:
        try:
            key = read_key(args.key_file)
        except (OSError, ValueError) as e:
            print("bridge: %s" % (e if isinstance(e, ValueError) else "cannot read the key file %s: %s"
                                  % (args.key_file, e.strerror)), file=sys.stderr)
            return EXIT_USAGE
    where = os.path.dirname(os.path.abspath(args.db))
    if not os.path.isdir(where):
        print("bridge: cannot use --db %s: the directory %s does not exist" % (args.db, where),
              file=sys.stderr)
        return EXIT_STORE
    try:
        server_lock = control.ControlServer(control.socket_path(args.db), None,
                                            "on %s" % args.port)
    except control.Busy as e:
        print("bridge: %s: one bridge per store, not starting" % e, file=sys.stderr)
        return EXIT_BUSY
    except OSError as e:
        print("bridge: cannot use --db %s: %s" % (args.db, e.strerror or e), file=sys.stderr)
        return EXIT_STORE
    try:
        store = db.Store(args.db)
    except db.StoreError as e:
        server_lock.close()
        print("bridge: %s" % e, file=sys.stderr)
        return EXIT_STORE
    handler = logfile.to_file(args.db + ".log")
    log.info("bridge started: pid %d, port %s, store %s, key %s", os.getpid(), args.port, args.db,
             key_id(key) if key is not None else "none")
    from host_tools.protocol.keys import deployed_manifest
    # `shoe deploy`'s record beside the key: the firmware the hello must name.
    bridge = Bridge(store, args.port, key, deployed=deployed_manifest(args.key_file) if args.key_file else None)
    try:
        bridge._open()
        if bridge.busy:
            print("bridge: %s: not starting" % bridge.busy.split(";")[0], file=sys.stderr)
            log.error("not starting: %s", bridge.busy)
            return EXIT_BUSY
        view = TableView(table=args.table)
        console = None
        if not args.no_console:
            from rich.console import Console
            console = Console()
        runner = Runner(bridge, view, console, edge_monitor_factory(), table=args.table)
        server_lock.handle = runner.handle
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        if key is None:
            print("bridge: NOT RECORDING: " + bridge.recording()[1], file=sys.stderr)
        try:
            if console is None:
                _loop(runner, server_lock, stopping)
            else:
                _live(runner, server_lock, stopping, console)
        except KeyboardInterrupt:
            pass
    finally:
        server_lock.close()
        bridge.close()
        store.close()
        log.info("bridge stopped")
        logging.getLogger("shoe").removeHandler(handler)
        handler.close()
    return EXIT_OK


def _client(args):
    """--send LINE and --check: one request to the running bridge."""
    line = "state" if args.check else args.send
    if not args.check:
        try:
            parse_command_line(line)  # refused here, with the shoe's message, before any bridge sees it
        except ValueError as e:
            print("error %s" % e)
            return EXIT_USAGE
    try:
        reply = control.request(args.db, line)
    except OSError as e:
        what = "no bridge is running on %s (nothing answers at %s: %s)" % (
            args.db, control.socket_path(args.db), e.strerror or e)
        if args.check:
            print("NOT RECORDING: " + what)
        else:
            print("bridge: " + what, file=sys.stderr)
        return EXIT_NO_BRIDGE
    if not args.check:
        print(reply)
        return EXIT_OK if reply.startswith("ok") else EXIT_FOUND
    state = parse_json(reply[3:])[0] if reply.startswith("ok ") else None
    if not isinstance(state, dict) or not isinstance(state.get("line"), str):
        print("NOT RECORDING: the bridge's answer is not a state: %s" % shown(reply, 120))
        return EXIT_FOUND
    print(state["line"])
    return EXIT_OK if state.get("recording") is True else EXIT_FOUND


def _loop(runner, server, stopping, extra_fd=None, on_key=None, redraw=None):
    last_draw = 0.0
    while not stopping:
        fds = server.fds() + ([extra_fd] if extra_fd is not None else [])
        ready = runner.bridge.poll(0.1, fds)
        server.serve_ready(ready)
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
            if runner.key(ch) is False:
                return False
        return True

    def screen():
        return runner.view.render(console.size.width, console.size.height - 1)

    try:
        if fd is not None:
            tty.setcbreak(fd)
        with Live(screen(), console=console, auto_refresh=False, screen=True) as live:
            _loop(runner, server, stopping, fd, on_key, lambda: live.update(screen(), refresh=True))
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
