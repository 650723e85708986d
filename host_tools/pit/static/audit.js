// The audit log for surveillance: who did what, from where, and whether the
// chain still links (host_tools/store/audit.py; `shoe verify` checks it too).
import { api, el, fill, loadSession, loginBar, when } from "/static/common.js";

const $ = (id) => document.getElementById(id);

async function main() {
  const r = await api("/api/audit");
  if (!r.ok) {
    fill($("chain"), el("p", { class: "bad", id: "audit-refused" },
                        r.status === 401 ? "The audit log is for surveillance: log in." : r.data.error || String(r.status)));
    fill($("rows"));
    document.body.dataset.loaded = "yes";
    return;
  }
  fill($("chain"), el("p", { class: r.data.chain === "ok" ? "ok" : "bad", id: "audit-chain" },
                      r.data.chain === "ok" ? "The chain links." : r.data.chain),
       el("p", { class: "mono" }, "head " + r.data.head));
  const cols = ["id", "time", "user", "role", "client", "tbl", "action", "target", "outcome"];
  fill($("rows"), el("table", { class: "list", id: "audit-rows" },
    el("thead", {}, el("tr", {}, cols.map((c) => el("th", {}, c)))),
    el("tbody", {}, r.data.rows.map((row) => el("tr", { dataset: { action: row.action } },
      cols.map((c) => el("td", { class: c === "outcome" || c === "target" ? "wrap" : "" },
                         c === "time" ? when(row[c]) : row[c])))))));
  document.body.dataset.loaded = "yes";
}

await loadSession();
loginBar($("session"), () => location.reload());
main();
