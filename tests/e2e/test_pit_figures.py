"""A staff page says one thing at a time: the table page's figures (cards
left, the rank table, the round, the next card) come from one fold at one
moment, pushed in place. Surveillance's page is watched in real Chromium
while a shoe is dealt card by card: after every card the page draws, its
"Cards left" equals the sum of its rank table (they once disagreed until
the round ended: "Cards left 227" beside "(229 of 416)"), and every count
from the full shoe down to the last card was drawn.

And no page goes back: a read's answer (the table as the server had it
when asked) that comes after a newer push is never drawn over it, on the
table page or the overview. The browser's network order is forced with
held routes, so the test does every time what a loaded machine did now
and then (the first test once read 406 cards left where 405 was due).
"""

import time

from support.browser import WAIT_MS, login_context
from support.outcomes import ROUNDS as ROUNDS_TOTALS, Dealer
from support.pitrig import PASSWORD, running_pit

ROUNDS = ["B", "P", "T", "Pn", "B", "Bp", "P", "B"]
# Every state the page draws, as the page draws it: the facts line's cards
# left and round beside the rank table's total, after each pushed message.
WATCH_JS = """() => {
  window.drawn = [];
  const note = () => {
    const left = document.getElementById("left"), ranks = document.getElementById("ranks");
    if (!left || !ranks || left.textContent === "-") return;
    window.drawn.push({ left: +left.textContent, total: +ranks.dataset.total, seq: document.body.dataset.seq,
                        round: document.getElementById("round-no").textContent });
  };
  new MutationObserver(note).observe(document.querySelector("main"), { childList: true, subtree: true,
                                                                       characterData: true });
}"""


# The page once it shows N cards left (bounded: a loaded machine may take
# seconds per card): its cards left beside its rank table's total.
SEEN_JS = """async () => {
  const end = Date.now() + 30000;
  while (document.getElementById("left").textContent !== "N" && Date.now() < end)
    await new Promise((r) => setTimeout(r, 10));
  const ranks = document.getElementById("ranks");
  return { want: N, left: +document.getElementById("left").textContent, total: ranks ? +ranks.dataset.total : null };
}"""


def test_cards_left_and_the_rank_table_agree_after_every_card(chromium, tmp_path):
    with running_pit(tmp_path, {"T1": "FIG1"}) as (server, service, emus, _cfg):
        base = "http://127.0.0.1:%d" % server.port
        ctx = login_context(chromium, base, "sue", PASSWORD, 1280, 900)
        try:
            page = ctx.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/table/T1")
            page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
            page.evaluate(WATCH_JS)
            dealer = Dealer(emus["T1"])
            emu, left = emus["T1"], [416]

            def deal(card):
                # one card, then what the page shows once it has drawn it, beside the pit's own
                # count then (a page that lags tells apart from a card the pit never got)
                emu.deal(card)
                left[0] -= 1
                seen = page.evaluate(SEEN_JS.replace("N", str(left[0])))
                seen["pit"] = service.runners["T1"].fold.state.left
                return seen

            emu.deal("shoe decks=8")
            seen = [deal(dealer.card("A")), deal(dealer.card("2"))]  # the burn (Ch 5F)
            emu.deal("bets")
            for i, outcome in enumerate(ROUNDS):
                player, banker = (dealer.hand(w) for w in ROUNDS_TOTALS[outcome])
                for card in (player[0], banker[0], player[1], banker[1]):  # P1, B1, P2, B2
                    seen.append(deal(card))
                if i + 1 < len(ROUNDS):
                    emu.deal("bets")
            assert errors == []
            assert [s for s in seen if not s["want"] == s["left"] == s["total"]] == [], seen
            assert service.runners["T1"].fold.state.left == left[0] == 416 - 2 - 4 * len(ROUNDS)
            # and between the cards: no state the page drew ever disagreed
            drawn = page.evaluate("window.drawn")
            assert drawn and [d for d in drawn if d["left"] != d["total"]] == [], drawn[:5]
        finally:
            ctx.close()


# What a page's own event stream delivered, in order: each event's type.
HEARD_JS = """(() => {
  window.heard = [];
  const Source = window.EventSource;
  window.EventSource = function (path) {
    const source = new Source(path);
    source.addEventListener("event", (ev) => {
      const m = JSON.parse(ev.data);
      window.heard.push(m.event ? m.event.type : null);
    });
    return source;
  };
  window.EventSource.CLOSED = Source.CLOSED;
})()"""


