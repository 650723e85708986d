"""How the browser tests start Debian's chromium through Playwright (never a
downloaded browser build): one set of flags and one wait for every page.

The browser is Debian's chromium-headless-shell: the same Blink and V8 as
its chromium package, without the windows and browser UI that chromium's
own --headless mode still builds for every context. It is the build
Playwright itself runs for headless tests, and it drew the same pages at
about half the CPU (tests/e2e/test_pit_pages.py: 26 against 46 CPU seconds
for the module)."""

CHROMIUM = "/usr/bin/chromium-headless-shell"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# A bound for a page that never gets there: on a 2-core machine at a load
# average of 10 to 30 a page was drawn a moment after 5 s had run out.
WAIT_MS = 30000


def launch():
    """(playwright, browser): Debian's chromium under Playwright, or a FAIL
    in one line when either is missing (never a skip)."""
    import os

    import pytest
    if not os.path.exists(CHROMIUM):
        pytest.fail("chromium is missing: %s not found (make test installs Debian's chromium-headless-shell package "
                    "when run as root)" % CHROMIUM, pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        pytest.fail("playwright is missing (%s): run make venv" % e, pytrace=False)
    pw = sync_playwright().start()
    return pw, pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)


def login_context(browser, base_url, user=None, password=None, width=1280, height=900):
    """A browser context of ``width`` pixels, logged in through the pit's
    login API as ``user`` when given (what a page shows depends on the role,
    host_tools/view/roles.py), so the first page it loads is already that role's."""
    context = browser.new_context(viewport={"width": width, "height": height})
    if user:
        r = context.request.post(base_url + "/api/login", data={"user": user, "password": password},
                                 headers={"Origin": base_url})
        assert r.ok, r.text()
    return context


def open_page(browser, base_url, path, user=None, password=None, width=1280):
    """(context, page) of ``path`` once it has loaded, logged in as ``user``
    when given; ``page.errors`` collects the page's script errors."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base_url + path)
    page.wait_for_selector("body[data-loaded=yes]", timeout=WAIT_MS)
    if user:
        page.fill("#login-user", user)
        page.fill("#login-password", password)
        page.click("#login button[type=submit]")
        page.wait_for_selector("[data-user=%s]" % user, timeout=WAIT_MS)
    page.errors = errors
    return context, page


# Whatever on the page sticks out of the viewport (not inside a scrolling box).
OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth, bad = [];
  for (const e of document.querySelectorAll("body *")) {
    let p = e.parentElement, clipped = false;
    while (p && p !== document.body) {
      const o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "hidden" || o === "scroll") { clipped = true; break; }
      p = p.parentElement;
    }
    if (clipped) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > vw + 1 || r.left < -1)
      bad.push(e.tagName + "." + e.className + " " + Math.round(r.left) + ".." + Math.round(r.right));
  }
  return { vw, scroll: document.documentElement.scrollWidth, bad: bad.slice(0, 8) };
}"""
