// The end-of-shoe report a pit manager prints: summary, the five roads,
// irregularities, alerts with who acknowledged them, and the chain's anchor
// (`shoe verify --anchor` checks it against the store later). The print
// stylesheet is the @media print part of style.css.
import { api, cardEl, el, fill, loadLogin, loginBar, when, WINNER } from "/static/common.js";
import { drawBoard } from "/static/board.js";
import { drawShuffle } from "/static/shufflescore.js";

const name = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);

function table(headers, rows, id) {
  if (!rows.length) return el("p", { class: "muted", id }, "None.");
  return el("table", { class: "list", id },
            el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
            el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c === null || c === undefined ? "" : c))))));
}

// Every round of the shoe in order: its hands as dealt (face up), totals,
// result and marks; a void round with its rule; simulated rounds flagged.
function drawRounds(rounds) {
  const rows = rounds.map((x) => {
    const what = x.status === "void" ? "void (" + x.rule + ", wagers " + x.wagers + ")"
      : (x.simulated ? "simulated: " : "") + WINNER[x.winner] + (x.winner === "tie" ? "" : " wins");
    const marks = x.status === "void" ? "" : [x.natural ? "natural" : "", x.player_pair ? "player pair" : "",
      x.banker_pair ? "banker pair" : ""]
      // the designation's own announcements (Dragon 7, Panda 8...); the winner is in the Result column
      .concat((x.announce || []).filter((a) => !/ wins$|^tie hand$/i.test(a))).filter(Boolean).join(", ");
    const hand = (cards, total) => x.status === "void" ? "" : [cards.map((cd) => cardEl(cd, true)), " ", total];
    return el("tr", { dataset: { reportRound: x.round, status: x.status } },
      el("td", {}, x.round), el("td", {}, what), el("td", {}, hand(x.player || [], x.player_total)),
      el("td", {}, hand(x.banker || [], x.banker_total)), el("td", {}, marks), el("td", { class: "muted" }, x.seq));
  });
  fill($("rounds"), rows.length ? el("table", { class: "list recall", id: "round-list" },
    el("thead", {}, el("tr", {}, ["Round", "Result", "Player", "Banker", "Marks", "Seq"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)) : el("p", { class: "muted" }, "No round yet."));
}

// Alerts by kind and count (an edge monitor alone raises dozens a shoe);
// every alert, with who acknowledged or what closed it, on request.
function drawAlerts(alerts) {
  const kinds = new Map();
  for (const a of alerts) {
    const k = kinds.get(a.kind) || { kind: a.kind, severity: a.severity, n: 0, open: 0, closed: 0 };
    k.n += 1;
    if (!a.ack) k.open += 1; else if (a.ack.closed) k.closed += 1;
    kinds.set(a.kind, k);
  }
  const summary = table(["Kind", "Severity", "Alerts", "Closed by their clear", "Acknowledged", "Open"],
    [...kinds.values()].map((k) => [k.kind, k.severity, k.n, k.closed, k.n - k.open - k.closed, k.open]), "alert-summary");
  const every = el("details", { id: "alert-details" }, el("summary", {}, "Every alert (" + alerts.length + ")"),
    table(["Time", "Severity", "Kind", "Detail", "Count", "Closed or acknowledged"],
      alerts.map((a) => [when(a.time), a.severity, a.kind, a.detail, a.count,
                         a.ack ? (a.ack.closed ? "closed by " : "") + a.ack.user + ", " + when(a.ack.time) +
                                 (a.ack.reason ? ": " + a.ack.reason : "") : "open"]), "alert-list"));
  fill($("alerts"), summary, alerts.length ? every : null);
}

async function main() {
  $("back").href = "/table/" + encodeURIComponent(name);
  const [t, rep] = await Promise.all([api("/api/tables/" + encodeURIComponent(name)),
                                      api("/api/tables/" + encodeURIComponent(name) + "/report")]);
  if (!t.ok || !rep.ok) {
    // nothing to show but why: no empty panels, nothing to print
    for (const panel of document.querySelectorAll("section.panel")) panel.hidden = !panel.contains($("summary"));
    $("print").hidden = true;
    $("heading").textContent = "Table " + name + ": no report";
    fill($("summary"), el("p", { class: "bad", id: "report-refused" }, rep.status === 401
                          ? "The end-of-shoe report is for surveillance, and for a supervisor once the shoe has ended: log in."
                          : (rep.data && rep.data.error) || (t.data && t.data.error) || "not available"));
    document.body.dataset.loaded = "yes";
    return;
  }
  const s = t.data, r = rep.data, c = s.roads.counts, central = s.read_only === true;
  if (r.partial) $("heading").after(el("p", { class: "muted", id: "partial" }, "For a supervisor: " + r.partial + "."));
  $("heading").textContent = "Table " + s.name + " \u00b7 shoe " + r.shoe;
  const ended = r.ended ? when(r.ended.time) + " (" + r.ended.reason + ", " + r.ended.rounds + " rounds, " +
                          r.ended.left + " cards left)" : "not ended (report so far)";
  fill($("summary"), el("table", { class: "list", id: "summary-facts" }, el("tbody", {}, [
    ["Designation", r.designation], ["Decks", r.decks], ["Started", when(r.started)], ["Ended", ended],
    ["Rounds on the roads", s.roads.bead_plate.length],
    ["Banker / Player / Tie", c.banker + " / " + c.player + " / " + c.tie],
    ["Banker pairs / Player pairs / Naturals", c.banker_pair + " / " + c.player_pair + " / " + c.natural],
    ["Void rounds", r.voids.map((v) => v.round + " (" + v.rule + ", wagers " + v.wagers + ")").join("; ") || "none"],
  ].map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v === null ? "-" : v))))));
  drawBoard($("board"), s.scoreboard, false);
  drawRounds(r.rounds || []);
  // The score is surveillance's; the central record does not compute it (the pit's report has it).
  $("shuffle-panel").hidden = !("shuffle" in r) && !central;
  if ("shuffle" in r) drawShuffle($("shuffle-score"), r.shuffle);
  else fill($("shuffle-score"), el("p", { class: "muted", id: "shuffle-none" }, "Not kept at central: the pit's report has it."));
  fill($("irregularities"), table(["Seq", "Round", "Section", "Rule", "Card", "Action", "Detail"],
    r.irregularities.map((i) => [i.seq, i.round, i.section, i.rule, i.card, i.action, i.detail]), "irregularity-list"));
  drawAlerts(r.alerts);
  const ch = r.chain;
  fill($("chain"), el("table", { class: "list" }, el("tbody", {}, [
    ["Last stored seq", ch.last_seq],
    ["Anchor (shoe verify --anchor)", el("span", { class: "mono", id: "anchor" }, ch.anchor || "-")],
    ["Store chain head (SHA-256)", el("span", { class: "mono", id: "head-hash" },
                                      ch.head_hash || (central ? "not kept at central: the pit's store has it" : "-"))],
  ].map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v === null ? "-" : v))))),
  el("p", { class: "muted" }, "Printed " + new Date().toLocaleString() + ". Check with: shoe verify --db STORE --key-file KEY --anchor " + (ch.anchor || "SHOE:SEQ:MAC")));
  document.body.dataset.loaded = "yes";
}

$("print").addEventListener("click", () => window.print());
await loadLogin();
loginBar($("login-bar"), () => location.reload());  // surveillance's, a supervisor's after the shoe (web.py)
main();
