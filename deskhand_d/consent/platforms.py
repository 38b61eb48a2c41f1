"""Which identity platform the daemon uses (see ``consent.platform`` in the configuration)."""

from __future__ import annotations

import sys

from deskhand_d.config import Config
from deskhand_d.consent.identity import IdentityPlatform


def for_config(cfg: Config, backend_kind: str, platform: str = sys.platform) -> IdentityPlatform:
    choice = cfg.consent.platform
    if choice == "auto":
        if backend_kind == "sim" or cfg.consent.catalog:
            choice = "catalog"
        else:
            choice = "macos" if platform == "darwin" else "linux"
    if choice == "catalog":
        from deskhand_d.consent.catalog import CatalogPlatform

        return CatalogPlatform(cfg.consent.catalog or None)
    if choice == "macos":
        from deskhand_d.consent.macos import MacPlatform

        return MacPlatform()
    from deskhand_d.consent.linux import LinuxPlatform

    return LinuxPlatform()
