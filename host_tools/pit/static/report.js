// The end-of-shoe report a pit manager prints: summary, the five roads,
// irregularities, alerts with who acknowledged them, and the chain's anchor
// (`shoe verify --anchor` checks it against the store later). The print
// stylesheet is the @media print part of style.css.
import { api, el, fill, loadSession, loginBar, when } from "/static/common.js";
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

async function main() {
  const [t, rep] = await Promise.all([api("/api/tables/" + encodeURIComponent(name)),
                                      api("/api/tables/" + encodeURIComponent(name) + "/report")]);
  if (!t.ok || !rep.ok) {
    fill($("summary"), el("p", { class: "bad", id: "report-refused" }, rep.status === 401
                          ? "The end-of-shoe report is for surveillance: log in."
                          : (rep.data && rep.data.error) || (t.data && t.data.error) || "not available"));
    document.body.dataset.loaded = "yes";
    return;
  }
  const s = t.data, r = rep.data, c = s.roads.counts;
  $("back").href = "/table/" + encodeURIComponent(name);
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
  drawShuffle($("shuffle-score"), r.shuffle);
  fill($("irregularities"), table(["Seq", "Round", "Section", "Rule", "Card", "Action", "Detail"],
    r.irregularities.map((i) => [i.seq, i.round, i.section, i.rule, i.card, i.action, i.detail]), "irregularity-list"));
  fill($("alerts"), table(["Time", "Severity", "Kind", "Detail", "Count", "Acknowledged"],
    r.alerts.map((a) => [when(a.time), a.severity, a.kind, a.detail, a.count,
                         a.ack ? a.ack.user + ", " + when(a.ack.time) + (a.ack.reason ? ": " + a.ack.reason : "")
                               : "open"]), "alert-list"));
  const ch = r.chain;
  fill($("chain"), el("table", { class: "list" }, el("tbody", {}, [
    ["Last stored seq", ch.last_seq],
    ["Anchor (shoe verify --anchor)", el("span", { class: "mono", id: "anchor" }, ch.anchor || "-")],
    ["Store chain head (SHA-256)", el("span", { class: "mono", id: "head-hash" }, ch.head_hash || "-")],
  ].map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v === null ? "-" : v))))),
  el("p", { class: "muted" }, "Printed " + new Date().toLocaleString() + ". Check with: shoe verify --db STORE --key-file KEY --anchor " + (ch.anchor || "SHOE:SEQ:MAC")));
  document.body.dataset.loaded = "yes";
}

$("print").addEventListener("click", () => window.print());
await loadSession();
loginBar($("session"), () => location.reload());  // the report is surveillance's (roles.py)
main();
