"""A revocation takes effect in the running daemon at once, even when it cannot be saved.

grants.json sits on a small tmpfs that is then filled (root only; CI runs as root): `grants
revoke Calculator` still cancels, retires and refuses at once, and says the revocation is in
force but not saved; Calculator stays refused (nobody here can answer the consent question);
once space returns the daemon writes the revocation itself. A revocation during an emergency
stop works too, and never needs the disk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dhtest.clidaemon import cli_daemons
from dhtest.daemon import short_tmpdir
from dhtest.desk import SIM_APPS, save_grants
from dhtest.fulldisk import fill, mount_tmpfs, unmount

pytestmark = pytest.mark.slow
ENV = {"DESKHAND_ALLOWED_APPS": "Calculator,TextEdit"}


@pytest.fixture
def desk() -> Iterator[Any]:
    with cli_daemons() as make:
        yield make


def test_revoke_on_a_full_config_disk_is_in_force_at_once(desk: Any) -> None:
    root = short_tmpdir()
    config = root / "config"
    mount_tmpfs(config, "256k")
    d = None
    try:
        save_grants(config, SIM_APPS)
        d = desk({"preapproved": ["*"]}, grants=(), root=root, **ENV)
        assert d.run("observe", "Calculator").returncode == 0
        grants_file = config / "deskhand" / "grants.json"
        before = grants_file.read_text()
        filler = fill(config)
        revoked = d.run("grants", "revoke", "Calculator")
        assert revoked.returncode == 0, revoked.stderr
        assert "in force now but could not be saved" in revoked.stdout, revoked.stdout
        assert grants_file.read_text() == before  # the disk took nothing...
        error = d.json("observe", "Calculator", code=1)["error"]
        assert error["code"] == "consent_denied", error  # ...and still Calculator is refused
        assert error["data"]["delivery"] == "refused"
        calc = [g for g in d.json("grants", "list")["grants"] if g["app"] == "Calculator"]
        assert calc and all(g["revoked_at"] for g in calc), calc
        assert d.run("observe", "TextEdit").returncode == 0  # others unaffected
        filler.unlink()  # space returns: the daemon saves the revocation itself...
        deadline = time.monotonic() + 10  # ...when an op comes a second after its last try

        def revoked_on_disk() -> list[bool]:
            saved = json.loads(grants_file.read_text())["grants"]
            return [g["revoked_at"] is not None for g in saved if g["app"] == "Calculator"]

        while revoked_on_disk() != [True]:
            assert time.monotonic() < deadline, revoked_on_disk()
            assert d.run("observe", "TextEdit").returncode == 0
        assert revoked_on_disk() == [True]
    finally:
        if d is not None:
            d.close()  # the daemon holds files on the tmpfs
        unmount(config)


def test_revoke_during_an_emergency_stop(desk: Any) -> None:
    d = desk({"preapproved": ["*"]}, **ENV)
    assert d.run("observe", "Calculator").returncode == 0
    assert d.run("stop").returncode == 0
    revoked = d.run("grants", "revoke", "Calculator")
    assert revoked.returncode == 0, revoked.stderr
    assert "could not be saved" not in revoked.stdout
    assert d.at_terminal("unlock").returncode == 0
    assert d.json("observe", "Calculator", code=1)["error"]["code"] == "consent_denied"
