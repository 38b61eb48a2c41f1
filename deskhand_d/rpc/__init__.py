"""The client-facing transport: the socket server's accept loop and one loop per connection.

The ops it runs live below it, in :mod:`deskhand_d.ops`; a connection hands each request to
its op through a :class:`~deskhand_d.ops.context.RequestContext`.
"""

from __future__ import annotations
