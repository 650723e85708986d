// The shuffler's block on the table page: batch in play, batch stored and
// whether its seal holds, the door, a tilt, the latest faults. It reads the
// "shuffler" field of /api/tables/NAME (host_tools/shuffler/pit.py); the
// block stays hidden for a table with no shuffler. Text nodes only (el()).
import { api, el, fill } from "/static/common.js";

const name = decodeURIComponent(location.pathname.split("/")[2] || "");
const box = document.getElementById("shuffler");

function draw(s) {
  box.hidden = !s;
  if (!s) return;
  const b = (k) => {
    const x = s.batches[k];
    return el("span", { class: x.state === "broken" || x.state === "rejected" ? "bad" : "" },
              "Batch " + k + " ", el("b", { dataset: { batch: k } }, x.state), x.id ? " (" + x.id + ")" : "");
  };
  fill(document.getElementById("shuffler-body"),
       el("div", { class: "facts" }, b("A"), b("B"),
          el("span", {}, "In play ", el("b", { id: "shuffler-in-play" }, s.in_play || "-")),
          el("span", { class: s.stored && !s.stored_sealed ? "bad" : "" }, "Stored ",
             el("b", { id: "shuffler-stored" }, s.stored ? s.stored + (s.stored_sealed ? " sealed" : " not sealed") : "-")),
          el("span", {}, "Door ", el("b", {}, s.door ? (s.door.shut ? "shut" : "OPEN") + (s.door.locked ? ", locked" : "") : "-")),
          s.tilt ? el("span", { class: "bad" }, "TILT ", el("b", {}, s.tilt)) : null),
       s.faults.length ? el("ul", { id: "shuffler-faults" }, s.faults.map((f) => el("li", {}, f))) : null);
}

async function reload() {
  const r = await api("/api/tables/" + encodeURIComponent(name));
  if (r.ok) draw(r.data.shuffler);
}

reload();
setInterval(reload, 2000);
