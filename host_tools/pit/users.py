"""The pit's users: name, role and an argon2id hash of the password.

Without a login the page is the public scoreboard; each staff role sees and
does what host_tools/view/roles.py says. Passwords are hashed with argon2-cffi (argon2id, its
default parameters), a kept library, never by hand. The file holds hashes
only, but it is still written 0600: a hash can be attacked offline.
"""

import json
import os
import tempfile

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from host_tools.exits import ShoeError
from host_tools.view.roles import STAFF as ROLES

MIN_PASSWORD = 12  # what a casino's IT asks of a staff password (NIST SP 800-63B allows 8; we ask more)
_hasher = PasswordHasher()
# Verified against when the name is unknown, so a wrong name costs as long as a wrong password.
_DUMMY = _hasher.hash("not a password of anyone")


class UsersError(ShoeError, ValueError):
    """The users file cannot be used; one line."""


def load(path):
    """{name: {"role", "hash"}}; {} when the file does not exist yet."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UsersError("%s: cannot read: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise UsersError("%s: not a users file (%s)" % (path, e))
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict) or not all(
            isinstance(u, dict) and u.get("role") in ROLES and isinstance(u.get("hash"), str)
            for u in users.values()):
        raise UsersError("%s: not a users file (expected {\"users\": {name: {role, hash}}})" % path)
    return users


def add(path, name, role, password):
    """Add or replace ``name``; the file is rewritten whole, 0600, atomically."""
    if role not in ROLES:
        raise UsersError("role must be one of %s, not %r" % (", ".join(ROLES), role))
    if not name or len(name) > 64 or not name.isprintable() or " " in name:
        raise UsersError("user name %r: use 1-64 printable characters without spaces" % name)
    if len(password) < MIN_PASSWORD:
        raise UsersError("the password must have at least %d characters" % MIN_PASSWORD)
    users = load(path)
    users[name] = {"role": role, "hash": _hasher.hash(password)}
    where = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=where, prefix=".users.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"users": users}, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check(users, name, password):
    """The user's role if the password is right, else None."""
    user = users.get(name) if isinstance(name, str) else None
    try:
        _hasher.verify(user["hash"] if user else _DUMMY, password if isinstance(password, str) else "")
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    return user["role"] if user else None
