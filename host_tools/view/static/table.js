// One table: the round as it is dealt, the scoreboard, statistics, alerts,
// recall and commands. Each pushed event carries the table's live state
// (round, next card, the cards of the round, cards left), folded on the
// server by the one table fold: the page draws it in place. It reads the
// whole table again from /api/tables/NAME only when what the push does not
// carry has changed (a round or a shoe ended, an alert), never on a timer.
import { api, cardEl, coalesce, el, fill, loadLogin, loadVocabulary, login, loginBar, subscribe, when,
         WINNER } from "/static/common.js";
import { drawAsk, drawBoard } from "/static/board.js";
import { drawShuffle } from "/static/shufflescore.js";

const name = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);
let last = null;

// The shoe's commands; `game` ones change the game: supervisor + confirmation.
const COMMANDS = [
  ["bets", "No more bets", true],
  ["exposed", "Exposed card", true],
  ["new_shoe", "New shoe", true],
  ["clear_tilt", "Clear tilt", true],
  ["clear_stop", "Clear stop (cold deck)", true],
  ["status", "Ask status", false],
];

function hand(side, label, cards, total) {
  const places = side === "player" ? vocabulary.player_positions : vocabulary.banker_positions;
  return el("div", { class: "hand " + side, dataset: { hand: side } },
    el("span", { class: "who" }, label),
    places.map((p) => cards[p] ? el("span", { dataset: { pos: p } }, cardEl(cards[p]))
                               : el("span", { class: "slot", dataset: { pos: p } })),
    el("span", { class: "total" }, total === null || total === undefined ? "" : total));
}

function drawRound(t) {
  const cur = t.current;
  if (!cur) { fill($("round"), el("p", { class: "muted" }, t.shoe ? "No round yet." : "No shoe yet.")); return; }
  const cards = {};
  for (const [pos, card] of cur.cards) cards[pos] = card;  // a reassigned place shows its last card
  const r = t.last_result && t.last_result.round === cur.round && cur.status === "result" ? t.last_result : null;
  // `next`: the place the next card goes, or what the shoe waits for (no more bets, a new shoe).
  let outcome = (t.next_card ? "Next card: " : "Next: ") + (t.next || "-");
  if (r) outcome = (r.simulated ? "Simulated: " : "") + WINNER[r.winner] + (r.winner === "tie" ? "" : " wins") +
                   (r.natural ? " (natural)" : "") + (r.player_pair ? " \u00b7 player pair" : "") +
                   (r.banker_pair ? " \u00b7 banker pair" : "");
  else if (cur.status === "void") outcome = "Round void";
  fill($("round"),
       el("div", { class: "muted", dataset: { round: cur.round, status: cur.status } }, "Round " + cur.round),
       hand("player", "Player", cards, r ? r.player_total : null),
       hand("banker", "Banker", cards, r ? r.banker_total : null),
       el("div", { class: "outcome", id: "outcome" }, outcome));
}

function drawStats(t) {
  const c = t.roads.counts;
  const counts = [["Banker", c.banker], ["Player", c.player], ["Tie", c.tie], ["Banker pair", c.banker_pair],
                  ["Player pair", c.player_pair], ["Natural", c.natural]];
  fill($("stats"), el("div", { class: "counts", id: "counts" },
                      counts.map(([k, v]) => el("span", { dataset: { count: k.toLowerCase().replace(" ", "_") } }, k, el("b", {}, v)))),
       el("div", { id: "ranks-box" }));
  drawRanks(t);
}

// Surveillance's cards left per rank: from the same fold and the same push as
// "Cards left" in the facts line (view/fold.py live), so the two never disagree.
function drawRanks(t) {
  const left = t.ranks_left, box = $("ranks-box");
  if (!box) return;
  if (!left) { fill(box); return; }
  const ranks = [..."A23456789TJQK"].filter((r) => r in left.ranks).map((r) => [r, left.ranks[r]]);
  const total = ranks.reduce((s, [, n]) => s + n, 0);
  fill(box, el("div", { class: "roadlabel" }, "Cards left per rank (" + total + " of " + left.decks * 52 + ")"),
       el("div", { class: "ranks", id: "ranks", dataset: { total, seq: t.seq === null ? "" : t.seq } },
          ranks.map(([r]) => el("div", { class: "r" }, r === "T" ? "10" : r)),
          ranks.map(([r, n]) => el("div", { dataset: { rank: r, left: n } }, n))));
}

