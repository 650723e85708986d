// The overview: one row per table (the same cells host_tools/pit/overview.py
// renders on the server). A pushed event's live state (the one table fold's)
// updates its row in place; a finished round (the last-results strip) and
// anything else the push does not carry (alerts, a restart, a new table)
// re-reads /api/tables. Never on a timer.
import { api, coalesce, el, fill, loadLogin, loadVocabulary, login, loginBar, subscribe, WINNER }
  from "/static/common.js";

let words = {};

// The cell's class names the outcome under its own prefix: a bare "tie"
// is the road's tie slash (style.css), which once drew a 2,300 px line here.
function resultCell(r) {
  if (!r || !r.winner) return "-";
  // the winner's total first ("Banker 9–5"), as the player display says it
  const [mine, theirs] = r.winner === "player" ? [r.player_total, r.banker_total] : [r.banker_total, r.player_total];
  const text = WINNER[r.winner] + " " + mine + "\u2013" + theirs + (r.natural ? " natural" : "");
  return el("span", { class: "result result-" + r.winner, dataset: { winner: r.winner } }, text);
}

function links(t, pageLabel) {
  const q = encodeURIComponent(t.name);
  return [el("a", { href: "/table/" + q }, pageLabel), el("a", { class: "screen", href: "/display/" + q }, "display")];
}

// The public overview (no login): name, display, limits and the last result
// only; the server sends nothing more (host_tools/view/roles.py).
function publicRow(t) {
  const [page, display] = links(t, t.name);
  return el("tr", { dataset: { table: t.name } },
    el("td", {}, page), el("td", {}, display),
    el("td", { dataset: { field: "limits" } }, t.limits || "-"),
    el("td", { dataset: { field: "result" } }, resultCell(t.last_result)));
}

// "RECORDING: shoe S on /dev/ttyACM0, stored through seq 12" -> Recording (the line is the title);
// "NOT RECORDING: no link to the shoe (...)" -> Not recording, and why.
function recordingCell(cell, recording, line) {
  const why = (line || "").includes(": ") ? line.slice(line.indexOf(": ") + 2) : line || "";
  cell.className = recording ? "ok" : "bad";
  cell.title = line || "";
  fill(cell, el("b", {}, recording ? "Recording" : "Not recording"), recording ? null : el("div", { class: "why" }, why));
}

function recent(beads) {
  return (beads || []).map((b) => el("span", { class: "chip-mini " + b.mark, dataset: { round: b.round, mark: b.mark } },
    b.mark, b.banker_pair ? el("span", { class: "pd bp" }) : null, b.player_pair ? el("span", { class: "pd pp" }) : null,
    b.natural ? el("span", { class: "ns" }, "\u2605") : null));
}

function row(t) {
  if (!t.alerts) return publicRow(t);
  const alerts = t.alerts.length;
  const [page, display] = links(t, "page");
  const line = el("td", { dataset: { field: "line" } });
  recordingCell(line, t.recording, t.line);
  return el("tr", { dataset: { table: t.name, recording: t.recording ? "yes" : "no",
                               lastRound: t.last_result ? t.last_result.round : "" } },
    el("td", {}, el("a", { href: "/table/" + encodeURIComponent(t.name) }, t.name),
       el("div", { class: "muted" }, (t.shoe || "no shoe") + " \u00b7 " + t.designation)),
    el("td", {}, page, " \u00b7 ", display),
    el("td", { dataset: { field: "limits" } }, t.limits || "-"),
    line,
    el("td", { dataset: { field: "round" } }, t.round === null ? "-" : t.round),
    el("td", { dataset: { field: "next" }, title: words[t.next] || "" }, t.next || "-"),
    el("td", { dataset: { field: "left" } }, t.cards_left === null || t.cards_left === undefined ? "-" : t.cards_left),
    el("td", { dataset: { field: "result" } }, resultCell(t.last_result)),
    el("td", { dataset: { field: "recent" } }, recent(t.recent)),
    el("td", { class: alerts ? "bad" : "", dataset: { field: "alerts" } }, alerts));
}

const reload = coalesce(async () => {
  const r = await api("/api/tables");
  if (!r.ok) return;
  fill(document.querySelector("#tables tbody"), r.data.tables.map(row));
  document.body.dataset.loaded = "yes";
});

function pushed(m) {
  const tr = document.querySelector('tr[data-table="' + CSS.escape(m.table || "") + '"]');
  // while a read is in flight, the next read carries the push (coalesce in common.js)
  if (!tr || reload.busy() || !((m.type === "event" && m.live) || m.type === "state")) { reload(); return; }
  const cell = (field) => tr.querySelector('[data-field="' + field + '"]');
  if (!cell("round")) { fill(cell("result"), resultCell(m.live && m.live.last_result)); return; }
  if (m.type === "state") {
    tr.dataset.recording = m.recording ? "yes" : "no";
    recordingCell(cell("line"), m.recording, m.line);
    return;
  }
  const t = m.live;
  const done = t.last_result ? String(t.last_result.round) : "";
  if (done !== tr.dataset.lastRound) { reload(); return; }  // a round ended: its strip too
  cell("round").textContent = t.round === null ? "-" : t.round;
  cell("next").textContent = t.next || "-";
  cell("next").title = words[t.next] || "";
  cell("left").textContent = t.cards_left === null ? "-" : t.cards_left;
}

function legend() {
  const box = document.getElementById("positions");
  if (!box) return;
  fill(box, Object.entries(words).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

await loadLogin();
const vocabulary = await loadVocabulary();
words = vocabulary.position_words || {};
legend();
// A login or logout changes what this page may show: load it again.
loginBar(document.getElementById("login-bar"), () => location.reload());
const audit = document.getElementById("audit-link");
if (audit) audit.hidden = login.role !== "surveillance" || login.readOnly;
if (login.readOnly) document.getElementById("source-name").textContent = "from the central record";
subscribe(pushed, reload);
reload();
