"""Jev mode: a text-decision loop over the accessibility tree, asking TypeSafe's System One API
(model Jev) which element to act on, gated by a deterministic policy.

Pure: :mod:`.types`, :mod:`.context` (what Jev is told besides its candidates), :mod:`.wire`
(request body and answer normalisation), :mod:`.policy`, :mod:`.task`. Shells: :mod:`.client`
(httpx), :mod:`.loop` (the task loop on trio, through the daemon's queue and gates). The tree is
read by :mod:`deskhand_d.ax`; the turn's budget and the handoff are session state
(:mod:`deskhand_d.native.turnbudget`, :mod:`deskhand_d.native.handoff`).
"""
