"""The footprint benchmark's instrument: it boots what `shoe deploy --dry-run`
stages (the staged main.py's boot check, then the shoe's modules from the
staging alone) and runs a whole shoe at the board's heap in the 64-bit and
the 32-bit VM, reports zero growth per card for the core, and would see
growth if there were any; it stops on a module the shoe loads that the dry
run did not stage, and on a staged file the boot check refuses; the shoe's
32-bit budget. (Its timings are for `shoe bench footprint`.)"""

import shutil

import pytest

from support import wasm32vm
from host_tools import deploy
from host_tools.qa.bench import footprint


@pytest.fixture(scope="module")
def pico_stage(tmp_path_factory):
    out = tmp_path_factory.mktemp("fp") / "flash"
    manifest = footprint.stage_deployed("pico", out)
    assert (out / deploy.CARDSET).is_file() and manifest["shoe_id"] == "BENCH"
    return out, manifest


@pytest.mark.parametrize("left_out", ["reading.py", "probes.py"])
def test_a_module_the_shoe_loads_that_deploy_does_not_stage_stops_the_measurement(monkeypatch, capsys,
                                                                                  left_out):
    """reading.py is imported by main.py; probes.py is loaded from a string
    (link/session.py), on demand. Left out of what `shoe deploy` stages, each
    stops the footprint with a line naming it, never a figure without it."""
    image_files = deploy.image_files
    monkeypatch.setattr(deploy, "image_files", lambda device, module: [
        f for f in image_files(device, module) if f[0] != left_out])
    assert footprint.main(["--runs", "1", "--board", "pico", "--vm", "micropython"]) == 1
    out, err = capsys.readouterr()
    assert "board" not in out and left_out in err and "did not stage" in err, (out, err)


def test_a_staged_file_the_boot_check_refuses_stops_the_measurement(pico_stage, tmp_path):
    """The measurement boots the staged tree: a file altered after staging
    halts its boot check, as it would halt a board, and no figure comes."""
    outdir, manifest = pico_stage
    altered = tmp_path / "flash"
    shutil.copytree(outdir, altered)
    target = altered / "link" / "session.mpy"
    data = bytearray(target.read_bytes())
    data[-1] ^= 1
    target.write_bytes(bytes(data))
    with pytest.raises(RuntimeError) as e:
        footprint.measure(altered, manifest, 1)
    first = str(e.value).splitlines()[0]
    assert "boot check stopped the staged image" in first and "link/session.mpy" in first, first


def test_whole_shoe_fits_the_esp32s3_budget_without_growth_in_both_vms(capsys):
    wasm32vm.need()
    assert footprint.main(["--runs", "1", "--board", "esp32s3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = lines[0].split()
    assert heads == ["board", "heap", "staged", "import:64", "import:32", "+rare:64", "+rare:32", "peak:64",
                     "peak:32", "growth/card:64", "growth/card:32", "us/card", "cards"]
    row = dict(zip(heads, lines[1].split()))
    heap = int(row["heap"])
    assert row["board"] == "esp32s3" and heap == 190 * 1024
    for bits in ("64", "32"):  # "unknown" fails int()
        imported, rare, peak = (int(row[k + ":" + bits]) for k in ("import", "+rare", "peak"))
        assert 0 < imported < peak < heap
        assert imported < rare < heap  # the on-demand modules, loaded for a while
        assert float(row["growth/card:" + bits]) == 0.0
    for key in ("import", "+rare", "peak"):
        # 32-bit objects are smaller: between half and all of the 64-bit figure
        assert 0.5 < int(row[key + ":32"]) / int(row[key + ":64"]) < 1.0
    # 416 cards less the cut card's 16 at most; the shoe ends after "last hand".
    assert 300 <= int(row["cards"]) <= 416


def test_the_pico_resident_budget_in_32_bits(pico_stage):
    """The shoe's budget (docs/design.md, "Heap budgets"): resident on the
    pico board at most 60 % of its heap in the 32-bit VM, a whole shoe inside
    the heap (no step grew it), nothing grown per card."""
    wasm32vm.need()
    outdir, manifest = pico_stage
    fig = footprint.measure32(outdir, manifest, 1)
    assert manifest["heap"] == 190 * 1024
    assert None not in (fig["import"], fig["peak"], fig["grown"])
    assert fig["import"] <= footprint.RESIDENT_SHARE_32 * manifest["heap"]
    assert fig["import"] < fig["peak"] < manifest["heap"] and fig["grown"] == 0
    # On the stock rp2 port: the resident set and what the port itself
    # holds, as a share of its GC heap (245,888 B on v1.28.0 RPI_PICO).
    assert footprint.stock_heap("pico") == 245888
    assert fig["import"] + footprint.PORT_HELD_RP2 <= footprint.STOCK_SHARE * footprint.stock_heap("pico")


def test_a_step_that_grew_the_32_bit_heap_is_unknown(pico_stage, monkeypatch):
    wasm32vm.need()
    # 300 KB of garbage in the peak shoe's step: the wasm heap grows there.
    monkeypatch.setattr(footprint, "_SHOE", footprint._SHOE.replace(
        "dealt2, peak, x, x2 = shoe(True, -1, 0)",
        "dealt2, peak, x, x2 = shoe(True, -1, 0)\nfor k in range(300):\n    junk = bytearray(1000)"))
    fig = footprint.measure32(*pico_stage, 1)
    assert fig["import"] > 0 and fig["rare"] > 0
    assert fig["peak"] is None and fig["grown"] is None  # and every step after it
    assert footprint._cell(fig["peak"], "%d") == "unknown"


@pytest.mark.parametrize("which", ["micropython", "wasm32"])
def test_growth_measure_sees_a_per_card_allocation(pico_stage, monkeypatch, which):
    outdir, manifest = pico_stage
    measure = footprint.measure if which == "micropython" else footprint.measure32
    if which == "wasm32":
        wasm32vm.need()
    clean = measure(outdir, manifest, 3)
    monkeypatch.setattr(footprint, "_SHOE", footprint._SHOE.replace(
        "    count[0] += 1", "    count[0] += 1\n    kept = bytearray(1)"))
    leaky = measure(outdir, manifest, 3)
    assert clean["grown"] == 0
    assert leaky["grown"] >= leaky["stretch"] * 16  # at least one heap block per card
    assert leaky["cards"] == clean["cards"]
