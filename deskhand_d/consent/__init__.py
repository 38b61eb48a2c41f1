"""Application consent: who may be operated, decided by the person, enforced at every dispatch.

See ``docs/consent.md`` for the layers and the rules. Pure parts: :mod:`.identity`,
:mod:`.model`; file store: :mod:`.grants`; platform shells: :mod:`.macos`, :mod:`.linux`,
:mod:`.catalog`; the trio shell that asks and enforces: :mod:`.gate`.
"""
