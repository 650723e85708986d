// The screen at the table, for its players: read from three metres, so big
// type and big road cells; public data only, whoever is logged in on this
// browser (every request says ?view=public, roles.py filters the rest);
// and it heals itself: a lost stream is opened again and the table re-read.
import { api, coalesce, el, fill, subscribe, WINNER } from "/static/common.js";
import { drawAsk, drawBoard } from "/static/board.js";

const name = decodeURIComponent(location.pathname.split("/")[2]);
const $ = (id) => document.getElementById(id);

function lastResult(r) {
  if (!r || !r.winner) return el("span", { class: "muted" }, "No result yet");
  return el("span", { class: "result result-" + r.winner, dataset: { winner: r.winner } },
            WINNER[r.winner] + " " + r.player_total + "\u2013" + r.banker_total,
            r.natural ? " \u2605" : "", r.player_pair ? " P\u2022" : "", r.banker_pair ? " B\u2022" : "");
}

function draw(t) {
  document.title = "Table " + t.name;
  $("title").textContent = "Table " + t.name;
  $("limits").textContent = t.limits ? "Limits " + t.limits : "";
  fill($("last"), lastResult(t.last_result));
  drawBoard($("board"), t.scoreboard);
  drawAsk($("ask"), t.roads.ask);
  const c = t.roads.counts;
  fill($("counts"), [["Banker", c.banker, "banker"], ["Player", c.player, "player"], ["Tie", c.tie, "tie"],
                     ["B pair", c.banker_pair, "banker_pair"], ["P pair", c.player_pair, "player_pair"]]
    .map(([k, v, key]) => el("span", { dataset: { count: key } }, k + " ", el("b", {}, v))));
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
setInterval(() => { $("offline").hidden = document.body.dataset.live !== "no"; }, 1000);
reload();
