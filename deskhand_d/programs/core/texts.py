"""The strings Sky itself emits, gathered in one place so every one can be checked against the spec.

What this owns: every byte sequence a backend program sends that a real Sky would send verbatim
(error sentences, the stop notice, the approval prompt, the state banner, JSON-RPC error
messages, AX grammar fragments), for the server core, the simulator and the AT-SPI server alike.
Nothing here is ours to reword; text that is ours (tool descriptions, simulator-only messages)
lives with each backend.
"""

from __future__ import annotations

from typing import Final

# --- identity -------------------------------------------------------------------------------

SERVER_NAME: Final = "Computer Use"
#: ``serverInfo.version`` of the 26.9 builds: a hash of the tool surface, not a semver.
DEFAULT_SERVER_VERSION: Final = "14e7d17f1f59e77ca541a15071e980628cd08977a4dda111c96e0564d337056b"
DEFAULT_CUA_VERSION: Final = "1001103"
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION: Final = "2025-11-25"

# --- JSON-RPC level (Swift SDK wording: "<kind>: <detail>", data {"detail": <detail>}) ----------

PARSE_ERROR: Final = (-32700, "Parse error: Invalid JSON", "Invalid message format")
ALREADY_INITIALIZED: Final = (-32600, "Invalid Request", "Server is already initialized")
EMPTY_BATCH: Final = (-32600, "Invalid Request", "Batch array must not be empty")
METHOD_NOT_FOUND: Final = (-32601, "Method not found", "Unknown method: {method}")
INVALID_PARAMS: Final = (-32602, "Invalid params", "{detail}")

# --- tool-level results (isError: true, one text block) ---------------------------------------


def server_error(code: int, detail: str) -> str:
    """The generic ``Computer Use server error <code>: <detail>`` form."""
    return f"Computer Use server error {code}: {detail}"


UNAUTHENTICATED: Final = server_error(-10000, "Sender process is not authenticated")
NO_WINDOWS: Final = server_error(-10005, "noWindowsAvailable")
CG_WINDOW_NOT_FOUND: Final = server_error(-10005, "cgWindowNotFound")
TIMEOUT_REACHED: Final = server_error(-10005, "timeoutReached")
INVALID_PARAMETER: Final = server_error(-10005, "invalidParameter")

STOP_NOTICE: Final = (
    "This application session has been explicitly stopped by the user for this turn. Stop your "
    "work and send a final message noting they stopped the session and you're ready to continue "
    "if they want you to. Computer Use can be used again in the next assistant turn."
)
TURN_ENDED: Final = (
    "Computer Use is unavailable because the current turn ended. It will work again after the "
    "next user message."
)
PERMISSIONS_PENDING: Final = (
    "Computer Use permissions are still pending. The user has not finished granting "
    "Accessibility and Screen Recording permissions in the ChatGPT Computer Use window. Call this "
    "tool again, as the user is almost done finishing granting permissions. Do not end your turn "
    "yet, just call this tool again."
)
PERMISSIONS_MISSING: Final = "Computer Use permissions are not granted"
SCREEN_LOCKED: Final = (
    "The Mac is locked and automatic unlock could not unlock it. Ask the user to unlock the Mac "
    "manually before continuing."
)
SCREEN_LOCKED_NO_THREAD: Final = (
    "The Mac is locked and this Computer Use request cannot be associated with a ChatGPT thread. "
    "Ask the user to unlock the Mac manually before continuing."
)
VERSION_MISMATCH: Final = (
    "The Computer Use server and client have a version mismatch. To use Computer Use, ask the "
    "user to relaunch their ChatGPT app so that the client will be updated to the latest version."
)
STALE_ELEMENT: Final = (
    "The element ID is no longer valid. Try to get the on-screen content again and see if that "
    "resolves the issue."
)
NOT_SETTABLE: Final = "Cannot set a value for an element that is not settable"
TEXT_NOT_FOUND: Final = "Could not find the requested text to select in the element"
NO_TEXT_SELECTION: Final = (
    "Cannot select text for an element that does not support a settable selected text range"
)
MISSING_SCROLL_DIRECTION: Final = "Missing scroll direction"
MISSING_SCROLL_AMOUNT: Final = "Missing scroll amount"

