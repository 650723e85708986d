"""Fixtures several end-to-end modules share; the rigs behind them are in
tests/support."""

import os

import psycopg
import pytest

from host_tools.sim.rigs import servers
from support.fakeshoe import FakeShoe
from support.vmdeal import deal_both


@pytest.fixture
def both():
    """Deal a dealing script under CPython and the MicroPython VM (same
    bytes, schema-valid events); returns the events."""
    return deal_both


@pytest.fixture
def shoe():
    """A fake link v2 shoe on a fresh pty (support/fakeshoe.py)."""
    s = FakeShoe()
    yield s
    s.close()


@pytest.fixture(scope="module")
def pg():
    """A throw-away PostgreSQL cluster, one per module."""
    server = servers.Postgres(fsync=False).start()
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """nats-server from the pinned wheel, one per module."""
    server = servers.Nats(tmp_path_factory.mktemp("nats"), "hub").start()
    yield server
    server.stop()


_n = [0]


def _new_database(pg):
    _n[0] += 1
    name = "t%d_%d" % (os.getpid(), _n[0])
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute("CREATE DATABASE %s" % name)
    return pg.dsn.replace("dbname=casino", "dbname=" + name)


def _new_casino():
    _n[0] += 1
    return "C%d_%d" % (os.getpid(), _n[0])


@pytest.fixture
def dsn(pg):
    """A fresh database per test, so each test's record is only its own."""
    return _new_database(pg)


@pytest.fixture
def casino():
    """A casino name no other test in this run uses (its own NATS subjects)."""
    return _new_casino()


@pytest.fixture(scope="module")
def module_dsn(pg):
    """A fresh database for a module whose tests only read what its
    fixture put there."""
    return _new_database(pg)


@pytest.fixture(scope="module")
def module_casino():
    """A casino name for a module's shared record (as ``casino``)."""
    return _new_casino()


@pytest.fixture(scope="module")
def chromium():
    """Debian's chromium under Playwright, one per test module."""
    from support.browser import launch
    pw, browser = launch()
    try:
        yield browser
    finally:
        browser.close()
        pw.stop()
