"""The daemon's side of a computer-use backend: which program to start and how, the MCP client
that talks to it (:mod:`.mcpclient`), and the checks ``doctor`` and ``backend = "auto"`` run.

The programs themselves run as processes of their own and live in :mod:`deskhand_d.programs`;
the tool surface both sides keep is :mod:`deskhand_d.surface`.
"""

from __future__ import annotations
