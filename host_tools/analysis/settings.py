"""Reading table settings for the analysis commands (a JSON file or inline text)."""

import json
import os


def load(text):
    """Settings from ``text``: a path to a JSON file, or the JSON itself."""
    if text is None:
        return None
    if os.path.exists(text):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError("table settings are not valid JSON: %s" % exc) from None
    if not isinstance(doc, dict):
        raise ValueError("table settings must be a JSON object")
    return doc
