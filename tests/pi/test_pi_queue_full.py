"""The pi extension waits its turn when the daemon's action queue is full.

Four other clients keep the one-deep queue busy with slow key presses while the scripted model
works out 6 + 7: the daemon refuses the extension's clicks with ``queue_full`` and a
``retry_after_ms`` now and then (nothing spent, nothing sent), the extension waits that long
and asks again, and every step still lands.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

from dhtest.daemon import daemon_env
from dhtest.desk import SIM_APPS, save_grants


def test_clicks_wait_for_room_instead_of_failing(pi_desk: Any, tmp_path: Any) -> None:
    save_grants(tmp_path, SIM_APPS)  # grants.json lives beside the config file
    config = tmp_path / "deskhand" / "config.toml"
    config.write_text("[native]\nqueue_depth = 1\n")
    desk = pi_desk(
        {"preapproved": ["*"], "delay_ms": {"press_key": 300}},
        DESKHAND_CONFIG=str(config),
        DESKHAND_ALLOWED_APPS="Calculator,TextEdit",
    )
    env = {**daemon_env(desk.root), "DESKHAND_NO_AUTOSTART": "1"}
    base = [sys.executable, "-m", "deskhandctl", "--socket", str(desk.socket)]
    done = threading.Event()

    def keep_busy(name: str) -> None:
        while not done.is_set():
            out = subprocess.run([*base, "--session", name, "--json", "observe", "TextEdit"],
                                 env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
            if out.returncode != 0:
                continue
            state = json.loads(out.stdout)["state_id"]
            subprocess.run([*base, "--session", name, "press", "--app", "TextEdit", "--state",
                            state, "a"], env=env, capture_output=True, timeout=60)  # fmt: skip

    workers = [threading.Thread(target=keep_busy, args=(f"busy{i}",)) for i in range(4)]
    for w in workers:
        w.start()
    time.sleep(1.0)
    try:
        out = desk.run("calc")
    finally:
        done.set()
        for w in workers:
            w.join(60)
    results = out["results"]
    assert [r["isError"] for r in results] == [False] * 6, [r["text"][:300] for r in results]
    click = desk.status()["ops"]["click"]
    # the extension's clicks were refused for a full queue at least once, and then landed
    assert click["errors"] >= 1 and click["count"] - click["errors"] == 4, click
