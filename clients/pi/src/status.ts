// The state report behind cua_status, jev_cua_status and a bare /cua-mode: this session's mode
// and handoff as the extension holds them, plus what the daemon says about itself (asked live,
// so an unreachable daemon shows up as such with the hint for starting it).
import type { DaemonClient } from "./daemon.ts";
import { CLIENT_NAME, errorMessage, type AnyCtx, type DeskhandSession } from "./session.ts";
import { NotYourDaemonError } from "./trust.ts";

export async function statusPayload(
	session: DeskhandSession,
	ctx: AnyCtx,
	jevFocus: boolean,
): Promise<Record<string, unknown>> {
	const handoff = session.handoff;
	const payload: Record<string, unknown> = {
		client: CLIENT_NAME,
		mode: session.mode,
		modeReason: session.modeReason || null,
		modeSource: session.modeChosen ? "session" : "daemon default",
		socket: session.socketPath(),
		busy: session.busy,
		handoff: handoff ? { app: handoff.app, goal: handoff.goal, remainingSteps: handoff.remainingSteps } : null,
	};
	if (jevFocus) {
		payload.jevRunAvailable = session.mode === "jev";
		payload.nativeActionsAvailable = session.mode !== "jev" || (handoff?.remainingSteps ?? 0) > 0;
	}
	let client: DaemonClient;
	try {
		// While a request is running, its connection answers; otherwise connect (or reconnect).
		const live = session.liveClient;
		client = session.busy && live ? live : await session.ensureClient(ctx);
	} catch (e) {
		payload.daemon =
			e instanceof NotYourDaemonError
				? { running: false, refused: e.code, hint: errorMessage(e) }
				: { running: false, hint: errorMessage(e) };
		return payload;
	}
	try {
		const [st, modeState, apps] = await Promise.all([
			client.request("status", {}),
			client.request("mode_get", {}),
			client.request("apps_list", {}),
		]);
		if (st.kind === "status") {
			const daemon: Record<string, unknown> = {
				running: true,
				version: st.version,
				pid: st.pid,
				backend: st.backend?.kind ?? null,
				lockedBy: st.locked_by || null,
				queueDepth: st.queue_depth ?? 0,
			};
			// Said in words, not only as a flag: a model must not take made-up apps for real ones.
			if (st.backend?.simulated) {
				daemon.desktop = "simulated desktop: made-up apps and windows, not the person's real desktop";
			}
			payload.daemon = daemon;
		}
		if (modeState.kind === "mode") {
			payload.daemonMode = modeState.mode;
			if (modeState.reason) payload.daemonModeReason = modeState.reason;
		}
		if (apps.kind === "allowed_apps") payload.allowedApps = apps.apps;
	} catch (e) {
		payload.daemon = { running: false, hint: errorMessage(e) };
	}
	return payload;
}
