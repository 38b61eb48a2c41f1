"""``python -m deskhand_d.schema``: write docs/protocol.schema.json from the protocol Structs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from deskhand_d.protocol import schema


def render() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path("docs/protocol.schema.json")
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