// Who may acknowledge what is the server's rule (roles.py); the page only
// mirrors it so a button a role may not use is shown disabled, with why.
function mayAck(kind) {
  if (vocabulary.critical_ack.includes(kind)) return login.role === "supervisor";
  return login.role === "supervisor" || login.role === "surveillance";
}

function drawAlerts(t) {
  if (!t.alerts) return;
  if (!t.alerts.length) { fill($("alerts"), el("p", { class: "muted", id: "no-alerts" }, "None open.")); return; }
  fill($("alerts"), t.alerts.map((a) => el("div", { class: "alert " + a.severity, dataset: { alert: a.id, kind: a.kind } },
    el("span", { class: "what" }, el("b", {}, a.kind === "edge" ? "edge monitor" : a.kind.replace(/_/g, " ")),
       " ", a.kind === "edge" ? String(a.detail).replace(/^edge_alert /, "") : a.detail, a.count > 1 ? " (\u00d7" + a.count + ")" : "",
       el("div", { class: "muted" }, a.severity + " \u00b7 " + when(a.last_time) +
          (a.kind === "edge" ? " \u00b7 closes by itself when the edge clears" : ""))),
    el("button", { type: "button", class: "ack", disabled: !mayAck(a.kind),
                   title: mayAck(a.kind) ? "acknowledge, with a reason" :
                          (vocabulary.critical_ack.includes(a.kind) ? "a supervisor acknowledges this kind" :
                           "a supervisor or surveillance acknowledges"),
                   onclick: () => ack(a.id, a.kind) }, "Acknowledge"))));
}

