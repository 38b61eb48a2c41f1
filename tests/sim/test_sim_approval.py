"""Approval prompts: elicitation/create shape, waiting, and every answer (spec §8.1, §15 13-16)."""

from __future__ import annotations

from simclient import UUID_UPPER, MakeSim, Sim


def _start_call(sim: Sim, app: str = "Calculator") -> object:
    return sim.request("tools/call", {"name": "get_app_state", "arguments": {"app": app}})


def test_elicitation_shape_and_the_call_waits_while_ping_is_served(sim: Sim) -> None:
    """The prompt has a fresh uppercase UUID string id and Sky's exact params; pings still work."""
    rid = _start_call(sim)
    prompt = sim.elicitation()
    assert isinstance(prompt["id"], str) and UUID_UPPER.match(prompt["id"])
    assert prompt == {
        "id": prompt["id"],
        "jsonrpc": "2.0",
        "method": "elicitation/create",
        "params": {
            "_meta": {"persist": ["always"]},
            "message": "Allow ChatGPT to use Calculator?",
            "requestedSchema": {"properties": {}, "type": "object"},
        },
    }
    for _ in range(3):
        ping = sim.request("ping")
        assert sim.response(ping)["result"] == {}
    assert [m for m in sim.quiet(0.2) if m.get("id") == rid] == []
    sim.reply(prompt["id"], {"action": "accept", "content": {}})
    result = sim.response(rid)["result"]
    assert result["content"][0]["text"].startswith("Computer Use state (CUA App Version: ")
    assert result["_meta"] == {"codex/telemetry": {"span": {"did_trigger_server_user_flow": True}}}


def test_accept_lasts_for_the_process_and_is_per_app(sim: Sim) -> None:
    """After accepting Calculator it is never asked again; TextEdit still needs its own prompt."""
    first = sim.call("get_app_state", {"app": "Calculator"})
    again = sim.call("get_app_state", {"app": "com.apple.calculator"})
    assert again["_meta"]["codex/telemetry"]["span"]["did_trigger_server_user_flow"] is False
    assert first["content"][0]["text"] == again["content"][0]["text"]
    _start_call(sim, "TextEdit")
    assert sim.elicitation()["params"]["message"] == "Allow ChatGPT to use TextEdit?"


def test_decline_cancel_and_error_answers(sim: Sim) -> None:
    """decline -> denial text, cancel -> cancel text, a JSON-RPC error -> denial; all isError."""
    declined = sim.call("get_app_state", {"app": "Calculator"}, approve="decline")
    assert declined["content"] == [
        {
            "text": "Computer Use approval denied via MCP elicitation for app 'com.apple.calculator'.",
            "type": "text",
        }
    ]
    assert declined["isError"] is True
    canceled = sim.call("get_app_state", {"app": "TextEdit"}, approve="cancel")
    assert canceled["content"][0]["text"] == (
        "Computer Use permission request canceled for app 'com.apple.TextEdit'."
    )
    assert canceled["isError"] is True
    rid = _start_call(sim, "Calendar")
    prompt = sim.elicitation()
    sim.send({"jsonrpc": "2.0", "id": prompt["id"], "error": {"code": -32601, "message": "nope"}})
    errored = sim.response(rid)["result"]
    assert errored["content"][0]["text"] == (
        "Computer Use approval denied via MCP elicitation for app 'com.apple.iCal'."
    )
    # A refusal is not remembered: the next call asks again.
    _start_call(sim, "Calculator")
    assert sim.elicitation()["params"]["message"] == "Allow ChatGPT to use Calculator?"


def test_a_numeric_echo_of_the_string_id_does_not_answer_the_prompt(sim: Sim) -> None:
    """Answering with a different id (a client bug) leaves the call pending, as Sky does."""
    rid = _start_call(sim)
    prompt = sim.elicitation()
    sim.reply(12345, {"action": "accept", "content": {}})
    assert [m for m in sim.quiet(0.3) if m.get("id") == rid] == []
    sim.reply(prompt["id"], {"action": "accept", "content": {}})
    assert "result" in sim.response(rid)


def test_list_apps_never_prompts(sim: Sim) -> None:
    """list_apps answers at once, with no elicitation, even for a fresh process."""
    result = sim.call("list_apps", {}, approve="decline")
    assert "Calculator" in result["content"][0]["text"]
    assert result["_meta"]["codex/telemetry"]["span"]["did_trigger_server_user_flow"] is False
    assert [m for m in sim.quiet(0.1) if m.get("method")] == []


def test_preapproved_double_and_host_word(make_sim: MakeSim) -> None:
    """preapproved apps skip the prompt; double_approval asks twice; host changes the message."""
    sim = make_sim({"preapproved": ["calculator"], "double_approval": True, "host": "Codex"})
    ok = sim.call("get_app_state", {"app": "Calculator"})
    assert "isError" not in ok
    rid = _start_call(sim, "TextEdit")
    first = sim.elicitation()
    assert first["params"]["message"] == "Allow Codex to use TextEdit?"
    sim.reply(first["id"], {"action": "accept", "content": {}})
    second = sim.elicitation()
    assert second["id"] != first["id"] and UUID_UPPER.match(second["id"])
    assert [m for m in sim.quiet(0.1) if m.get("id") == rid] == []
    sim.reply(second["id"], {"action": "decline"})
    assert sim.response(rid)["result"]["isError"] is True


def test_form_and_url_elicitation_variants(make_sim: MakeSim) -> None:
    """The form variant asks for a field; the url variant is a URL-mode request."""
    form = make_sim({"elicitation": "form"}, init=False)
    url = make_sim({"elicitation": "url"}, init=False)
    form.initialize(), url.initialize()
    _start_call(form)
    schema = form.elicitation()["params"]["requestedSchema"]
    assert schema["properties"] and schema["required"] == ["reason"]
    _start_call(url)
    params = url.elicitation()["params"]
    assert params["mode"] == "url" and params["url"].startswith("https://")
    assert UUID_UPPER.match(params["elicitationId"])
    assert params["message"] == "Allow ChatGPT to use Calculator?"


def test_concurrent_calls_for_one_app_share_one_prompt(sim: Sim) -> None:
    """Two calls waiting on the same unapproved app see a single prompt and both proceed."""
    a, b = _start_call(sim), _start_call(sim)
    prompt = sim.elicitation()
    sim.reply(prompt["id"], {"action": "accept", "content": {}})
    assert "result" in sim.response(a) and "result" in sim.response(b)
    assert [m for m in sim.quiet(0.1) if m.get("method") == "elicitation/create"] == []
