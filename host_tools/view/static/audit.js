// The audit log for surveillance: who did what, from where, and whether the
// chain still links (host_tools/store/audit.py; `shoe verify` checks it too).
// The search runs on the server over the whole log (web.py _audit_search):
// text in the user, table, client, target or outcome, and one action.
import { api, el, fill, loadLogin, loginBar, when } from "/static/common.js";

const $ = (id) => document.getElementById(id);
const COLS = ["id", "time", "user", "role", "client", "tbl", "action", "target", "outcome"];

function query() {
  const q = $("audit-q").value.trim(), action = $("audit-action").value;
  const params = new URLSearchParams();
  if (q) params.set("q", q);
  if (action) params.set("action", action);
  return params.toString();
}

async function load() {
  const params = query();
  const r = await api("/api/audit" + (params ? "?" + params : ""));
  if (!r.ok) {
    fill($("chain"), el("p", { class: "bad", id: "audit-refused" },
                        r.status === 401 ? "The audit log is for surveillance: log in." : r.data.error || String(r.status)));
    fill($("rows"));
    $("search").hidden = true;
    document.body.dataset.loaded = "yes";
    return;
  }
  fill($("chain"), el("p", { class: r.data.chain === "ok" ? "ok" : "bad", id: "audit-chain" },
                      r.data.chain === "ok" ? "The chain links." : r.data.chain),
       el("p", { class: "mono" }, "head " + r.data.head));
  const select = $("audit-action"), chosen = select.value;
  fill(select, el("option", { value: "" }, "any"),
       r.data.actions.map((a) => el("option", { value: a, selected: a === chosen }, a)));
  $("rows-heading").textContent = params ? r.data.rows.length + " matching rows (newest first)" : "Newest 500 rows";
  fill($("rows"), r.data.rows.length ? el("table", { class: "list", id: "audit-rows", dataset: { count: r.data.rows.length } },
    el("thead", {}, el("tr", {}, COLS.map((c) => el("th", {}, c)))),
    el("tbody", {}, r.data.rows.map((row) => el("tr", { dataset: { action: row.action } },
      COLS.map((c) => el("td", { class: c === "outcome" || c === "target" ? "wrap" : "" },
                         c === "time" ? when(row[c]) : row[c]))))))
    : el("p", { class: "muted", id: "audit-none" }, "No row matches."));
  document.body.dataset.loaded = "yes";
}

$("search").addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
$("audit-action").addEventListener("change", load);
$("audit-clear").addEventListener("click", () => { $("audit-q").value = ""; $("audit-action").value = ""; load(); });
await loadLogin();
loginBar($("login-bar"), () => location.reload());
load();
