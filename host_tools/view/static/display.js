// The screen at the table, for its players: a scoreboard read from three
// metres, on one screen whatever its size or orientation (display.css lays
// it out in the viewport; nothing scrolls). Public data only, whoever is
// logged in on this browser (every request says ?view=public, roles.py
// filters the rest); and it heals itself: a lost stream is opened again and
// the table re-read.
//
// Each road is drawn in whole columns only: the frame's height gives the
// cell (six rows), its section's width how many columns fit (the frame then
// hugs them), and when the road holds
// more than that the oldest columns are left off, never cut in half. The
// cells themselves are the server's (scoreboard.py placed them with the
// roads library's grid()); data-start on a road's grid says how many
// display columns were left off.
import { api, coalesce, el, fill, subscribe } from "/static/common.js";
import { cellEl, derivedMark } from "/static/board.js";
import { beadText, label, language } from "/static/labels.js";

const name = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);
const DERIVED = ["big_eye_boy", "small_road", "cockroach_pig"];
const SIDES = { banker: "B", player: "P", tie: "T" };
let last = null;
let lang = "en";

function words() {
  document.documentElement.lang = lang === "en" ? "en" : "zh-Hans";
  document.body.dataset.language = lang;
  for (const node of document.querySelectorAll("[data-label]")) node.textContent = label(lang, node.dataset.label);
}

// A pair dot, the natural star, drawn the same on the strip, the counts and the legend.
const pairDot = (side) => el("span", { class: "dot " + (side === "banker" ? "bp" : "pp") });
const star = () => el("span", { class: "nat" }, "\u2605");

function roadGrid(frame, road, data) {
  const rows = 6;
  const c = Math.max(4, Math.floor(frame.clientHeight / rows));
  // The frame hugs its whole columns: the width is its section's, the height its own share.
  const cols = Math.max(1, Math.floor(frame.parentElement.clientWidth / c));
  frame.style.setProperty("width", cols * c + "px");
  // The newest column and one empty one after it (where the next mark goes), when they fit.
  const start = Math.max(0, data.cols + 1 - cols);
  const text = beadText(lang);
  const cells = data.cells.filter((cell) => cell.col >= start).map((cell) => {
    const node = cellEl(road, cell, text);
    node.style.setProperty("grid-column", String(cell.col - start + 1));
    return node;
  });
  fill(frame, el("div", { class: "sb-grid" + (DERIVED.includes(road) ? " derived" : ""),
                          dataset: { roadGrid: road, cells: data.cells.length, start, cols },
                          style: { "--c": c + "px", "--cols": cols, width: cols * c + "px", height: rows * c + "px" } },
                 cells));
}

// The newest results, as many as the strip's width holds, newest on the right.
function strip(box, beads) {
  const size = box.clientHeight;
  const n = Math.max(1, Math.floor(box.clientWidth / (size * 1.12)));
  const text = beadText(lang);
  fill(box, beads.slice(-n).map((b) => el("span", { class: "chip " + b.mark,
                                                     style: { width: size + "px", height: size + "px", "--m": size + "px" },
                                                     dataset: { round: b.round, mark: b.mark } },
    text[b.mark], b.banker_pair ? pairDot("banker") : null, b.player_pair ? pairDot("player") : null,
    b.natural ? star() : null)));
  box.dataset.shown = Math.min(n, beads.length);
}

function lastResult(r) {
  if (!r || !r.winner) return el("span", { class: "muted" }, label(lang, "no_result"));
  const [mine, theirs] = r.winner === "player" ? [r.player_total, r.banker_total] : [r.banker_total, r.player_total];
  return el("span", { class: "result result-" + r.winner, dataset: { winner: r.winner } },
            label(lang, r.winner) + " " + mine + "\u2013" + theirs,
            r.natural ? star() : null, r.banker_pair ? pairDot("banker") : null,
            r.player_pair ? pairDot("player") : null);
}

function counts(c) {
  const items = [["banker", c.banker, el("span", { class: "sw B" })], ["player", c.player, el("span", { class: "sw P" })],
                 ["tie", c.tie, el("span", { class: "sw T" })], ["banker_pair", c.banker_pair, pairDot("banker")],
                 ["player_pair", c.player_pair, pairDot("player")], ["natural", c.natural, star()]];
  fill($("counts"), items.map(([key, v, icon]) => el("div", { class: "cnt", dataset: { count: key } },
    el("span", { class: "icon" }, icon), el("span", { class: "k" }, label(lang, key)), el("b", {}, v))));
}

// The ask road: the mark each derived road would add if the next hand went
// to Banker or to Player (the roads library's ask()); a dash where that road
// has not started yet.
function ask(a) {
  fill($("ask"), ["banker", "player"].map((side) => el("div", { class: "ask-row", dataset: { askSide: side } },
    el("span", { class: "side " + side }, label(lang, side)),
    DERIVED.map((road) => {
      const mark = a[side][road];
      return el("span", { class: "m" + (mark ? "" : " none"), title: label(lang, road),
                          dataset: { road, mark: mark || "none" } }, mark ? derivedMark(road, mark) : null);
    }))));
}

function legend() {
  const item = (icon, key) => el("span", { class: "lg", dataset: { legend: key } }, el("span", { class: "icon" }, icon),
                                 label(lang, key));
  fill($("legend"),
       item(pairDot("banker"), "banker_pair"), item(pairDot("player"), "player_pair"), item(star(), "natural"),
       item(el("span", { class: "tieline" }), "tie_mark"),
       el("span", { class: "lg-ask" }, label(lang, "ask") + ":"),
       DERIVED.map((road) => item(derivedMark(road, "R"), road)),
       el("span", { class: "lg", dataset: { legend: "red_blue" } }, label(lang, "red_blue")));
}

function draw(t) {
  last = t;
  lang = language(t.language);
  words();
  document.title = label(lang, "table") + " " + t.name;
  $("title").textContent = t.name;
  $("limits").textContent = t.limits || "\u2013";  // none in pit.toml, or the central record (it has no pit.toml)
  $("card-set").textContent = t.card_set || "-";
  const beads = t.scoreboard.bead_plate.cells;
  $("hands").textContent = beads.length;
  fill($("last"), lastResult(t.last_result));
  strip($("strip"), beads);
  for (const frame of document.querySelectorAll("[data-frame]")) roadGrid(frame, frame.dataset.frame, t.scoreboard[frame.dataset.frame]);
  counts(t.roads.counts);
  ask(t.roads.ask);
  legend();
}

const reload = coalesce(async () => {
  const r = await api("/api/tables/" + encodeURIComponent(name) + "?view=public");
  if (!r.ok) { $("offline").hidden = false; return; }
  $("offline").hidden = true;
  draw(r.data);
  document.body.dataset.loaded = "yes";
});

subscribe((m) => { if (m.table === name) reload(); }, reload, "/api/events?view=public");
window.addEventListener("online", reload);
// A new size (a screen turned to portrait, a window resized): the same board refitted.
window.addEventListener("resize", () => { if (last) draw(last); });
setInterval(() => { $("offline").hidden = document.body.dataset.live !== "no"; }, 1000);
reload();
