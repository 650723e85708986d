// The 32-bit MicroPython VM for the host tools and the tests: MicroPython
// compiled to WebAssembly (the npm package pinned in package-lock.json), run
// by node. host_tools/wasm32.py is its only caller; see there for why.
//
//   node wasm32_runner.mjs SPEC.json
//
// SPEC: {"heap": bytes, "mounts": [[host dir, guest dir], ...],
//        "path": [sys.path entries], "cwd": guest dir, "argv": [...],
//        "steps": [["code"|"file"|"module", text], ...], "report": host file}
//
// The build has no host file system, so each mounted directory is copied
// into the VM's in-memory one (nothing is written back). stdin is read whole
// and handed over byte for byte; stdout and stderr leave as bytes.
//
// Each step is a separate top-level call, because this build collects
// garbage only when control returns to JavaScript. Between steps the runner
// reads the heap's total size: a step during which it grew (the build grows
// the heap instead of raising MemoryError) is marked "grew" in the report, so
// that no figure from it is taken for one made inside the heap.
//
// Substitutes for what the build lacks, for tests only: os.urandom reads bytes
// node's crypto made at start; a termios that imports (the emulator's pty
// UART module does, even where no pty is opened) and refuses every call. An exception that leaves a step with the heap
// still locked would hang this build, so the step's wrapper unlocks first.

import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const stdinBytes = fs.readFileSync(0);
let stdinPos = 0;

const out = { 1: [], 2: [] };
let outSize = 0;
let capture = null;  // while set, the VM's stdout goes here (the runner's own probes)

function flush() {
  for (const fd of [1, 2]) {
    if (out[fd].length) {
      const buf = Buffer.from(out[fd]);
      let off = 0;
      while (off < buf.length) off += fs.writeSync(fd, buf, off);
      out[fd] = [];
    }
  }
  outSize = 0;
}

function sink(fd) {
  return (bytes) => {
    if (fd === 1 && capture !== null) {
      for (const b of bytes) capture.push(b);
      return;
    }
    for (const b of bytes) out[fd].push(b);
    outSize += bytes.length;
    if (outSize > 65536) flush();
  };
}

const mp = await loadMicroPython({
  heapsize: spec.heap,
  linebuffer: false,
  stdout: sink(1),
  stderr: sink(2),
  stdin: () => (stdinPos < stdinBytes.length ? stdinBytes[stdinPos++] : null),
});
const FS = mp.FS;

function mkdirs(dir) {
  let cur = "";
  for (const part of dir.split("/").filter(Boolean)) {
    cur += "/" + part;
    try { FS.mkdir(cur); } catch (e) { /* exists */ }
  }
}

function mount(host, guest) {
  mkdirs(guest);
  for (const ent of fs.readdirSync(host, { withFileTypes: true })) {
    if (ent.name === "__pycache__") continue;
    const h = path.join(host, ent.name);
    const g = guest + "/" + ent.name;
    if (ent.isDirectory()) mount(h, g);
    else if (ent.isFile()) FS.writeFile(g, fs.readFileSync(h));
  }
}

for (const [host, guest] of spec.mounts) mount(host, guest);
mkdirs("/wasm32/lib");
FS.writeFile("/wasm32/entropy", crypto.randomBytes(1 << 16));
FS.writeFile("/wasm32/lib/termios.py", [
  "# wasm32 substitute: this VM has no terminals; importing works, using fails.",
  "TCSANOW = 0",
  "def _none(*args):",
  "    raise OSError(95)  # EOPNOTSUPP",
  "tcgetattr = tcsetattr = setraw = _none",
  ""].join("\n"));
mkdirs(spec.cwd || "/");

const PRELUDE = `
import sys, os, micropython
sys.path[:] = ${JSON.stringify(spec.path.concat(["/wasm32/lib"]))}
sys.argv[:] = ${JSON.stringify(spec.argv || [])}
os.chdir(${JSON.stringify(spec.cwd || "/")})
if not hasattr(os, "urandom"):
    _wasm32_entropy = open("/wasm32/entropy", "rb")
    def _wasm32_urandom(n):
        b = _wasm32_entropy.read(n)
        if len(b) != n:
            raise OSError(5)
        return b
    os.urandom = _wasm32_urandom
_wasm32_globals = {"__name__": "__main__"}
_wasm32_rc = 0

def _wasm32_unlock():
    # True when the heap was locked (and is now unlocked).
    try:
        probe = bytearray(8)
        return False
    except MemoryError:
        while micropython.heap_unlock():
            pass
        return True

def _wasm32_find(mod):
    rel = mod.replace(".", "/")
    for d in sys.path:
        for cand in (rel + ".py", rel + "/__main__.py"):
            p = (d + "/" + cand) if d else cand
            try:
                os.stat(p)
                return p
            except OSError:
                pass
    raise ImportError("no module named '%s'" % mod)

def _wasm32_step(kind, text):
    global _wasm32_rc
    try:
        if kind == "code":
            src = text
        else:
            p = _wasm32_find(text) if kind == "module" else text
            with open(p) as f:
                src = f.read()
            _wasm32_globals["__file__"] = p
        exec(src, _wasm32_globals)
        _wasm32_rc = 0
    except SystemExit as e:
        _wasm32_unlock()
        code = e.args[0] if e.args else 0
        if code is None:
            code = 0
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        _wasm32_rc = code
    except BaseException as e:
        locked = _wasm32_unlock()
        if locked:
            print("wasm32: the exception below left the heap locked (unlocked by the runner)", file=sys.stderr)
        sys.print_exception(e, sys.stderr)
        _wasm32_rc = 1
`;

function heapTotal() {
  capture = [];
  mp.runPython("micropython.mem_info()");
  const text = Buffer.from(capture).toString("latin1");
  capture = null;
  const m = /GC: total: (\d+)/.exec(text);
  if (!m) throw new Error("wasm32 runner: no heap total in mem_info output");
  return Number(m[1]);
}

const report = { heap: spec.heap, steps: [] };
let rc = 0;
try {
  mp.runPython(PRELUDE);
  const pyStep = mp.globals.get("_wasm32_step");
  for (const [kind, text] of spec.steps) {
    const before = heapTotal();
    pyStep(kind, text);
    rc = mp.globals.get("_wasm32_rc");
    const after = heapTotal();
    report.steps.push({ before, after, grew: after > before, rc });
    if (rc !== 0) break;
  }
} catch (e) {
  flush();
  process.stderr.write("wasm32 runner: " + (e && e.message ? e.message : String(e)) + "\n");
  rc = 1;
}
flush();
if (spec.report) fs.writeFileSync(spec.report, JSON.stringify(report));
process.exitCode = rc;
