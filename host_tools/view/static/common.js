// Shared by every pit page: DOM building without innerHTML, the JSON API,
// the Server-Sent Events subscription and the login bar.
//
// Everything from the store reaches the DOM as text nodes or attribute
// values (el() below); no page sets innerHTML with data, so a card set,
// table name or alert detail can never become markup.

export function el(tag, attrs = {}, ...kids) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") {
      for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) node.dataset[k] = String(v);
    } else if (key === "style") {
      for (const [k, v] of Object.entries(value)) node.style.setProperty(k, String(v));
    } else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

export function fill(node, ...kids) {
  node.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return node;
}

export async function api(path, body) {
  const opts = { credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { data = { error: "not JSON (" + resp.status + ")" }; }
  return { status: resp.status, ok: resp.ok, data };
}

// Run `task` now, or once more after the run in flight ends: a burst of
// pushed events costs one reload per burst, never one per event queued up.
// `trigger.busy()`: a run is in flight. Its answer is the state as the
// server read it, which may be older than a push that arrives meanwhile: a
// page draws such a push by calling the trigger again (the next run reads
// it), never in place, or the late answer would draw over it.
export function coalesce(task) {
  let running = false, again = false;
  async function trigger() {
    if (running) { again = true; return; }
    running = true;
    try {
      do { again = false; await task(); } while (again);
    } catch (e) {
      console.error(e);
    } finally {
      running = false;
    }
  }
  trigger.busy = () => running;
  return trigger;
}

// The pit's pushed updates. The browser's EventSource reconnects by itself;
// `onOpen` reloads the state after every (re)connect, so nothing missed
// while disconnected stays missing.
export const PUSHED = ["event", "alert", "state", "ack", "restart"];

export function subscribe(onMessage, onOpen, path = "/api/events") {
  const source = new EventSource(path);
  for (const type of PUSHED) {
    source.addEventListener(type, (ev) => {
      let message;
      try { message = JSON.parse(ev.data); } catch (e) { return; }
      onMessage(message);
    });
  }
  source.addEventListener("open", () => { document.body.dataset.live = "yes"; onOpen(); });
  source.addEventListener("error", () => {
    document.body.dataset.live = "no";
    // The browser retries by itself unless the server answered with an
    // error (a restart, a cap): then this page starts a new stream itself.
    if (source.readyState === EventSource.CLOSED) setTimeout(() => subscribe(onMessage, onOpen, path), 3000);
  });
  return source;
}

const SUITS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };

export function cardEl(code, small) {
  const rank = code[0] === "T" ? "10" : code[0];
  const suit = code[1];
  return el("span", { class: "card" + (small ? " small" : "") + (suit === "H" || suit === "D" ? " red" : ""),
                      dataset: { card: code }, title: code },
            el("span", {}, rank), el("span", {}, SUITS[suit] || suit));
}

export const WINNER = { banker: "Banker", player: "Player", tie: "Tie" };

export function when(t) {
  if (t === null || t === undefined) return "-";
  return new Date(t * 1000).toLocaleString();
}

// The login bar. `login` holds {user, role} of who is logged in (user null:
// no one); onChange runs after a login or logout.
// `readOnly`: the server takes no writes (the central record's view, /api/me
// says so); the login bar says that instead, and style.css hides controls.
export const login = { user: null, role: null, readOnly: false };

// The names the server defines once (positions, phases, alert kinds...):
// read from /api/vocabulary, never spelled again here.
export async function loadVocabulary() {
  const r = await api("/api/vocabulary");
  if (!r.ok) throw new Error("no vocabulary: " + r.status);
  return r.data;
}

export async function loadLogin() {
  const r = await api("/api/me");
  login.user = r.ok ? r.data.user : null;
  login.role = r.ok ? r.data.role : null;
  login.readOnly = r.ok && r.data.read_only === true;
  if (login.readOnly) document.body.dataset.readOnly = "yes";
  return login;
}

export function loginBar(box, onChange) {
  const message = el("span", { class: "login-message", role: "status" });
  function render() {
    if (login.readOnly) {
      fill(box, el("span", { id: "read-only", class: "muted" }, "read-only: the central record"));
    } else if (login.user) {
      fill(box, el("span", { dataset: { user: login.user, role: login.role } },
                   login.user + " (" + login.role + ")"),
           el("button", { type: "button", id: "logout", onclick: async () => {
             await api("/api/logout", {});
             await loadLogin(); render(); onChange();
           } }, "Log out"));
    } else {
      const user = el("input", { id: "login-user", name: "user", placeholder: "user", autocomplete: "username" });
      const password = el("input", { id: "login-password", name: "password", type: "password",
                                     placeholder: "password", autocomplete: "current-password" });
      const form = el("form", { id: "login", onsubmit: async (ev) => {
        ev.preventDefault();
        const r = await api("/api/login", { user: user.value, password: password.value });
        if (!r.ok) { message.textContent = r.data.error || "login failed"; return; }
        message.textContent = "";
        await loadLogin(); render(); onChange();
      } }, user, password, el("button", { type: "submit" }, "Log in"), message);
      fill(box, form);
    }
  }
  render();
  return render;
}
