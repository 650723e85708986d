"""The footprint benchmark's instrument: it runs a whole staged shoe at the
board's heap, reports zero growth per card for the core, and would see
growth if there were any. (Its timings are for `shoe bench footprint`.)"""

import pytest

from host_tools import deploy
from host_tools.qa.bench import footprint


@pytest.fixture(scope="module")
def pico_stage(tmp_path_factory):
    out = tmp_path_factory.mktemp("fp")
    manifest = deploy.stage("pico", out, "FP", bytes(32))
    footprint.eight_deck_cardset(out / deploy.CARDSET)
    return out, manifest


def test_whole_shoe_fits_the_esp32s3_budget_without_growth(capsys):
    assert footprint.main(["--runs", "1", "--board", "esp32s3"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.split()[:7] == ["board", "heap", "staged", "import", "+rare", "peak", "growth/card"]
    name, heap, staged, imported, rare, peak, growth, us, cards = row.split()
    assert name == "esp32s3" and int(heap) == 190 * 1024
    assert 0 < int(imported) < int(peak) < int(heap)
    assert int(imported) < int(rare) < int(heap)  # the on-demand modules, loaded for a while
    assert float(growth) == 0.0
    # 416 cards less the cut card's 16 at most; the shoe ends after "last hand".
    assert 300 <= int(cards) <= 416


def test_growth_measure_sees_a_per_card_allocation(pico_stage, monkeypatch):
    outdir, manifest = pico_stage
    clean = footprint.measure(outdir, manifest, 3)
    monkeypatch.setattr(footprint, "_SHOE", footprint._SHOE.replace(
        "    count[0] += 1", "    count[0] += 1\n    kept = bytearray(1)"))
    leaky = footprint.measure(outdir, manifest, 3)
    assert clean["grown"] == 0
    assert leaky["grown"] >= leaky["stretch"] * 16  # at least one heap block per card
    assert leaky["cards"] == clean["cards"]
