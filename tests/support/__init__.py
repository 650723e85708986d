"""Rigs the tests share: plain modules, never test modules.

A test module imports what it needs from here (``from support.fakeshoe import
FakeShoe``); fixtures used by several modules are registered in a conftest.py
that imports them from here. No test module imports another
(tests/unit/test_suite_imports.py checks it).
"""
