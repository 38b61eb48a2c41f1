// Deskhand for pi: the desktop-control tools as a thin client of the deskhand-d daemon.
//
// The daemon owns everything that matters for safety (allowlist, consent, the action queue,
// stateIds, handoffs, traces); this extension only carries requests, shows the daemon's
// questions to the person and keeps pi's view (mode, visible tools) in step with the daemon.
// Loading it opens nothing: the connection is made on session_start or the first tool call.
// This module is the entry point: it wires the tools, /cua-mode and pi's lifecycle events to
// the session (session.ts), the tool runner (execute.ts) and the command (command.ts).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { modeCommand } from "./command.ts";
import { ToolExecutor, type ToolResult } from "./execute.ts";
import { DeskhandSession, type DeskhandOptions } from "./session.ts";
import { TOOL_SPECS } from "./tools.ts";

export { defaultSocketPath } from "./socket.ts";
export { TOOL_NAMES, TOOL_SPECS, enabledToolNames } from "./tools.ts";
export { CLIENT_NAME, CLIENT_VERSION, type DeskhandOptions } from "./session.ts";
export { MODE_ENTRY, type Mode } from "./mode.ts";
export type { ToolDetails } from "./execute.ts";

/** Register the tools, /cua-mode and the lifecycle handlers. Opens nothing. */
export function registerDeskhand(pi: ExtensionAPI, options: DeskhandOptions = {}): void {
	const session = new DeskhandSession(pi, options);
	const tools = new ToolExecutor(session);
	for (const spec of TOOL_SPECS) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			parameters: spec.parameters,
			executionMode: "sequential",
			...(spec.promptSnippet ? { promptSnippet: spec.promptSnippet } : {}),
			...(spec.promptGuidelines ? { promptGuidelines: spec.promptGuidelines } : {}),
			annotations: { readOnlyHint: spec.readOnly, destructiveHint: !spec.readOnly },
			execute: (_toolCallId, params, signal, onUpdate, ctx) =>
				tools.execute(
					spec,
					params as Record<string, unknown>,
					signal,
					onUpdate as ((r: ToolResult) => void) | undefined,
					ctx,
				),
		});
	}
	pi.registerCommand("cua-mode", {
		description: "Deskhand desktop control: show the mode, or switch to native or jev",
		getArgumentCompletions: (prefix: string) =>
			(["native", "jev"] as const)
				.filter((m) => m.startsWith(prefix.trim().toLowerCase()))
				.map((m) => ({
					value: m,
					label: m,
					description: m === "native" ? "the agent performs each step" : "hand small goals to Jev",
				})),
		handler: (args, ctx) => modeCommand(session, args, ctx),
	});
	pi.on("session_start", (_event, ctx) => session.sessionStart(ctx));
	pi.on("session_tree", (_event, ctx) => session.sessionTree(ctx));
	pi.on("agent_start", () => session.turn("turn_begin"));
	pi.on("agent_end", () => session.turn("turn_end"));
	pi.on("session_shutdown", () => session.shutdown());
}

export default function deskhand(pi: ExtensionAPI): void {
	registerDeskhand(pi);
}
