"""The Linux backend: Sky's computer-use tools over AT-SPI (jeepney) and X11 or the Wayland
compositor, as MCP stdio.

``python -m deskhand_d.programs.atspi`` reads applications' accessibility trees from the AT-SPI
bus with jeepney (libatspi is never loaded: it aborts a process that has no bus), renders them
in Sky's AX text grammar, acts through the Action, EditableText, Value and Text interfaces, and
uses X11 (XTest, screenshots; :mod:`.x11`) or on Wayland the compositor's remote desktop and
screen cast (:mod:`.wlscreen`, :mod:`.remote`, :mod:`.portal`, :mod:`.frames`) for
coordinates, keys and pixels. Module map:
:mod:`.roles` and :mod:`.render` (pure rendering), :mod:`.model`, :mod:`.walk` (reading trees),
:mod:`.bus`, :mod:`.catalog` and :mod:`.apps` (apps and windows), :mod:`.actions`,
:mod:`.engine` (the tools) and :mod:`.server`.
"""

from __future__ import annotations
