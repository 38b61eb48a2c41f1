"""The ``tools/list`` answer: Sky's ten tools, in Sky's order, with descriptions of our own.

What this owns: the tool descriptions (written for Deskhand, not Sky's wording) and assembling
each tool object from :mod:`deskhand_d.surface`, which owns the schemas and
annotations. A tool object carries exactly ``annotations``, ``description``, ``inputSchema`` and
``name``; there is no ``title`` and no ``outputSchema``.
"""

from __future__ import annotations

from typing import Any, Final

from deskhand_d import surface

DESCRIPTIONS: Final = {
    "list_apps": (
        "Show the applications on this Mac that can be controlled, running ones first, "
        "with how recently and how often each was used."
    ),
    "get_app_state": (
        "Open a control session with an app and report its front window: an indexed "
        "accessibility tree plus a screenshot. Needed once per turn before any other action "
        "on that app."
    ),
    "click": (
        "Click a UI element, either by its index in the latest state or at a pixel position "
        "in the latest screenshot."
    ),
    "perform_secondary_action": (
        "Run one of the extra accessibility actions an element lists under Secondary Actions."
    ),
    "set_value": "Replace the value of an element that the tree marks as settable.",
    "select_text": (
        "Select a piece of text inside a text element, or put the caret just before or after "
        "it. Quote the text as the tree shows it; add prefix or suffix text when it occurs "
        "more than once."
    ),
    "scroll": "Scroll inside an element by a number of pages, which may be fractional.",
    "drag": "Press at one screenshot position, move to another, and release.",
    "press_key": (
        "Send one key or key chord to the app, named in xdotool style, for example Return, "
        "Tab, Escape, super+a or KP_7."
    ),
    "type_text": "Type the given text into the app as keystrokes; a newline acts as Return.",
}


def tool_list() -> list[dict[str, Any]]:
    return surface.tool_objects(DESCRIPTIONS)
