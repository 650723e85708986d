"""pyproject.toml declares its dependencies as ranges that admit what
requirements.txt pins. The wheel installed into a fresh venv:
tests/e2e/test_packaging.py."""

import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _name(requirement):
    for i, c in enumerate(requirement):
        if not (c.isalnum() or c in "-_."):
            return requirement[:i].lower().replace("_", "-")
    return requirement.lower().replace("_", "-")


def test_declared_dependencies_are_ranges_that_admit_the_lock():
    """pyproject.toml states ranges; requirements.txt the exact versions
    `make` installs. Every declared package is locked, at a version inside
    its range, and no declared range is an exact pin."""
    from packaging.requirements import Requirement

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    declared = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        declared += extra
    lock = {}
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, version = line.split("==")
                lock[_name(name)] = version
    assert {"rich", "pyserial"} <= {_name(r) for r in declared}
    for text in declared:
        req = Requirement(text)
        assert "==" not in text, "%s: declare a range; the pin belongs in requirements.txt" % text
        name = _name(req.name)
        assert name in lock, "%s is declared but not in requirements.txt" % name
        assert req.specifier.contains(lock[name], prereleases=True), (text, lock[name])
