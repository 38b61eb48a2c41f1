// One pi session's view of Deskhand: the daemon connection (opened on session_start or the
// first tool call, reopened once after a restart), the mode and its persistence, the open
// planner handoff, and the pi lifecycle events that change any of these.
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { DaemonClient } from "./daemon.ts";
import { isMode, MODE_ENTRY, nextActiveTools, recordedMode, type Mode } from "./mode.ts";
import { defaultSocketPath } from "./socket.ts";
import { NotYourDaemonError } from "./trust.ts";

export const CLIENT_NAME = "deskhand-pi";
export const CLIENT_VERSION = "0.1.0";
const STATUS_KEY = "deskhand";
/** How long session_start waits for the daemon before letting pi go on. */
const SESSION_START_WAIT_MS = 2000;

export type AnyCtx = ExtensionContext | ExtensionCommandContext;

/** A Jev run handed steps back: native actions in its app may use the token until it is spent. */
export interface Handoff {
	token: string;
	app: string;
	goal: string;
	remainingSteps: number;
}

export interface DeskhandOptions {
	/** Where the daemon listens; by default the daemon's own lookup (see socket.ts). */
	socketPath?: () => string;
}

export function errorMessage(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

export class DeskhandSession {
	readonly socketPath: () => string;
	/** Set while a tool request is with the daemon: one desktop request at a time. */
	busy = false;
	/** The latest context pi gave us, for status lines and notices. */
	ui: AnyCtx | undefined;
	private readonly pi: ExtensionAPI;
	private client: DaemonClient | undefined;
	private connecting: Promise<DaemonClient> | undefined;
	private currentMode: Mode = "native";
	private currentReason = "";
	/** Whether the mode came from this session's entries (else the daemon's default decides). */
	private chosen = false;
	private openHandoff: Handoff | undefined;
	private turnOp: Promise<void> = Promise.resolve();
	private bound = false;
	private shutDown = false;
	/** Bumped whenever the connection is dropped on purpose: a connect begun before is stale. */
	private generation = 0;
	/** The daemon's mode for new sessions (from the first welcome): the mode without a choice. */
	private daemonDefault: Mode | undefined;

	constructor(pi: ExtensionAPI, options: DeskhandOptions) {
		this.pi = pi;
		this.socketPath = options.socketPath ?? (() => defaultSocketPath());
	}

	get mode(): Mode {
		return this.currentMode;
	}
	get modeReason(): string {
		return this.currentReason;
	}
	get modeChosen(): boolean {
		return this.chosen;
	}
	get handoff(): Readonly<Handoff> | undefined {
		return this.openHandoff;
	}
	/** The connection, when one is open right now. */
	get liveClient(): DaemonClient | undefined {
		return this.client?.isOpen ? this.client : undefined;
	}
	/** Settles once the turn_begin / turn_end sent so far have been answered. */
	get turnSettled(): Promise<void> {
		return this.turnOp;
	}

	// ----- lifecycle -------------------------------------------------------------------------

	async sessionStart(ctx: ExtensionContext): Promise<void> {
		this.dispose();
		this.shutDown = false;
		this.bound = true;
		this.ui = ctx;
		this.openHandoff = undefined;
		this.restoreMode(ctx);
		this.refreshTools();
		// Connect now, so the daemon's mode is known before the first prompt; but a daemon that
		// is slow to answer must not hold up pi's start for long: the attempt then carries on in
		// the background and the first tool call waits for it.
		const attempt = this.ensureClient(ctx).then(
			() => undefined,
			(e: unknown) => {
				if (!ctx.hasUI) return;
				const text =
					e instanceof NotYourDaemonError ? `Deskhand: refused the socket (${e.code})` : "Deskhand: daemon not running";
				ctx.ui.setStatus(STATUS_KEY, text);
			},
		);
		let timer: ReturnType<typeof setTimeout> | undefined;
		const patience = new Promise<void>((resolve) => {
			timer = setTimeout(resolve, SESSION_START_WAIT_MS);
			timer.unref?.();
		});
		await Promise.race([attempt, patience]);
		clearTimeout(timer);
	}

	sessionTree(ctx: ExtensionContext): void {
		const before = this.currentMode;
		this.restoreMode(ctx);
		this.openHandoff = undefined;
		this.refreshTools();
		if (before !== this.currentMode && this.client?.isOpen) {
			this.sendMode(this.client, ctx).catch(() => {});
		}
	}

	/** agent_start / agent_end: the daemon's turn follows pi's agent runs. */
	turn(op: "turn_begin" | "turn_end"): Promise<void> {
		this.openHandoff = undefined;
		this.refreshTools();
		// Only a live (or opening) connection has a daemon session whose turn could change; a
		// connection opened later starts in a fresh turn anyway.
		const ready: Promise<DaemonClient | undefined> | undefined = this.client?.isOpen
			? Promise.resolve(this.client)
			: this.connecting?.catch(() => undefined);
		if (!ready) return this.turnOp;
		const sent = this.turnOp.then(async () => {
			const client = await ready;
			if (client?.isOpen) await client.request(op, {}).catch(() => undefined);
		});
		this.turnOp = sent;
		return sent;
	}

	shutdown(): void {
		this.shutDown = true;
		this.dispose();
	}

	private dispose(): void {
		this.generation++;
		const c = this.client;
		this.client = undefined;
		this.connecting = undefined;
		this.openHandoff = undefined;
		this.busy = false;
		c?.close();
	}

	// ----- mode --------------------------------------------------------------------------------

	private restoreMode(ctx: AnyCtx): void {
		let branch: unknown[] = [];
		try {
			branch = ctx.sessionManager.getBranch() as unknown[];
		} catch {
			branch = [];
		}
		const recorded = recordedMode(branch);
		this.currentMode = recorded?.mode ?? this.daemonDefault ?? "native";
		this.currentReason = recorded?.reason ?? "";
		this.chosen = recorded !== undefined;
	}

	/** Tell the daemon this session's mode; follow its answer when it cannot comply. */
	async sendMode(client: DaemonClient, ctx: AnyCtx): Promise<void> {
		const wanted = this.currentMode;
		const r = await client.request("mode_set", { mode: wanted });
		if (r.kind !== "mode") return;
		if (r.mode !== wanted && isMode(r.mode)) {
			this.setMode(r.mode, r.reason ?? "");
			this.tell(
				ctx,
				r.reason === "missing_jev_key"
					? `Deskhand stays in native mode: the daemon has no TypeSafe key for Jev. ${r.detail ?? ""}`.trim()
					: `The Deskhand daemon kept this session in ${r.mode} mode (${r.reason || "no reason given"}).` +
							(r.detail ? ` ${r.detail}` : ""),
				"warning",
			);
		}
	}

	/** Record a mode in the pi session (so it survives reloads) and show its tools. */
	setMode(mode: Mode, reason: string): void {
		this.currentMode = mode;
		this.currentReason = reason;
		this.chosen = true;
		this.openHandoff = undefined;
		this.pi.appendEntry(MODE_ENTRY, reason ? { mode, reason } : { mode });
		this.refreshTools();
	}

	/** Bring pi's active tools and status line in step with the mode and handoff. */
	refreshTools(): void {
		if (!this.bound) return;
		let active: string[];
		try {
			active = this.pi.getActiveTools();
		} catch {
			return; // not bound yet
		}
		const next = nextActiveTools(active, this.currentMode, (this.openHandoff?.remainingSteps ?? 0) > 0);
		if (next) this.pi.setActiveTools(next);
		const ctx = this.ui;
		if (ctx?.hasUI) {
			ctx.ui.setStatus(STATUS_KEY, `Deskhand: ${this.currentMode}${this.openHandoff ? " (handoff)" : ""}`);
		}
	}

	// ----- handoff -----------------------------------------------------------------------------

	startHandoff(handoff: Handoff): void {
		this.openHandoff = handoff;
		this.refreshTools();
	}

	endHandoff(): void {
		this.openHandoff = undefined;
		this.refreshTools();
	}

	/** The daemon said how many native steps the open handoff has left (it alone counts them). */
	setHandoffSteps(left: number): void {
		const h = this.openHandoff;
		if (!h) return;
		h.remainingSteps = Math.max(0, left);
		if (h.remainingSteps === 0) this.openHandoff = undefined;
		this.refreshTools();
	}

	// ----- connection --------------------------------------------------------------------------

	ensureClient(ctx: AnyCtx): Promise<DaemonClient> {
		if (this.client?.isOpen) return Promise.resolve(this.client);
		if (this.shutDown) return Promise.reject(new Error("this pi session has ended"));
		if (!this.connecting) {
			// One connection attempt per call: after the daemon restarts, the next request
			// reconnects once; if that fails the caller gets the how-to-start message.
			const attempt = this.connect(ctx);
			this.connecting = attempt;
			const settle = () => {
				if (this.connecting === attempt) this.connecting = undefined;
			};
			attempt.then(settle, settle);
		}
		return this.connecting;
	}

	private async connect(ctx: AnyCtx): Promise<DaemonClient> {
		const generation = this.generation;
		const previous = this.client;
		this.client = undefined;
		previous?.close();
		const client = new DaemonClient({
			socketPath: this.socketPath(),
			clientName: CLIENT_NAME,
			clientVersion: CLIENT_VERSION,
			// Without a UI nobody can answer the daemon's questions: say so, and it cancels them.
			canAnswerQuestions: ctx.hasUI,
			onNotice: (_code, message) => {
				const ui = this.ui;
				if (ui?.hasUI) ui.ui.notify(`Deskhand: ${message}`, "info");
			},
			onClose: (c) => this.onClientClosed(c),
		});
		let welcome;
		try {
			welcome = await client.connect();
		} catch (e) {
			client.close();
			throw e;
		}
		if (this.shutDown || generation !== this.generation) {
			client.close();
			throw new Error("this pi session has ended");
		}
		this.client = client;
		this.daemonDefault ??= isMode(welcome.mode) ? welcome.mode : "native";
		if (!this.chosen) {
			// Nothing chosen in this session: the daemon's default for new sessions applies.
			this.currentMode = isMode(welcome.mode) ? welcome.mode : "native";
			this.refreshTools();
		} else if (welcome.mode !== this.currentMode) {
			try {
				await this.sendMode(client, ctx);
			} catch (e) {
				this.tell(ctx, `The daemon did not take this session's mode (${this.currentMode}): ${errorMessage(e)}`, "warning");
			}
		}
		if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, `Deskhand: ${this.currentMode}`);
		return client;
	}

	private onClientClosed(c: DaemonClient): void {
		if (this.client !== c) return;
		this.client = undefined;
		// A daemon restart forgets stateIds and handoffs; so do we.
		if (this.openHandoff) this.endHandoff();
	}

	tell(ctx: AnyCtx, message: string, level: "info" | "warning" | "error"): void {
		if (ctx.hasUI) ctx.ui.notify(message, level);
	}
}
