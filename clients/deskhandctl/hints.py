"""The longer help texts that usage errors of ``apps``, ``grants`` and ``run`` add."""

from __future__ import annotations

APPS_HINT = (
    "deskhandctl apps lists the allowlist ('apps list') or adds exactly one app to it "
    "('apps add NAME', one app per command). It never removes or replaces apps: to do that, "
    "edit the file that 'deskhandctl apps list' names."
)

RUN_HINT = (
    "deskhandctl run asks Jev (in a session in jev mode) to do one small goal in one app, step "
    "by step: it executes unless you give --dry-run. Done means verified only with "
    "--verify-role and --verify-label. --text, --key and --direction are what Jev may use for "
    "typing, a key press or scrolling; it never invents them."
)

GRANTS_HINT = (
    "deskhandctl grants shows the apps you have always allowed ('grants list'), withdraws that "
    "('grants revoke APP': any work in progress is cancelled and the backend restarts) or gives "
    "it back ('grants restore APP'). New grants come only from answering a consent question."
)
