"""The simulator's part of the stdio server: its tools behind the transport-level knobs.

What this owns: :class:`SimTools`, what the simulator plugs into the server core
(:mod:`deskhand_d.programs.core.server`): ``tools/list`` (:mod:`.tools`), ``tools/call``
through the scenario's transport-level knobs (delay, crash, hang, garbage line) to the
:class:`~.engine.Engine`, the client's answers to approval prompts (:mod:`.prompts`), and the
signals that act like the outside world on a Mac (SIGUSR1 ends the turn, SIGUSR2 presses
Stop), watched for as long as the server runs.
"""

from __future__ import annotations

import json
import os
import signal

import trio

from ..core.jsonrpc import JsonObj
from ..core.tools import Client, Outcome, ToolCall
from .engine import Engine
from .prompts import Prompts
from .record import Recorder
from .scenario import Scenario
from .tools import tool_list


class SimTools:
    """The simulated desktop's tools, for the server core's ``StdioServer``."""

    def __init__(self, scenario: Scenario, record: Recorder, client: Client) -> None:
        self.scenario = scenario
        self.engine = Engine(scenario)
        self.record = record
        self._client = client
        self.prompts = Prompts(scenario, record, client)

    @property
    def server_version(self) -> str:
        return self.scenario.server_version

    @property
    def telemetry(self) -> bool:
        return self.scenario.telemetry

    def tool_list(self) -> list[JsonObj]:
        return tool_list()

    def response(self, message: JsonObj) -> None:
        self.prompts.response(message)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGUSR1, signal.SIGUSR2) as signals:
            task_status.started()
            async for signum in signals:
                if signum == signal.SIGUSR1:
                    self.engine.end_turn()
                    self.record.write("signal", name="SIGUSR1", effect="turn_ended")
                else:
                    self.engine.stop()
                    self.record.write("signal", name="SIGUSR2", effect="stop")

    async def call(self, call: ToolCall) -> Outcome:
        sc, name, ordinal = self.scenario, call.name, call.ordinal
        if sc.delay_for(name):
            await trio.sleep(sc.delay_for(name))
        if sc.crash is not None and sc.crash.matches(name, ordinal):
            await self._crash(call.rid)
        if any(h.matches(name, ordinal) for h in sc.hang):
            await trio.sleep_forever()
        outcome = await self.engine.call(
            name, call.arguments, call.meta, ordinal, self.prompts.approve
        )
        outcome.preface = tuple(
            (g.text + "\n").encode() for g in sc.garbage if g.matches(name, ordinal)
        )
        return outcome

    async def _crash(self, rid: object) -> None:
        assert self.scenario.crash is not None
        self.record.write("crash", id=rid, exit_code=self.scenario.crash.exit_code)
        if self.scenario.crash.partial_line:
            partial = b'{"id":' + json.dumps(rid).encode() + b',"jsonrpc":"2.0","res'
            await self._client.send(raw=(partial,))
        os._exit(self.scenario.crash.exit_code)
