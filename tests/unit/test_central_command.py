"""`shoe central` and `shoe verify --central` refuse bad options before anything starts:
a secret on the command line (never echoed), a listener off loopback. The servers
themselves: tests/e2e/test_casino_access.py, test_casino_view.py."""

import os


def test_secrets_on_the_command_line_are_refused_without_echoing_them(tmp_path, capsys):
    from host_tools import cli
    rc = cli.main(["central", "--nats", "nats://127.0.0.1:4222", "--dsn",
                   "host=127.0.0.1 user=x password=hunter2 dbname=casino", "--keys", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "passfile" in err and "hunter2" not in err
    rc = cli.main(["central", "--nats", "tls://admin:hunter2@127.0.0.1:4222", "--dsn",
                   "host=127.0.0.1 dbname=casino", "--keys", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "hunter2" not in err and "seed" in err
    seed = tmp_path / "open.seed"
    seed.write_text("SUAAAA\n")
    os.chmod(seed, 0o644)
    rc = cli.main(["central", "--nats", "tls://127.0.0.1:4222", "--nats-seed", str(seed), "--dsn",
                   "host=127.0.0.1 dbname=casino", "--keys", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "chmod 600" in err and "SUAAAA" not in err
    rc = cli.main(["verify", "--central", "host=127.0.0.1 password=hunter2 dbname=casino",
                   "--key-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "hunter2" not in err


def test_the_consumers_metrics_listen_on_loopback_only(capsys):
    """`shoe central --metrics-port` has no login: a non-loopback address is
    refused before anything starts, as the central view's is."""
    from host_tools import cli
    assert cli.main(["central", "--nats", "tls://127.0.0.1:1", "--dsn", "host=127.0.0.1 dbname=x",
                     "--keys", ".", "--metrics-port", "9999", "--metrics-host", "0.0.0.0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_the_central_view_listens_on_loopback_only(capsys):
    from host_tools import cli
    assert cli.main(["central", "view", "--dsn", "host=127.0.0.1 dbname=x", "--host", "10.1.2.3"]) == 2
    err = capsys.readouterr().err
    assert "loopback" in err and err.count("\n") == 1
