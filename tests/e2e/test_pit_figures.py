"""A staff page says one thing at a time: the table page's figures (cards
left, the rank table, the round, the next card) come from one fold at one
moment, pushed in place. Surveillance's page is watched in real Chromium
while a shoe is dealt card by card: after every card the page draws, its
"Cards left" equals the sum of its rank table (they once disagreed until
the round ended: "Cards left 227" beside "(229 of 416)"), and every count
from the full shoe down to the last card was drawn.
"""

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
