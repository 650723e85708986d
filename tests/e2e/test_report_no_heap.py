"""When the main loop's report of an error finds no heap, the report still
goes out: firmware/main.py holds REPORT_RESERVE bytes from boot, gives them
up then, and sends NO_HEAP (a constant of the code). Run in the unix
MicroPython VM from the staged emulator image, with every free block of the
heap taken by live objects first. (Not in the wasm32 VM: its heap grows on
demand, so it cannot be filled.)"""

from host_tools import deploy
from host_tools.qa.bench import footprint
from host_tools.sim import vmcode

# Room for the session and the test's own buffers; the program then takes
# every free block itself.
HEAP = 320 * 1024

PROGRAM = vmcode.SINK_BOARD + r"""
import gc
import main
from link.journal import Journal
from link.session import Session
import board_config

CAP = bytearray(16384)
hog = [None] * 8192   # its slots made first: filling it later allocates only the blocks
at = [0]

class Board(SinkBoard):
    def link_write(self, buf, n):   # allocates nothing: the heap is full
        p = at[0]
        for i in range(n):
            if p < len(CAP):
                CAP[p] = buf[i]
                p += 1
        at[0] = p

s = Session(Board(), board_config, Journal("journal.bin"))
s.boot()
s.up = True
for _ in range(40):
    s.step()
reserve = [bytearray(main.REPORT_RESERVE)]
gc.collect()
start = at[0]
k = 0
size = 4096
while size >= 1 and k < len(hog):
    try:
        hog[k] = bytearray(size)
        k += 1
    except MemoryError:
        size //= 2
while k < len(hog):   # and the last single blocks (a 1-tuple is one in 32 bits)
    try:
        hog[k] = (k,)
        k += 1
    except MemoryError:
        break
try:
    probe = "internal error: %s" % k   # what the report would make first
    exhausted = False
except MemoryError:
    exhausted = True
main.report(s, MemoryError("memory allocation failed, allocating 200 bytes"), reserve)
for _ in range(40):
    try:
        s.step()
    except Exception as e:   # as the main loop does
        main.report(s, e, reserve)
gave_up = reserve[0] is None
hog = None
gc.collect()
sent = bytes(CAP[start:at[0]])
main.keep_reserve(reserve)
print(exhausted, gave_up, reserve[0] is not None, sent.find(main.NO_HEAP.encode()) >= 0)
"""


def test_the_report_of_running_out_of_heap_goes_out(tmp_path):
    deploy.stage("emulator", tmp_path, "NOHEAP", bytes(32))
    proc = footprint.run_in_vm(tmp_path, HEAP, PROGRAM)
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 0, (out + err).strip()
    exhausted, gave_up, kept_again, sent = out.split()[-4:]
    assert exhausted == "True"      # not even the report's text could be made
    assert gave_up == "True"        # the first report found no heap: the reserve went
    assert sent == "True"           # ... and the preallocated report is on the link
    assert kept_again == "True"     # with heap back, the reserve is held again