class HeldPage:
    """A page whose reads of ``read`` are, once armed, answered only when
    the test says: each is fetched from the server when the page asks (the
    table as it is then) and handed to the page later."""

    def __init__(self, ctx, base, path, read, left_js):
        self.page = ctx.new_page()
        self.page.add_init_script(HEARD_JS)
        self.held, self.armed, self.left_js = [], False, left_js
        self.page.route(read, self._route)
        # The table page's shuffler block reads the same URL every 2 s (shuffler.js) and draws only
        # its own block: without it, every read of the table is the table's reload.
        self.page.route("**/static/shuffler.js", lambda r: r.fulfill(body="", content_type="text/javascript"))
        self.page.goto(base + path)
        self.page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
        self.mark = 0

    def _route(self, r):
        if self.armed and len(self.held) < 2:
            self.held.append((r, r.fetch()))
        else:
            r.continue_()

    def left(self):
        return self.page.evaluate(self.left_js)

    def listen(self):
        self.mark = len(self.page.evaluate("window.heard"))

    def heard(self, kind):
        return kind in self.page.evaluate("window.heard")[self.mark:]

    def release(self, i):
        route, answer = self.held[i]
        route.fulfill(response=answer)


def test_a_late_read_never_draws_over_a_newer_push(chromium, tmp_path):
    """The race a loaded machine lost: a round ends and the page reads the
    table again, twice since the next round's "bets" came during the first
    read; the second read is answered before the next card is stored, and
    that card's push reaches the page before the answer does. Drawing the
    answer put cards left back by one card until the next event."""
    with running_pit(tmp_path, {"T1": "FIG2"}) as (server, service, emus, _cfg):
        base = "http://127.0.0.1:%d" % server.port
        ctx = login_context(chromium, base, "sue", PASSWORD, 1280, 900)
        try:
            pages = [HeldPage(ctx, base, "/table/T1", "**/api/tables/T1",
                              '() => document.getElementById("left").textContent'),
                     HeldPage(ctx, base, "/", "**/api/tables",
                              '() => document.querySelector(\'tr[data-table="T1"] [data-field=left]\').textContent')]

            def until(what, check):  # bounded; the waits let Playwright run the route handlers
                end = time.monotonic() + WAIT_MS / 1000
                while not all(check(p) for p in pages):
                    assert time.monotonic() < end, "a page never " + what(next(p for p in pages if not check(p)))
                    pages[0].page.wait_for_timeout(10)

            def deal(line, then, what):
                for p in pages:
                    p.listen()
                emu.deal(line)
                until(what, then)

            def shows(n):
                until(lambda p: "showed %d cards left: %s shows %s" % (n, p.page.url, p.left()),
                      lambda p: p.left() == str(n))

            dealer, emu = Dealer(emus["T1"]), emus["T1"]
            for line in ("shoe decks=8", dealer.card("A"), dealer.card("2"), "bets"):
                emu.deal(line)
            shows(414)
            player, banker = (dealer.hand(w) for w in ROUNDS_TOTALS["B"])
            for n, card in zip((413, 412, 411), (player[0], banker[0], player[1])):
                emu.deal(card)
                shows(n)
            for p in pages:
                p.armed = True
            deal(banker[1], lambda p: len(p.held) == 1,  # the round's result: the page reads again
                 lambda p: "read the table after the round's result")
            deal("bets", lambda p: p.heard("bets"), lambda p: "heard the next round's bets")
            for p in pages:
                p.release(0)  # "bets" came during this read: the page reads again
            until(lambda p: "read the table a second time", lambda p: len(p.held) == 2)
            deal(dealer.hand(ROUNDS_TOTALS["P"][0])[0], lambda p: p.heard("card"), lambda p: "heard the next card")
            for p in pages:
                p.release(1)  # the older answer arrives after the newer push
            shows(409)
            assert service.runners["T1"].fold.state.left == 409
            assert pages[0].page.evaluate('() => +document.getElementById("ranks").dataset.total') == 409
        finally:
            ctx.close()
