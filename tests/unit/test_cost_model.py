"""The shoe's cost model on a 125 MHz RP2040 (docs/cost_model.md,
docs/cost_model.json written by `shoe bench cost --write`): its arithmetic
is the bench's own (``cost.model``), its reference figures are the ones the
bench states, its calibration holds, and by it a card and a hello fit their
budgets. A change that makes the per-card path slower in the VM shows here
once the bench is rerun and the file rewritten."""

import json
import os

from host_tools import vm
from host_tools.qa.bench import cost

PATH = os.path.join(vm.ROOT, "docs", "cost_model.json")


def _load():
    with open(PATH) as f:
        return json.load(f)


def test_the_stored_model_is_the_arithmetic_of_its_own_figures():
    m = _load()
    assert m["reference"] == cost.REFERENCE
    assert m["model"] == cost.model(m["vm"])
    assert (m["budget_card_ms"], m["budget_hello_ms"]) == (cost.BUDGET_CARD_MS, cost.BUDGET_HELLO_MS)
    assert m["vm"]["runs"] >= 3 and m["vm"]["cards"] > 300


def test_the_calibration_maps_the_vm_to_the_rp2040():
    """The unit is the ~100-byte tag; the 299-byte tag must then cost what
    it cost on the RP2040, within 10 %, and the model's protocol-2 card may
    not exceed the reference's (what the VM does not run only adds)."""
    est = _load()["model"]
    assert abs(est["hello_calibration_vm"] / est["hello_calibration_rp2040"] - 1) < 0.10
    assert 0 < est["card_before_ms"] <= cost.REFERENCE["card_before_ms"]
    assert est["card_unmodelled_ms"] == round(cost.REFERENCE["card_before_ms"] - est["card_before_ms"], 1)


def test_the_firmware_path_of_a_card_and_a_hello_fit_their_budgets_by_the_model():
    """The part of a card the VM runs (the reader's parse, the card set,
    the game, the event, its tag, the frame) and a whole hello. The part it
    does not run (the journal's littlefs writes above all) is stated beside
    it, and is not within the budget yet (docs/cost_model.md)."""
    est = _load()["model"]
    assert est["card_ms"] <= cost.BUDGET_CARD_MS
    assert est["hello_ms"] <= cost.BUDGET_HELLO_MS
    # The hello fits even if the whole remainder is the unit's error.
    assert est["hello_scaled_ms"] <= cost.BUDGET_HELLO_MS
    # The protocol-2 tag alone broke both (57.6 and 112.8 ms on the RP2040).
    assert est["card_before_ms"] > cost.BUDGET_CARD_MS
    assert est["card_whole_ms"] == round(est["card_ms"] + est["card_unmodelled_ms"], 1)


def test_model_arithmetic_on_made_up_figures():
    """Exact numbers, so a slip in the formula cannot hide behind a re-run."""
    vm_figures = {"events": 300, "cards": 200, "card_ratio": 0.5, "card_before_ratio": 4.0,
                  "poll_ratio": 0.1, "hello_ratio": 0.4, "hello_before_ratio": 2.0, "gc_ratio": 2.0,
                  "blake2s_hello_ratio": 2.0, "heap_free_after_shoe": 72000}
    est = cost.model(vm_figures, tag_garbage=480)
    sha = 1.5 * cost.sha_blocks(170) * cost.SHA256_CYCLES_PER_BLOCK / (cost.MHZ * 1000.0)
    assert cost.sha_blocks(170) == 6 and cost.sha_blocks(0) == 4
    assert est["card_before_ms"] == 230.4                    # 4.0 x 57.6
    assert est["card_ms"] == round(28.8 + sha, 1)            # 0.5 x 57.6 + the C SHA-256
    assert est["card_unmodelled_ms"] == round(289 - 230.4, 1)
    assert est["card_scaled_ms"] == round((28.8 + sha) * 289 / 230.4, 1)
    assert est["hello_ms"] == round(0.4 * 57.6 + cost.sha_blocks(330) * 10000 / 125000.0, 1)
    assert est["cards_per_gc"] == 100                        # 72000 // (1.5 x 480)
