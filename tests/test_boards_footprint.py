"""The footprint benchmark's instrument: it runs a whole staged shoe at the
board's heap in the 64-bit and the 32-bit VM, reports zero growth per card
for the core, and would see growth if there were any; the shoe's 32-bit
budget. (Its timings are for `shoe bench footprint`.)"""

import pytest

import wasm32vm
from host_tools import deploy
from host_tools.boards import footprint


@pytest.fixture(scope="module")
def pico_stage(tmp_path_factory):
    out = tmp_path_factory.mktemp("fp")
    manifest = deploy.stage("pico", out, "FP", bytes(32))
    footprint.eight_deck_cardset(out / deploy.CARDSET)
    return out, manifest


def test_whole_shoe_fits_the_esp32s3_budget_without_growth(capsys):
    assert footprint.main(["--runs", "1", "--board", "esp32s3", "--vm", "micropython"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.split()[:7] == ["board", "heap", "staged", "import", "+rare", "peak", "growth/card"]
    name, heap, staged, imported, rare, peak, growth, us, cards = row.split()
    assert name == "esp32s3" and int(heap) == 190 * 1024
    assert 0 < int(imported) < int(peak) < int(heap)
    assert int(imported) < int(rare) < int(heap)  # the on-demand modules, loaded for a while
    assert float(growth) == 0.0
    # 416 cards less the cut card's 16 at most; the shoe ends after "last hand".
    assert 300 <= int(cards) <= 416


def _table(capsys):
    lines = capsys.readouterr().out.splitlines()
    heads = lines[0].split()
    return [dict(zip(heads, line.split())) for line in lines[1:] if line.split()[0] in ("pico", "esp32s3")]


def test_both_columns_and_the_pico_budget_in_32_bits(capsys):
    """The shoe's budget (docs/design.md): resident on the pico board at most
    55 % of its heap in the 32-bit VM, with a whole shoe inside the heap."""
    wasm32vm.need()
    assert footprint.main(["--runs", "1", "--board", "pico"]) == 0
    row = _table(capsys)[0]
    heap = int(row["heap"])
    assert heap == 190 * 1024
    for key in ("import", "+rare", "peak"):
        # 32-bit objects are smaller: between half and all of the 64-bit figure
        assert 0.5 < int(row[key + ":32"]) / int(row[key + ":64"]) < 1.0
    assert int(row["import:32"]) <= footprint.RESIDENT_SHARE_32 * heap
    assert int(row["import:32"]) < int(row["peak:32"]) < heap  # "unknown" fails int()
    assert float(row["growth/card:32"]) == 0.0 and float(row["growth/card:64"]) == 0.0


def test_a_step_that_grew_the_32_bit_heap_is_unknown(capsys, monkeypatch):
    wasm32vm.need()
    # 300 KB of garbage in the peak shoe's step: the wasm heap grows there.
    monkeypatch.setattr(footprint, "_SHOE", footprint._SHOE.replace(
        "dealt2, peak, x, x2 = shoe(True, -1, 0)",
        "dealt2, peak, x, x2 = shoe(True, -1, 0)\nfor k in range(300):\n    junk = bytearray(1000)"))
    assert footprint.main(["--runs", "1", "--board", "pico", "--vm", "wasm32"]) == 0
    row = _table(capsys)[0]
    assert row["import"] != "unknown" and int(row["import"]) > 0
    assert row["peak"] == "unknown" and row["growth/card"] == "unknown"  # and every step after it


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
