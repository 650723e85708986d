"""What a table's page shows, folded from its events: the live state
(host_tools/protocol/tablestate.py), the scoreboard's roads, the recall of
the last rounds and the shuffler's block.

Both the pit's table threads and the central view own one and feed it the
events they commit or read, each parsed once; neither reaches into the
other's internals.
"""

import copy
import logging

from host_tools.view.report import RanksLeft
from host_tools.protocol import chain
from host_tools.protocol.tablestate import TableState
from host_tools.roads import Board, RoadsError
from host_tools.shuffler.pit import ShufflerView
from host_tools.store.recall import RoundBook

log = logging.getLogger("shoe.pit")

RECALL = 10            # rounds kept for recall (GLI-24)
RECENT = 12            # results on the overview's strip


class TableFold:
    def __init__(self, name="", recall=RECALL):
        self.name = name
        self.recall = recall
        self.state = TableState()
        self.board = Board()
        self.book = RoundBook(keep=recall)
        self.shuffler = ShufflerView()     # a shuffler on this port (host_tools/shuffler/pit.py)
        self.ranks = RanksLeft()           # surveillance's rank table, folded with the cards left
        self.card_sets = 0                 # card sets (shoe events) folded: the display's "shoe N"

    def fold(self, seq, event):
        """One committed, schema-valid event."""
        if event.get("source") == "shuffler":
            self.state.seq = seq
            self.shuffler.fold(event)
            return
        self.state.fold(seq, event)
        self.ranks.fold(event)
        if event.get("type") == "shoe" and event.get("source") is None:
            self.card_sets += 1
        self.book.feed(event, seq)
        try:
            self.board.add(event)
        except RoadsError as e:
            log.warning("table %s: seq %s not on the roads: %s", self.name, seq, e)

    def fold_text(self, seq, text):
        """A stored event's text: parsed and checked once, folded if valid.
        Returns the event, or None when the text is not a valid event."""
        event, why = chain.check_body(text)
        if why is None:
            self.fold(seq, event)
        return event

    def live(self):
        """What changes card by card, pushed with every event so a page
        updates in place (the roads, recall and statistics change only when
        a round or a shoe ends; the page reads those then). ``counts``: the
        round's announced point counts, once its first four cards are
        turned (host_tools/view/roles.py shows their faces from then on).
        Every figure of it comes from this one fold at one seq: the cards
        left and the ranks left (surveillance's; roles.py strips it for
        everyone else) cannot disagree on a page that draws them from the
        same push."""
        full = self.state.to_dict()
        out = {k: full[k] for k in ("seq", "round", "phase", "next", "next_card", "cards_left",
                                     "current", "counts", "last_result")}
        out["ranks_left"] = self.ranks.to_dict()
        return out

    def recent(self, n=RECENT):
        """The last ``n`` results on the roads (the overview's strip), oldest first."""
        return [{"round": b.round, "mark": b.winner, "banker_pair": bool(b.banker_pair),
                 "player_pair": bool(b.player_pair), "natural": bool(b.natural)} for b in self.board.beads[-n:]]

    def view(self, detail=False):
        """The page's fields (copies): the summary, and with ``detail`` the
        round being dealt, the roads, the cards left and the recall."""
        s = self.state
        out = {"round": s.round, "phase": s.phase, "next": s.due(), "next_card": s.next,
               "last_result": dict(s.last_result) if s.last_result else None, "seq": s.seq,
               "shuffler": self.shuffler.state() if self.shuffler.seen else None,
               "cards_left": s.left, "recent": self.recent()}
        if detail:
            full = s.to_dict()
            out["current"] = full["current"]
            out["counts"] = full["counts"]
            out["roads"] = self.board.to_dict()
            out["ranks_left"] = self.ranks.to_dict()
            out["recall"] = copy.deepcopy(self.book.last(self.recall))
        return out