function drawRecall(t) {
  if (!t.recall) return;
  const rows = t.recall.slice().reverse().map((r) => {
    const what = r.status === "void" ? "void (" + (r.void && r.void.rule) + ")" :
                 (r.simulated ? "simulated " : "") + (WINNER[r.winner] || r.status);
    const notes = r.irregularities.map((i) => i.section + " " + i.action).concat(r.notes);
    return el("tr", { dataset: { recallRound: r.round } },
      el("td", {}, r.round), el("td", {}, what),
      el("td", {}, r.player.map((c) => cardEl(c, true)), " ", r.player_total === null ? "" : r.player_total),
      el("td", {}, r.banker.map((c) => cardEl(c, true)), " ", r.banker_total === null ? "" : r.banker_total),
      el("td", { class: "muted notes" }, notes.join("; ")));
  });
  fill($("recall"), rows.length ? el("table", { class: "list recall" },
    el("thead", {}, el("tr", {}, ["Round", "Result", "Player", "Banker", "Notes"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)) : el("p", { class: "muted" }, "No completed round yet."));
}

function drawCommands() {
  const allowed = login.role === "supervisor";
  fill($("commands"), COMMANDS.map(([cmd, label, game]) =>
    el("button", { type: "button", dataset: { command: cmd }, disabled: !allowed,
                   title: allowed ? "" : "needs a supervisor's login",
                   onclick: () => send(cmd, label, game) }, label)),
    allowed ? null : el("span", { class: "muted" }, " Commands need a supervisor's login."));
}

function confirmDialog(text) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function send(cmd, label, game) {
  if (game && !(await confirmDialog(label + " at table " + name + "? This changes the game."))) {
    $("reply").textContent = "cancelled: " + label;
    return;
  }
  const r = await api("/api/tables/" + encodeURIComponent(name) + "/command", { command: cmd, confirm: game });
  // The shoe's own answer (accepted, or refused with its reason), never the sending alone.
  $("reply").textContent = r.data.shoe ? (r.data.ok ? "ok: " : "refused: ") + r.data.shoe
    : r.data.reply || r.data.error || String(r.status);
  reload();
}

function reasonDialog(text) {
  const dialog = $("ack-dialog");
  $("ack-text").textContent = text;
  $("ack-reason").value = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes" ? $("ack-reason").value.trim() : ""),
                            { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function ack(id, kind) {
  const reason = await reasonDialog("Acknowledge " + kind + " alert " + id + " at table " + name + ": why?");
  if (!reason) { $("reply").textContent = "not acknowledged: a reason is needed"; return; }
  const r = await api("/api/tables/" + encodeURIComponent(name) + "/ack-alert", { alert: id, reason });
  if (!r.ok) $("reply").textContent = r.data.error || String(r.status);
  reload();
}

function drawLine(t) {
  const state = $("state");
  if (t.line === undefined) { state.hidden = true; return; }
  state.className = "status " + (t.recording ? "ok" : "bad");
  state.dataset.recording = t.recording ? "yes" : "no";
  state.textContent = t.line;
}

function drawFacts(t) {
  if (t.role === "public") {
    fill($("facts"), el("span", {}, "Limits ", el("b", { id: "limits" }, t.limits || "-")),
         el("span", {}, "Rounds ", el("b", { id: "round-no" }, t.round === null ? "-" : t.round)));
    return;
  }
  fill($("facts"),
       el("span", {}, "Shoe ", el("b", {}, t.shoe || "-")),
       el("span", {}, "Designation ", el("b", {}, t.designation)),
       el("span", {}, "Limits ", el("b", { id: "limits" }, t.limits || "-")),
       el("span", {}, "Round ", el("b", { id: "round-no" }, t.round === null ? "-" : t.round)),
       el("span", {}, t.next_card ? "Next card " : "Next ", el("b", { id: "next" }, t.next || "-")),
       el("span", {}, "Cards left ", el("b", { id: "left" }, t.cards_left === null ? "-" : t.cards_left)),
       t.restarts ? el("span", { class: "bad" }, "Restarts ", el("b", {}, t.restarts)) : null);
}

// What a role is not sent is not drawn: its panels are hidden (roles.py).
function showPanels(t) {
  const staff = t.role !== "public";
  for (const id of ["round-panel", "alerts-panel", "commands-panel", "recall-panel", "report-link"]) $(id).hidden = !staff;
  // surveillance's report; a supervisor's once the shoe has ended (web.py table_report)
  $("report-link").hidden = !(t.role === "surveillance" || t.role === "supervisor");
  $("audit-link").hidden = t.role !== "surveillance" || t.read_only === true;  // the central view has neither
  // the display is the players' screen: at central too (host_tools/central/view.py serves it)
  // a viewer is not even told that an edge monitor raises alerts (roles.py)
  $("alerts-what").textContent = t.role === "surveillance" ? "(irregularities, link, edge monitor)" : "(irregularities, link)";
  document.body.dataset.role = t.role;
}

function draw(t) {
  last = t;
  showPanels(t);
  document.title = "Table " + t.name;
  $("title").textContent = "Table " + t.name;
  drawLine(t);
  drawFacts(t);
  if (t.role !== "public") drawRound(t);
  drawAlerts(t);
  drawCommands();
  drawBoard($("board"), t.scoreboard);
  drawAsk($("ask"), t.roads.ask);
  drawStats(t);
  // The score is surveillance's (the server sends it to no one else): the panel shows only with it.
  $("shuffle-panel").hidden = !("shuffle" in t);
  if ("shuffle" in t) drawShuffle($("shuffle-score"), t.shuffle);
  drawRecall(t);
  document.body.dataset.seq = t.seq === null ? "" : t.seq;
}

const reload = coalesce(async () => {
  const r = await api("/api/tables/" + encodeURIComponent(name));
  if (!r.ok) { fill($("state"), r.data.error || "error " + r.status); return; }
  draw(r.data);
  document.body.dataset.loaded = "yes";
});

$("report-link").href = "/table/" + encodeURIComponent(name) + "/report";
$("display-link").href = "/display/" + encodeURIComponent(name);
const vocabulary = await loadVocabulary();
await loadLogin();
loginBar($("login-bar"), () => location.reload());  // what the page may show has changed
// A push about this table: its live state is drawn in place when that is all
// that changed; otherwise (a finished round or shoe, an alert, a restart) the
// table is read again. While a read is in flight the push waits for the
// next one (coalesce): that read's answer may be older than the push.
function pushed(m) {
  if (m.table !== name) return;
  if (!last || last.role === "public" || reload.busy()) { reload(); return; }
  if (m.type === "state") { last.recording = m.recording; last.line = m.line; drawLine(last); return; }
  const live = m.live;
  const done = (r) => (r ? r.round : null);
  if (m.type !== "event" || !live || live.seq === null || (last.seq !== null && live.seq < last.seq) ||
      done(live.last_result) !== done(last.last_result)) { reload(); return; }
  Object.assign(last, live);
  drawFacts(last);
  drawRound(last);
  drawRanks(last);
  document.body.dataset.seq = last.seq === null ? "" : last.seq;
}

subscribe(pushed, reload);
reload();