ACTION_RECEIPT: Final = "Action completed. Call `get_app_state` to fetch the updated UI state."

SELECTED_TEXT_NOTE: Final = (
    "Note: Pay special attention to the content selected by the user. If the user asks a question "
    "or refers to the content they are looking at on-screen, they might be referring to the "
    "selected content (but they might be referring to something else that's visible, too)."
)


def app_not_found(given: str) -> str:
    return f'appNotFound("{given}")'


def forbidden_app(bundle_id: str) -> str:
    return f"Computer Use is not allowed to use the app '{bundle_id}' for safety reasons."


def org_policy_blocked(bundle_id: str) -> str:
    return (
        f"Computer Use is blocked from using the app '{bundle_id}' by your organization's policy."
    )


def running_app_not_found(bundle_id: str) -> str:
    return f"Running application not found: {bundle_id}"


def not_active(app: str) -> str:
    return (
        f"Computer Use is not active for '{app}'. You first must call `get_app_state` to get the "
        "latest state before doing other Computer Use actions. If `get_app_state` is not available "
        "in your environment, use `tool_search` to surface it."
    )


def user_changed(app_path: str) -> str:
    return (
        f"The user changed '{app_path}'. Re-query the latest state with `get_app_state` before "
        "sending more actions."
    )


def approval_denied(bundle_id: str) -> str:
    return f"Computer Use approval denied via MCP elicitation for app '{bundle_id}'."


def approval_canceled(bundle_id: str) -> str:
    return f"Computer Use permission request canceled for app '{bundle_id}'."


def missing_argument(name: str) -> str:
    return f"Missing required argument: {name}"


def invalid_element_id(given: str) -> str:
    return f"{given} is an invalid element ID"


def bad_secondary_action(action: str, element: str) -> str:
    return f"{action} is not a valid secondary action for {element}"


def invalid_scroll_direction(direction: str) -> str:
    return f"Invalid scroll direction: {direction}"


def no_key_code(char: str) -> str:
    return f"Could not find key code for character: {char}"


def unknown_tool(name: str) -> str:
    return f"Unknown tool: {name}"


# --- approval prompt ------------------------------------------------------------------------


def approval_message(host: str, app_name: str) -> str:
    return f"Allow {host} to use {app_name}?"


APPROVAL_META: Final = {"persist": ["always"]}

# --- AX text grammar --------------------------------------------------------------------------


def banner(cua_version: str) -> str:
    return f"Computer Use state (CUA App Version: {cua_version})"


APP_STATE_OPEN: Final = "<app_state>"
APP_STATE_CLOSE: Final = "</app_state>"


def identity_path_form(path: str, bundle_id: str, pid: int) -> str:
    """The v26.9 ``get_app_state`` identity line; the path always ends with ``/``."""
    return f"App={path.rstrip('/')}/ (bundleID {bundle_id}, pid {pid})"


def identity_short_form(bundle_id: str, pid: int) -> str:
    """The identity line of action results (and of v750 ``get_app_state``)."""
    return f"App={bundle_id} (pid {pid})"


def window_line(title: str, app_name: str) -> str:
    return f'Window: "{title}", App: {app_name}.'


FOCUS_PREFIX: Final = "The focused UI element is "


def selected_text_tail(text: str) -> str:
    return f"Selected text: ```\n{text}\n```\n\n{SELECTED_TEXT_NOTE}"


def diff_header(title: str) -> str:
    return (
        f'The following is a diff from the previous accessibility tree for Window: "{title}" with '
        "~ and + representing changed and added elements, respectively. Removed elements are "
        "summarized by ID range."
    )


def cumulative_diff_header(title: str) -> str:
    return (
        "The following is a cumulative diff from the initial accessibility tree for Window: "
        f'"{title}" with ~ and + representing changed and added elements, respectively. Removed '
        "elements are summarized by ID range."
    )


def removed_ids(ranges: str) -> str:
    return f"Removed element IDs: {ranges}"


def no_change(title: str) -> str:
    return f'There has been no change in the accessibility tree for Window: "{title}".'
