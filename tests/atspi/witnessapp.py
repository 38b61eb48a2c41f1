"""The witness app (``tests/peers/witness.py``) as the AT-SPI tests start it and read it: a
GTK 3 window over the screen that records every input event reaching it.

Shared by the modules that check input goes nowhere but the app in use; a test module, never
imported by Deskhand.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from dhtest.desktop import Desktop

ROOT = Path(__file__).resolve().parents[2]
WITNESS = ROOT / "tests" / "peers" / "witness.py"


class Witness:
    """The witness process (covering ``x, y, width, height``) and what it received."""

    def __init__(
        self,
        desk: Desktop,
        name: str = "witness",
        place: tuple[int, int, int, int] = (0, 0, 1280, 900),
    ) -> None:
        self.record = desk.root / f"{name}.jsonl"
        self.proc = desk.spawn(
            ["/usr/bin/python3", str(WITNESS), str(self.record), *(str(v) for v in place)], name
        )
        deadline = time.monotonic() + 30
        while not (self.record.exists() and '"ready"' in self.record.read_text()):
            assert time.monotonic() < deadline, (
                f"the witness never mapped: {desk.log(name).read_text()}"
            )
            time.sleep(0.05)
        ready = json.loads(self.record.read_text().splitlines()[0])
        self.xid: int = ready["xid"]
        self.pid: int = ready["pid"]

    def received(self) -> list[dict[str, Any]]:
        lines = [json.loads(x) for x in self.record.read_text().splitlines() if x]
        return [x for x in lines if x["event"] != "ready"]
