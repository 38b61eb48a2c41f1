"""The daemon's ops: one function per request kind, each of a
:class:`~deskhand_d.ops.context.RequestContext` and its decoded request.

Below the RPC layer and above the services: an op reads the request's session and client
through its context and calls the native service, the sessions or Jev. :mod:`.table` maps every
request kind to its op.
"""
