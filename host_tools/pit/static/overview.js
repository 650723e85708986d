// The overview: one row per table. A pushed event's live state (the one
// table fold's, from the server) updates its row in place; anything else
// the push does not carry (alerts, a restart, a new table) re-reads
// /api/tables. Never on a timer.
import { api, coalesce, el, fill, loadSession, loginBar, subscribe, WINNER } from "/static/common.js";

// The cell's class names the outcome under its own prefix: a bare "tie"
// is the road's tie slash (style.css), which once drew a 2,300 px line here.
function resultCell(r) {
  if (!r || !r.winner) return "-";
  const text = WINNER[r.winner] + " " + r.player_total + "\u2013" + r.banker_total + (r.natural ? " natural" : "");
  return el("span", { class: "result result-" + r.winner, dataset: { winner: r.winner } }, text);
}

// The public overview (no login): name, limits and the last result only;
// the server sends nothing more (host_tools/pit/roles.py).
function publicRow(t) {
  return el("tr", { dataset: { table: t.name } },
    el("td", {}, el("a", { href: "/table/" + encodeURIComponent(t.name) }, t.name)),
    el("td", { dataset: { field: "limits" } }, t.limits || "-"),
    el("td", { dataset: { field: "result" } }, resultCell(t.last_result)));
}

function row(t) {
  if (!t.alerts) return publicRow(t);
  const alerts = t.alerts.length;
  return el("tr", { dataset: { table: t.name, recording: t.recording ? "yes" : "no" } },
    el("td", {}, el("a", { href: "/table/" + encodeURIComponent(t.name) }, t.name),
       el("div", { class: "muted" }, (t.shoe || "no shoe") + " \u00b7 " + t.designation)),
    el("td", { class: t.recording ? "ok" : "bad", dataset: { field: "line" } }, t.line),
    el("td", { dataset: { field: "round" } }, t.round === null ? "-" : t.round),
    el("td", { dataset: { field: "next" } }, t.next || "-"),
    el("td", { dataset: { field: "result" } }, resultCell(t.last_result)),
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
  if (!tr || !((m.type === "event" && m.live) || m.type === "state")) { reload(); return; }
  const cell = (field) => tr.querySelector('[data-field="' + field + '"]');
  if (!cell("round")) { fill(cell("result"), resultCell(m.live && m.live.last_result)); return; }
  if (m.type === "state") {
    tr.dataset.recording = m.recording ? "yes" : "no";
    cell("line").className = m.recording ? "ok" : "bad";
    cell("line").textContent = m.line;
    return;
  }
  const t = m.live;
  cell("round").textContent = t.round === null ? "-" : t.round;
  cell("next").textContent = t.next || "-";
  fill(cell("result"), resultCell(t.last_result));
}

await loadSession();
// A login or logout changes what this page may show: load it again.
loginBar(document.getElementById("session"), () => location.reload());
subscribe(pushed, reload);
reload();
