// Draws the five roads from the cells the server placed
// (host_tools/view/scoreboard.py: every position comes from grid() in the
// roads library). This file only decides how a cell looks; each cell keeps
// its facts in data attributes (road, col, row, mark, ties, pairs, natural,
// round) so a test can read the drawn board back.
import { el, fill } from "/static/common.js";

export const ROADS = [
  ["bead_plate", "Bead Plate"],
  ["big_road", "Big Road"],
  ["big_eye_boy", "Big Eye Boy"],
  ["small_road", "Small Road"],
  ["cockroach_pig", "Cockroach Pig"],
];
const DERIVED = ["big_eye_boy", "small_road", "cockroach_pig"];
const MIN_COLS = { bead_plate: 14, big_road: 30, big_eye_boy: 30, small_road: 30, cockroach_pig: 30 };
const BEAD_TEXT = { B: "B", P: "P", T: "T" };

function flags(cell) {
  return [cell.banker_pair ? el("span", { class: "dot bp", title: "banker pair" }) : null,
          cell.player_pair ? el("span", { class: "dot pp", title: "player pair" }) : null,
          cell.natural ? el("span", { class: "nat", title: "natural" }, "\u2605") : null];
}

// One derived-road mark (R red / B blue), drawn as that road is drawn.
export function derivedMark(road, mark) {
  const colour = mark === "R" ? "R" : "blue";
  if (road === "big_eye_boy") return el("span", { class: "ring " + colour });
  if (road === "small_road") return el("span", { class: "disc " + colour });
  return el("span", { class: "stroke " + colour });
}

function inner(road, cell, beadText) {
  if (road === "bead_plate") {
    return [el("span", { class: "bead " + cell.mark }, beadText[cell.mark]), flags(cell)];
  }
  if (road === "big_road") {
    return [el("span", { class: "ring " + cell.mark }),
            cell.ties ? el("span", { class: "tie", title: cell.ties + " tie(s)" }) : null,
            cell.ties > 1 ? el("span", { class: "tcount" }, cell.ties) : null,
            flags(cell)];
  }
  return [derivedMark(road, cell.mark)];
}

// One cell of a road, placed at its (col, row) of the road's grid;
// `beadText` names the Bead Plate's winners (the display's language).
export function cellEl(road, cell, beadText = BEAD_TEXT) {
  const data = { road, col: cell.col, row: cell.row, mark: cell.mark };
  if (cell.round !== undefined) Object.assign(data, {
    round: cell.round, bankerPair: cell.banker_pair ? 1 : 0, playerPair: cell.player_pair ? 1 : 0,
    natural: cell.natural ? 1 : 0 });
  if (cell.ties !== undefined) data.ties = cell.ties;
  if (cell.lcol !== undefined) { data.lcol = cell.lcol; data.lrow = cell.lrow; }
  return el("div", { class: "cell", dataset: data,
                     style: { "grid-column": String(cell.col + 1), "grid-row": String(cell.row + 1) } },
            inner(road, cell, beadText));
}

// Fill `box` with the five roads of `scoreboard` (the API's "scoreboard").
export function drawBoard(box, scoreboard, scroll = true) {
  const parts = [];
  for (const [road, label] of ROADS) {
    const data = scoreboard[road];
    const cols = Math.max(data.cols, MIN_COLS[road]);
    const grid = el("div", { class: "road" + (DERIVED.includes(road) ? " small" : ""),
                             dataset: { roadGrid: road, cells: data.cells.length },
                             style: { "--cols": cols } },
                    data.cells.map((c) => cellEl(road, c)));
    parts.push(el("div", { class: "roadlabel" }, label), el("div", { class: "roadwrap" }, grid));
  }
  fill(box, parts);
  // Scroll a road only as far as its newest drawn column needs (plus one
  // empty column): scrolling to the grid's end hid the first columns of a
  // short road behind empty ones when the frame clips (the table display).
  if (scroll) for (const [i, wrap] of [...box.querySelectorAll(".roadwrap")].entries()) {
    const grid = wrap.firstChild, data = scoreboard[ROADS[i][0]];
    const cell = grid.getBoundingClientRect().width / Number(grid.style.getPropertyValue("--cols"));
    wrap.scrollLeft = Math.max(0, (data.cols + 1) * cell - wrap.clientWidth);
  }
}

// The ask road: the mark each derived road would add after a Banker or a
// Player win (the roads library's ask(), as `shoe roads` prints it).
export function drawAsk(box, ask) {
  const sides = [["banker", "Banker next"], ["player", "Player next"]];
  fill(box, sides.map(([side, label]) =>
    el("span", { class: "ask", dataset: { askSide: side } },
       el("span", { class: "side " + side }, label),
       DERIVED.map((road) => {
         const mark = ask[side][road];
         return el("span", { class: "m" + (mark ? "" : " none"), title: road.replace(/_/g, " "),
                             dataset: { road, mark: mark || "none" } },
                   mark ? derivedMark(road, mark) : null);
       }))));
}
