"""The traffic record: one JSON line per thing the simulator received or did, for tests to read.

What this owns: appending to the file named by ``DESKHAND_SIM_RECORD`` (nothing happens when it
is unset). Each line is compact, key-sorted JSON with ``event`` (``message``, ``call_start``,
``call_end``, ``elicitation``, ``elicitation_answer``, ``crash``, ``signal``), ``t``
(``time.monotonic()`` seconds, comparable with the test process's own monotonic clock on the
same machine), ``pid``, and, on the first three, ``in_flight`` (tool calls being handled at that
moment, the one starting included). The server core writes those three (this is its
``Record``); the simulator's own parts write the rest. Lines are written and flushed one at a
time so a crash loses nothing already recorded.
"""

from __future__ import annotations

import json
import os
import time
from typing import IO, Any


class Recorder:
    def __init__(self, path: str | None) -> None:
        self._file: IO[str] | None = None
        if path:
            self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self._pid = os.getpid()

    @property
    def enabled(self) -> bool:
        return self._file is not None

    def write(self, event: str, **fields: Any) -> None:
        if self._file is None:
            return
        line = {"event": event, "pid": self._pid, "t": time.monotonic(), **fields}
        self._file.write(
            json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
        )
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
