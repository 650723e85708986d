"""Certificates and credentials for a trial: the demo, the test rig, the
soak and the bench. A casino uses its own (docs/casino.md says where each
goes); nothing here is needed in production.

One directory, 0700, holding:

- ``ca.pem``: a throw-away certificate authority (its private key is never
  written: nothing more is signed with it once the directory is made);
- ``server.pem`` / ``server-key.pem``: one certificate for 127.0.0.1 and
  localhost, used by every nats-server (client and leaf-node ports) and by
  PostgreSQL;
- ``<name>.seed``: a user NKEY seed per NATS identity (``admin``,
  ``central``, ``pit-<P>``, ``leaf-<P>``), 0600; ``nkeys`` holds the
  public keys that the servers' configurations name;
- ``pg-<role>.pass``: a PostgreSQL password per role, 0600, and
  ``pg-<role>.pgpass``: the same in libpq's passfile format.
"""

import datetime
import ipaddress
import os
import secrets as _random

from host_tools.casino import secrets
from host_tools.protocol import keys as keys_mod

PG_ADMIN = "shoe"            # the cluster's superuser (initdb -U)
PG_WRITER = "shoe_central"   # `shoe central`: writes the record
PG_READER = "shoe_view"      # the central view and `shoe verify --central`: reads it
CERT_DAYS = 30


def new_user_seed():
    """(seed, public key) of a fresh user NKEY (Ed25519 from os.urandom)."""
    import nkeys
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    kp = nkeys.from_seed(bytearray(seed))
    public = kp.public_key.decode()
    kp.wipe()
    return seed.decode(), public


def _certificates(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=CERT_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "shoe trial CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    with open(os.path.join(directory, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(pem))
    with open(os.path.join(directory, "server.pem"), "wb") as f:
        f.write(cert.public_bytes(pem))
    secrets.write_secret(os.path.join(directory, "server-key.pem"), key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())


class Trial:
    """The files of one trial directory (made by ``make``)."""

    def __init__(self, directory, casino, pits):
        self.dir = os.path.abspath(directory)
        self.casino = casino
        self.pits = list(pits)
        self.ca = os.path.join(self.dir, "ca.pem")
        self.cert = os.path.join(self.dir, "server.pem")
        self.key = os.path.join(self.dir, "server-key.pem")
        self.nkeys = {}

    def seed_file(self, name):
        return os.path.join(self.dir, name + ".seed")

    def pg_password_file(self, role):
        return os.path.join(self.dir, "pg-%s.pass" % role)

    def pg_passfile(self, role):
        return os.path.join(self.dir, "pg-%s.pgpass" % role)

    def pg_password(self, role):
        return secrets.read_secret(self.pg_password_file(role), "PostgreSQL password")

    def names(self):
        return ["admin", "central"] + ["pit-" + p for p in self.pits] + [
            "leaf-" + p for p in self.pits]

    def secret_texts(self):
        """Every secret of the trial (the tests look for each in argv and output)."""
        out = [secrets.read_secret(self.seed_file(n), "NATS seed") for n in self.names()]
        out += [self.pg_password(r) for r in (PG_ADMIN, PG_WRITER, PG_READER)]
        with open(self.key) as f:
            out.append(f.read().strip().splitlines()[1])
        return out

    def load(self):
        with open(os.path.join(self.dir, "nkeys")) as f:
            self.nkeys = dict(line.split() for line in f if line.strip())
        return self


def make(directory, casino, pits):
    """Make (or reuse) a trial directory for ``casino`` with ``pits``."""
    t = Trial(directory, casino, pits)
    keys_mod.private_dir(t.dir)
    if not os.path.exists(t.cert):
        _certificates(t.dir)
    names = dict(t.load().nkeys) if os.path.exists(os.path.join(t.dir, "nkeys")) else {}
    for name in t.names():
        if name not in names:
            seed, public = new_user_seed()
            secrets.write_secret(t.seed_file(name), seed)
            names[name] = public
    with open(os.path.join(t.dir, "nkeys"), "w") as f:
        f.write("".join("%s %s\n" % kv for kv in sorted(names.items())))
    t.nkeys = names
    for role in (PG_ADMIN, PG_WRITER, PG_READER):
        if not os.path.exists(t.pg_password_file(role)):
            secrets.write_secret(t.pg_password_file(role), _random.token_urlsafe(24))
    return t


def write_passfile(trial, role, host, port, dbname="*"):
    """libpq's passfile (host:port:db:user:password, 0600) for ``role``."""
    path = trial.pg_passfile(role)
    secrets.write_secret(path, "%s:%d:%s:%s:%s" % (host, port, dbname, role,
                                                   trial.pg_password(role)))
    return path
