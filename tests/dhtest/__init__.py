"""Shared test support: starting real daemons and talking to them over real sockets."""

from __future__ import annotations
