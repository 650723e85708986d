"""Who may do what on the casino's NATS: each role's permissions, stated once.

Least privilege, as docs/casino.md lays out:

- ``admin``: everything; the one credential that creates or deletes streams
  and consumers (`shoe central setup`). It is not on any pit PC.
- ``pit``: publish to its own pit's subjects (``shoe.<casino>.<pit>.>``:
  events, and its alerts and audit rows) and nothing else; subscribe only to
  its own inbox, where JetStream's acknowledgements come back. It can read no
  stream, call no JetStream API, and so delete nothing.
- ``consumer`` (`shoe central`): pull the next messages of its durable
  consumer and acknowledge them (``$JS.API.CONSUMER.MSG.NEXT`` and
  ``$JS.ACK`` of that one consumer of that one stream); subscribe only to its
  inbox. It can publish nothing else: not an event, not an alert.

Each connection's inbox prefix is part of its identity (``inbox``): nats-py
puts its reply subscriptions under it, and the permission allows only it, so
one pit cannot listen to another's acknowledgements.
"""

from host_tools.casino import wire

DURABLE = "central"   # the central consumer's durable name (ingest.DURABLE is this)


def durable(pit=None):
    """The durable consumer `shoe central` pulls: the whole casino's, or
    with ``pit`` that pit's partition (its subjects only). Partitions keep
    each shoe's messages on one consumer (no cross-consumer holds or row
    locks) and let consumers be added pit by pit."""
    return DURABLE if pit is None else "%s-%s" % (DURABLE, pit)


def pit_inbox(casino, pit):
    return "_INBOX_%s_%s" % (casino, pit)


def consumer_inbox(casino):
    return "_INBOX_central_%s" % casino


def source_deliver(casino, pit):
    """The prefix of the subjects on which the pit's leaf delivers its
    stream to the hub's (the sourcing consumer's deliver subject)."""
    return "_SRC_%s_%s" % (casino, pit)


def pit_permissions(casino, pit):
    return {"publish": [wire.pit_subjects(casino, pit)],
            "subscribe": [pit_inbox(casino, pit) + ".>"]}


def consumer_permissions(casino, durables=(DURABLE,)):
    """Pull and ack on each of ``durables`` (the casino's, or its pits'
    partitions: durable()), of the casino's stream, and nothing else."""
    stream = wire.casino_stream(casino)
    allow = []
    for name in durables:
        allow += ["$JS.API.CONSUMER.MSG.NEXT.%s.%s" % (stream, name), "$JS.ACK.%s.%s.>" % (stream, name)]
    return {"publish": allow, "subscribe": [consumer_inbox(casino) + ".>"]}


def leaf_permissions(casino, pit, domain=None):
    """What a pit's leaf link may carry to and from the hub (the hub's
    user for that leaf), exactly what its layout needs and no more:

    - hub capture (no ``domain``): the pit's publishes to its own subjects
      and the PubAcks back to the pit's own inbox;
    - leaf buffer (``domain``): only the hub sourcing the pit's stream: the
      sourcing consumer's create, info and delete on that one stream in the
      pit's domain, its deliveries on the pit's own prefix
      (``source_deliver``), their flow control (named by the pit's stream),
      and the API replies (``$JSC.R``, random per request, sent only to the
      leaf asked). The pit's subjects and inbox do not cross: its
      publisher's stream is on its leaf.

    Not the hub's API, not another pit's subjects, deliveries or domain, not
    ``$JS.ACK`` (acking for the central consumer would lose events), not the
    generic ``_INBOX.>`` or ``$JS.S.>`` (another pit's deliveries would be
    forgeable). Found by trying (tests/e2e/test_casino_access.py holds the
    insider's tests); the same list serves both directions."""
    if not domain:
        allow = [wire.pit_subjects(casino, pit), pit_inbox(casino, pit) + ".>"]
    else:
        stream = wire.pit_stream(casino, pit)
        api = "$JS.%s.API." % domain
        allow = [api + "CONSUMER.CREATE." + stream, api + "CONSUMER.CREATE.%s.>" % stream,
                 api + "CONSUMER.INFO.%s.>" % stream, api + "CONSUMER.DELETE.%s.>" % stream,
                 api + "STREAM.INFO." + stream,
                 source_deliver(casino, pit) + ".>",
                 "$JS.FC.%s.>" % stream, "$JS.FC.%s.*.%s.>" % (domain, stream),
                 "$JSC.R.>"]
    return {"publish": allow, "subscribe": allow}


def _quote(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def user_block(nkey, permissions=None):
    """One entry of a nats-server ``users`` list: an NKEY user (its public
    key: no secret in the server's configuration) with allow-lists, or with
    no permissions block (admin)."""
    if permissions is None:
        return "{ nkey: %s }" % _quote(nkey)
    return "{ nkey: %s, permissions: { publish: { allow: [%s] }, subscribe: { allow: [%s] } } }" % (
        _quote(nkey), ", ".join(map(_quote, permissions["publish"])),
        ", ".join(map(_quote, permissions["subscribe"])))


def authorization_block(users):
    """``authorization { users = [...] }`` from (nkey, permissions or None) pairs."""
    return "authorization {\n  users = [\n    %s\n  ]\n}" % "\n    ".join(
        user_block(k, p) for k, p in users)


def tls_block(cert_file, key_file, ca_file=None, timeout=2):
    items = ["cert_file: %s" % _quote(cert_file), "key_file: %s" % _quote(key_file),
             "timeout: %s" % timeout]
    if ca_file:
        items.append("ca_file: %s" % _quote(ca_file))
    return "tls { %s }" % ", ".join(items)
