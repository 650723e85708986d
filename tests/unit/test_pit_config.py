"""pit.toml as host_tools/pit/config.py reads it: the shipped example loads, and a
bad value is one line naming it."""

import pathlib
import tomllib

import pytest

from host_tools.pit import config as config_mod

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_display_language_is_checked_in_pit_toml(tmp_path):
    from host_tools.pit import config
    toml = tmp_path / "pit.toml"
    toml.write_text('store = "pit.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\nkey_file = "k"\nlanguage = "fr"\n')
    with pytest.raises(config.PitConfigError) as e:
        config.load(str(toml))
    assert "table[0].language" in str(e.value) and "en, zh, both" in str(e.value)


def test_plain_http_is_refused_for_a_lan_address_in_one_line(tmp_path):
    (tmp_path / "pit.toml").write_text('store = "p.db"\n[web]\nhost = "10.1.2.3"\n'
                                       '[[table]]\nname = "T1"\nport = "/dev/x"\nkey_file = "k"\n')
    with pytest.raises(config_mod.PitConfigError) as e:
        config_mod.load(str(tmp_path / "pit.toml"))
    assert "web.host" in str(e.value) and "HTTPS" in str(e.value)


def test_the_example_pit_toml_is_a_valid_config():
    from host_tools.pit import config
    cfg = config.load(str(ROOT / "deploy" / "pit.example.toml"))
    assert [t.name for t in cfg.tables] == ["T1"] and cfg.cert.endswith("tls/pit.crt")


def test_pit_config_casino_section(tmp_path):
    from host_tools.pit import config
    base = 'store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\nkey_file = "k"\n'
    cfg = config.parse({**tomllib.loads(base), "casino": {"nats": "nats://127.0.0.1:4222", "casino": "C1",
                                                 "pit": "P1"}})
    assert (cfg.casino.casino, cfg.casino.pit, cfg.casino.domain) == ("C1", "P1", None)
    assert config.parse(tomllib.loads(base)).casino is None
    with pytest.raises(config.PitConfigError, match=r"casino.pit: 'a.b'"):
        config.parse({**tomllib.loads(base), "casino": {"nats": "nats://x:1", "casino": "C1", "pit": "a.b"}})
    with pytest.raises(config.PitConfigError, match="casino.nats: .*not a nats"):
        config.parse({**tomllib.loads(base), "casino": {"nats": "http://x", "casino": "C1", "pit": "P"}})
