"""Jev mode: a text-decision loop over the accessibility tree, asking TypeSafe's System One API
(model Jev) which element to act on, gated by a deterministic policy.

Pure: :mod:`.types`, :mod:`.ax` (parser, candidates, context), :mod:`.wire` (request body and
answer normalisation), :mod:`.policy`, :mod:`.handoff`, :mod:`.budget`. Shells: :mod:`.client`
(httpx), :mod:`.loop` (the task loop on trio, through the daemon's queue and gates).
"""
