// The shoe's shuffle-quality score (host_tools/analysis/shuffle_score.py),
// drawn the same way on the table page and the end-of-shoe report: each
// statistic against its reference, its expectation and spread under a
// uniform shuffle, its p-value, and the verdict.
import { el, fill } from "/static/common.js";

const LABELS = {
  factory_adjacency: "Kept adjacencies, decks' order",
  factory_rising: "Rising-sequence breaks, decks' order",
  previous_adjacency: "Kept adjacencies, previous shoe",
  previous_rising: "Rising-sequence breaks, previous shoe",
};

const fmt = (p) => (p === 0 ? "0" : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

export function drawShuffle(box, s) {
  if (!s) { fill(box, el("p", { class: "muted", id: "shuffle-none" }, "No card dealt yet.")); return; }
  const verdict = s.weak ? "WEAK SHUFFLE (p " + fmt(s.p) + " < " + s.alpha + ")"
                         : "no sign of a weak shuffle (p " + fmt(s.p) + ")";
  const rows = Object.entries(s.stats).map(([k, v]) => el("tr", { dataset: { stat: k } },
    el("td", {}, LABELS[k] || k), el("td", {}, v.observed), el("td", {}, v.expected.toFixed(2)),
    el("td", {}, v.sd.toFixed(2)), el("td", {}, fmt(v.p))));
  fill(box,
    el("p", { class: s.weak ? "bad" : "ok", id: "shuffle-verdict", dataset: { weak: s.weak ? "yes" : "no", p: s.p } },
       verdict),
    el("p", { class: "muted" }, s.cards + " cards" + (s.physical ? ", by physical card" : ", by face (no deck in the record)") +
       (s.previous === null ? "; no earlier shoe of batch " + s.batch + " in the record" : "")),
    el("table", { class: "list", id: "shuffle-stats" },
       el("thead", {}, el("tr", {}, ["Statistic", "Observed", "Expected", "SD", "p"].map((h) => el("th", {}, h)))),
       el("tbody", {}, rows)));
}
