"""Consumers partitioned by pit: what the consumer's credential may do with
them, what each partition pulls, and the command line's refusals."""

import pytest

from host_tools.casino import access, wire
from host_tools.central import command, consumer


def test_the_consumers_credential_pulls_and_acks_only_the_named_durables():
    perms = access.consumer_permissions("C1", [access.durable("P1"), access.durable("P2")])
    assert perms["publish"] == [
        "$JS.API.CONSUMER.MSG.NEXT.SHOE_C1.central-P1", "$JS.ACK.SHOE_C1.central-P1.>",
        "$JS.API.CONSUMER.MSG.NEXT.SHOE_C1.central-P2", "$JS.ACK.SHOE_C1.central-P2.>"]
    # no event subject, no stream or consumer API beyond the pull, no other inbox
    assert not any(p.startswith("shoe.") or ".CREATE." in p or ".DELETE." in p for p in perms["publish"])
    assert perms["subscribe"] == [access.consumer_inbox("C1") + ".>"]
    # unpartitioned: the casino's durable, as before
    assert access.consumer_permissions("C1")["publish"] == [
        "$JS.API.CONSUMER.MSG.NEXT.SHOE_C1.central", "$JS.ACK.SHOE_C1.central.>"]


def test_a_partition_filters_its_pits_subjects_and_the_casinos_consumer_takes_all():
    part = consumer.consumer_config("C1", "P2")
    assert part.durable_name == "central-P2"
    assert part.filter_subject == wire.pit_subjects("C1", "P2") == "shoe.C1.P2.>"
    whole = consumer.consumer_config("C1")
    assert whole.durable_name == access.DURABLE and whole.filter_subject is None


@pytest.mark.parametrize("items, most, why", [
    (["P1", "P2"], 1, "one --partition per"),
    (["P1", "P1"], None, "twice"),
    (["P 1"], None, "letters, digits"),
    (["P1.>"], None, "letters, digits"),
])
def test_bad_partitions_are_refused_in_one_line(items, most, why):
    with pytest.raises(ValueError) as exc:
        command._partitions(items, most)
    assert why in str(exc.value)


def test_a_partitioned_run_with_two_pits_is_refused_before_connecting(capsys, tmp_path):
    from host_tools import cli
    keys = tmp_path / "keys"
    keys.mkdir()
    rc = cli.main(["central", "--nats", "nats://127.0.0.1:1", "--dsn", "host=/nowhere dbname=x",
                   "--keys", str(keys), "--partition", "P1", "--partition", "P2"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "one --partition per" in err and len(err.strip().splitlines()) == 1
