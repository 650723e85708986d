"""Reading the image declarations (host_tools/image.py); what they stage and boot:
tests/e2e/test_image.py."""

import pytest

from host_tools import image


def test_a_declaration_naming_a_missing_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text('device("shoe")\nmodule("nowhere.py")\n')
    monkeypatch.setattr(image, "DECLARATIONS", tmp_path)
    with pytest.raises(image.ImageError, match="firmware/nowhere.py"):
        image.load("bad")
