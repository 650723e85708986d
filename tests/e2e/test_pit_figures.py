"""A staff page says one thing at a time: the table page's figures (cards
left, the rank table, the round, the next card) come from one fold at one
moment, pushed in place. Surveillance's page is watched in real Chromium
while a shoe is dealt card by card: after every card the page draws, its
"Cards left" equals the sum of its rank table (they once disagreed until
the round ended: "Cards left 227" beside "(229 of 416)"), and every count
from the full shoe down to the last card was drawn.

And the page never goes back: a reload's answer (the table as the server
read it when asked) that comes after a newer push must not be drawn over
it. The browser's network order is forced with a held route, so the test
does deterministically what a loaded machine did now and then.
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
                # one card, then what the page shows once it has drawn it
                emu.deal(card)
                left[0] -= 1
                return page.evaluate(SEEN_JS.replace("N", str(left[0])))

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


# What the page's own event stream delivered, in order: (seq, event type).
HEARD_JS = """(() => {
  window.heard = [];
  const Source = window.EventSource;
  window.EventSource = function (path) {
    const source = new Source(path);
    source.addEventListener("event", (ev) => {
      const m = JSON.parse(ev.data);
      window.heard.push([m.live ? m.live.seq : null, m.event ? m.event.type : null]);
    });
    return source;
  };
  window.EventSource.CLOSED = Source.CLOSED;
})()"""


def test_a_late_reload_answer_does_not_undo_a_newer_push(chromium, tmp_path):
    """The race the loaded machine lost: a round ends, the page reads the
    table again (twice: the next round's "bets" came during the first
    read), the second read is answered before the next card is stored, and
    that card's push is drawn before the answer arrives. Drawing the answer
    then put "Cards left" back by one card until the next event."""
    with running_pit(tmp_path, {"T1": "FIG2"}) as (server, service, emus, _cfg):
        base = "http://127.0.0.1:%d" % server.port
        ctx = login_context(chromium, base, "sue", PASSWORD, 1280, 900)
        try:
            page = ctx.new_page()
            page.add_init_script(HEARD_JS)
            held, armed = [], [False]

            def route(r):  # while armed, the first two reads are answered only when the test says
                if armed[0] and len(held) < 2:
                    held.append((r, r.fetch()))  # the table as the server has it NOW
                else:
                    r.continue_()

            page.route("**/api/tables/T1", route)
            # The shuffler's block reads the same URL every 2 s (shuffler.js) and draws only its
            # own block: without it, every read of /api/tables/T1 is the table's reload.
            page.route("**/static/shuffler.js", lambda r: r.fulfill(body="", content_type="text/javascript"))
            page.goto(base + "/table/T1")
            page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
            dealer, emu = Dealer(emus["T1"]), emus["T1"]

            def until(what, check):  # bounded; the waits let Playwright run the route handler
                end = time.monotonic() + WAIT_MS / 1000
                while not check():
                    assert time.monotonic() < end, "the page never " + what()
                    page.wait_for_timeout(10)

            def left():
                return page.evaluate('() => document.getElementById("left").textContent')

            def shows(n):
                until(lambda: "showed %d cards left (it shows %s)" % (n, left()), lambda: left() == str(n))

            def heard(kind):
                return any(t == kind for _seq, t in page.evaluate("window.heard")[mark:])

            for line in ("shoe decks=8", dealer.card("A"), dealer.card("2"), "bets"):
                emu.deal(line)
            shows(414)
            player, banker = (dealer.hand(w) for w in ROUNDS_TOTALS["B"])
            for n, card in zip((413, 412, 411), (player[0], banker[0], player[1])):
                emu.deal(card)
                shows(n)
            armed[0] = True
            mark = len(page.evaluate("window.heard"))
            emu.deal(banker[1])  # the round's result: the page reads the table again
            until(lambda: "read the table after the round's result", lambda: len(held) == 1)
            mark = len(page.evaluate("window.heard"))
            emu.deal("bets")  # pushed during the first read: a second read follows it
            until(lambda: "heard the next round's bets", lambda: heard("bets"))
            first, answer = held[0]
            first.fulfill(response=answer)
            until(lambda: "read the table a second time", lambda: len(held) == 2)
            second, stale = held[1]  # read before the next card is dealt
            mark = len(page.evaluate("window.heard"))
            emu.deal(dealer.hand(ROUNDS_TOTALS["P"][0])[0])
            until(lambda: "heard the next card", lambda: heard("card"))
            second.fulfill(response=stale)  # the older answer arrives after the newer push
            shows(409)
            assert service.runners["T1"].fold.state.left == 409
            ranks = page.evaluate('+document.getElementById("ranks").dataset.total')
            assert ranks == 409
        finally:
            ctx.close()
