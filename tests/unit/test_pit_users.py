"""The pit's users file (host_tools/pit/users.py): its password policy."""

import pytest

from host_tools.pit import users as users_mod


def test_a_short_password_is_refused(tmp_path):
    with pytest.raises(users_mod.UsersError) as e:
        users_mod.add(str(tmp_path / "u.json"), "ann", "supervisor", "elevenchars")
    assert "12 characters" in str(e.value)
