// The /cua-mode command: with no argument it shows the state, with native or jev it records the
// person's choice in the pi session and passes it to the daemon, whose answer has the last word.
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { DaemonClient } from "./daemon.ts";
import { isMode } from "./mode.ts";
import { errorMessage, type DeskhandSession } from "./session.ts";
import { statusPayload } from "./status.ts";

export async function modeCommand(session: DeskhandSession, args: string, ctx: ExtensionCommandContext): Promise<void> {
	session.ui = ctx;
	const arg = args.trim().toLowerCase();
	if (!arg) {
		session.tell(ctx, JSON.stringify(await statusPayload(session, ctx, false)), "info");
		return;
	}
	if (!isMode(arg)) {
		session.tell(ctx, "Usage: /cua-mode native or /cua-mode jev (no argument shows the current state).", "warning");
		return;
	}
	if (session.busy) {
		session.tell(
			ctx,
			"A Deskhand request is still running; let it finish or cancel it before switching modes.",
			"warning",
		);
		return;
	}
	session.setMode(arg, "");
	let client: DaemonClient;
	try {
		client = await session.ensureClient(ctx);
	} catch (e) {
		session.tell(
			ctx,
			`Mode ${arg} is saved for this session; the daemon will get it once it is reachable. ${errorMessage(e)}`,
			"warning",
		);
		return;
	}
	try {
		await session.sendMode(client, ctx);
	} catch (e) {
		session.tell(ctx, `The daemon did not take the mode change: ${errorMessage(e)}`, "error");
		return;
	}
	if (session.mode === arg) {
		session.tell(
			ctx,
			arg === "jev"
				? "Deskhand is in jev mode: jev_cua_run hands small goals to Jev (billed to the daemon's TypeSafe " +
						"key); native actions need a handoff from it. Observe again before acting."
				: "Deskhand is in native mode: the agent performs each step itself with the cua_ tools. Observe " +
						"again before acting.",
			"info",
		);
	}
}
