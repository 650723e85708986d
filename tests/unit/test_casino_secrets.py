"""Where the casino path's secrets may come from (host_tools/casino/secrets.py),
and what may be printed about a connection."""

import os
import tomllib

import pytest

from host_tools.casino import secrets, trial


def test_a_dsn_or_url_with_a_password_is_refused_and_labels_show_host_and_database():
    for dsn in ("host=db port=5432 user=w password=hunter2 dbname=casino",
                "host=db PASSWORD = 'x y' dbname=casino",
                "postgresql://w:hunter2@db:5432/casino",
                "postgresql://w@db/casino?password=hunter2"):
        with pytest.raises(secrets.SecretError) as exc:
            secrets.check_dsn(dsn)
        assert "hunter2" not in str(exc.value) and "passfile" in str(exc.value)
    ok = "host=db port=6543 user=w dbname=casino sslmode=verify-full passfile=/etc/shoe/w.pgpass"
    assert secrets.check_dsn(ok) == ok
    assert secrets.dsn_label(ok) == "db:6543/casino"
    assert secrets.dsn_label("postgresql://w@db:7/casino?sslmode=require") == "db:7/casino"
    for url in ("tls://admin:hunter2@hub:4222", "nats://token@hub:4222"):
        with pytest.raises(secrets.SecretError) as exc:
            secrets.check_url(url)
        assert "hunter2" not in str(exc.value)
    assert secrets.url_label("tls://hub:4333") == "tls://hub:4333"


def test_a_seed_file_others_can_read_is_refused_and_the_seed_never_printed(tmp_path):
    seed, public = trial.new_user_seed()
    assert seed.startswith("SU") and public.startswith("U")
    path = tmp_path / "pit.seed"
    secrets.write_secret(str(path), seed)
    assert os.stat(path).st_mode & 0o777 == 0o600
    auth = secrets.NatsAuth.load(str(path), None, env={})
    assert auth.seed == seed and seed not in repr(auth)
    os.chmod(path, 0o640)
    with pytest.raises(secrets.SecretError, match="its group") as exc:
        secrets.NatsAuth.load(str(path), None, env={})
    assert seed not in str(exc.value)
    # from the environment instead; nothing at all is an open broker
    assert secrets.NatsAuth.load(None, None, env={secrets.ENV_SEED: seed}).seed == seed
    assert secrets.NatsAuth.load(None, None, env={}) is None
    with pytest.raises(secrets.SecretError, match="not a user NKEY"):
        secrets.NatsAuth.load(None, None, env={secrets.ENV_SEED: "hunter2"})


def test_the_pits_config_names_its_seed_file_and_ca(tmp_path):
    from host_tools.pit import config
    seed, _ = trial.new_user_seed()
    path = tmp_path / "pit.seed"
    secrets.write_secret(str(path), seed)
    base = tomllib.loads('store = "p.db"\n[[table]]\nname = "T1"\nport = "/dev/null"\nkey_file = "k"\n')
    casino = {"nats": "tls://leaf:4222", "casino": "C1", "pit": "P1", "nats_seed": str(path),
              "nats_ca": "/etc/shoe/ca.pem"}
    cfg = config.parse({**base, "casino": casino})
    assert cfg.casino.auth.seed == seed and cfg.casino.auth.ca_file == "/etc/shoe/ca.pem"
    os.chmod(path, 0o644)
    with pytest.raises(config.PitConfigError, match="chmod 600") as exc:
        config.parse({**base, "casino": casino})
    assert seed not in str(exc.value)
    with pytest.raises(config.PitConfigError, match="credential"):
        config.parse({**base, "casino": dict(casino, nats="tls://pit:hunter2@leaf:4222",
                                             nats_seed=None)})
