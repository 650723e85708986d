"""The overview's rows as HTML, rendered on the server so the page reads
without script (static/overview.js then keeps the same cells live). One
row per table; the columns are overview.html's, the same ones overview.js
draws, each cell marked ``data-field`` so a push updates it in place.

Staff see, per table: links to its page and its player display, limits,
whether it records (in words: the technical line is the cell's title), the
round, the next card (``P2`` with its meaning as a title; the page's legend
spells every place out), cards left, the last result, the last results
strip and the open alerts. The public sees the name, its display, the
limits and the last result (roles.py sends nothing more).
"""

from html import escape

from host_tools.protocol.tablestate import POSITION_WORDS

WINNER = {"banker": "Banker", "player": "Player", "tie": "Tie"}


def result_text(result):
    if not result or not result.get("winner"):
        return "-"
    mine, theirs = result.get("banker_total"), result.get("player_total")
    if result["winner"] == "player":  # the winner's total first, as the display says it
        mine, theirs = theirs, mine
    return "%s %s\u2013%s%s" % (WINNER.get(result["winner"], result["winner"]), mine, theirs,
                                 " natural" if result.get("natural") else "")


def recording_words(recording, line):
    """("Recording" or "Not recording", the reason or detail) of a table's line."""
    detail = (line or "").split(": ", 1)[1] if ": " in (line or "") else (line or "")
    return ("Recording" if recording else "Not recording"), detail


def _links(name, page_label):
    """(the table page's link, the player display's link)."""
    q = escape(name, quote=True)
    return ('<a href="/table/%s">%s</a>' % (q, escape(page_label)),
            '<a class="screen" href="/display/%s">display</a>' % q)


def public_row(snap, limits):
    page, display = _links(snap["name"], snap["name"])
    return ('<tr data-table="%s"><td>%s</td><td>%s</td><td data-field="limits">%s</td>'
            '<td data-field="result">%s</td></tr>' % (
                escape(snap["name"], quote=True), page, display, escape(str(limits or "-")),
                escape(result_text(snap.get("last_result")))))


def staff_row(snap, limits, alerts):
    name = snap["name"]
    page, display = _links(name, "page")
    words, detail = recording_words(snap["recording"], snap["line"])
    nxt = snap.get("next")
    left = snap.get("cards_left")
    return ('<tr data-table="%s" data-recording="%s"><td>%s<div class="muted">%s \u00b7 %s</div></td>'
            '<td>%s \u00b7 %s</td><td data-field="limits">%s</td>'
            '<td class="%s" data-field="line" title="%s"><b>%s</b><div class="why">%s</div></td>'
            '<td data-field="round">%s</td><td data-field="next" title="%s">%s</td><td data-field="left">%s</td>'
            '<td data-field="result">%s</td><td data-field="recent">%s</td><td data-field="alerts">%d</td></tr>' % (
                escape(name, quote=True), "yes" if snap["recording"] else "no", _links(name, name)[0],
                escape(str(snap.get("shoe") or "no shoe")), escape(str(snap.get("designation"))),
                page, display, escape(str(limits or "-")),
                "ok" if snap["recording"] else "bad", escape(snap["line"] or "", quote=True), words,
                escape("" if snap["recording"] else detail),
                snap["round"] if snap.get("round") is not None else "-",
                escape(POSITION_WORDS.get(nxt, ""), quote=True), escape(str(nxt or "-")),
                left if left is not None else "-", escape(result_text(snap.get("last_result"))),
                "".join('<span class="chip-mini %s">%s</span>' % ((escape(b["mark"]),) * 2)
                        for b in snap.get("recent") or ()), alerts))
