// A small client for deskhand-d: one WebSocket (subprotocol deskhand.v1.json) on the daemon's
// Unix socket, requests matched to replies by id, questions and progress routed to the request
// they belong to. Nothing here retries a request: a reply that never came means the outcome is
// unknown, and only the caller (or the person) can decide what happens next.
import { connect as netConnect, type createConnection, type Socket } from "node:net";
import WebSocket from "ws";
import type {
	ClientToDaemon,
	ClientToDaemonOp,
	DaemonToClient,
	ErrorBody,
	Progress,
	Question,
	Result,
	Welcome,
} from "./protocol.gen.ts";
import { checkBeforeConnect, confirmAfterConnect, NoSocketError } from "./trust.ts";

export const SUBPROTOCOL = "deskhand.v1.json";
export const PROTOCOL_VERSION = 1;
const HANDSHAKE_TIMEOUT_MS = 10_000;
/** How long to wait for the daemon's reply after asking it to cancel a request. */
const CANCEL_GRACE_MS = 3_000;

export type ResultBody = Result["result"];
export type Delivery = "dispatched" | "refused" | "partial" | "unknown";
/** The fields of one op's request, without `op` and `id` (the client adds those). */
export type OpFields<K extends ClientToDaemonOp> = Omit<Extract<ClientToDaemon, { op: K }>, "op" | "id">;

/** Nothing listens on the socket (or it is not the daemon): says how to start it. */
export class DaemonUnavailableError extends Error {
	readonly socketPath: string;
	constructor(socketPath: string, cause: string) {
		super(
			`The Deskhand daemon is not reachable at ${socketPath} (${cause}). Start it with ` +
				"`deskhandctl status` (which starts the daemon when it is not running) or by running " +
				"`deskhand-d`, then try again. The socket comes from DESKHAND_SOCKET, else " +
				"$XDG_RUNTIME_DIR/deskhand/deskhand.sock.",
		);
		this.name = "DaemonUnavailableError";
		this.socketPath = socketPath;
	}
}

/** The daemon answered a request with an error. `delivery` says whether anything reached the app. */
export class DaemonRequestError extends Error {
	readonly code: string;
	readonly data: Record<string, unknown>;
	readonly op: string;
	constructor(op: string, body: ErrorBody) {
		super(body.message);
		this.name = "DaemonRequestError";
		this.op = op;
		this.code = body.code;
		this.data = body.data ?? {};
	}
	get delivery(): Delivery | undefined {
		const d = this.data.delivery;
		return d === "dispatched" || d === "refused" || d === "partial" || d === "unknown" ? d : undefined;
	}
}

export interface RequestHooks {
	/** A question for the person about this request; resolve to the chosen answer or undefined. */
	onQuestion?: (q: Question) => Promise<string | undefined>;
	onProgress?: (p: Progress) => void;
	signal?: AbortSignal;
}

interface Pending {
	op: string;
	resolve: (r: ResultBody) => void;
	reject: (e: Error) => void;
	hooks: RequestHooks;
}

export interface ClientOptions {
	socketPath: string;
	clientName: string;
	clientVersion: string;
	canAnswerQuestions: boolean;
	onNotice?: (code: string, message: string) => void;
	onClose?: (client: DaemonClient) => void;
}

export class DaemonClient {
	readonly options: ClientOptions;
	welcome: Welcome | undefined;
	private ws: WebSocket | undefined;
	private nextId = 1;
	private pending = new Map<number, Pending>();
	private closedFlag = false;

	constructor(options: ClientOptions) {
		this.options = options;
	}

	get isOpen(): boolean {
		return !this.closedFlag && this.ws !== undefined && this.ws.readyState === WebSocket.OPEN;
	}

	/** Open the WebSocket and say hello. Throws DaemonUnavailableError when nothing answers, and
	 * NotYourDaemonError (sending nothing, not even the HTTP upgrade) when the socket may be
	 * another user's (see trust.ts). */
	async connect(): Promise<Welcome> {
		const path = this.options.socketPath;
		const raw = await openVerified(path);
		const ws = await new Promise<WebSocket>((resolve, reject) => {
			let sock: WebSocket;
			try {
				sock = new WebSocket(`ws+unix:${path}:/v1`, [SUBPROTOCOL], {
					handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
					perMessageDeflate: false,
					maxPayload: 64 * 1024 * 1024,
					// The connection checked in openVerified, not a new one to the same path.
					createConnection: (() => raw) as unknown as typeof createConnection,
				});
			} catch (e) {
				raw.destroy();
				reject(new DaemonUnavailableError(path, errorText(e)));
				return;
			}
			const onError = (e: Error) => {
				sock.removeAllListeners();
				sock.on("error", () => {});
				sock.terminate();
				reject(new DaemonUnavailableError(path, errorText(e)));
			};
			sock.once("error", onError);
			sock.once("unexpected-response", (_req, res) => {
				onError(new Error(`the socket answered HTTP ${res.statusCode}, not a Deskhand WebSocket`));
			});
			sock.once("open", () => {
				sock.removeListener("error", onError);
				resolve(sock);
			});
		});
		if (ws.protocol !== SUBPROTOCOL) {
			ws.terminate();
			throw new DaemonUnavailableError(path, `it offered subprotocol "${ws.protocol}"`);
		}
		this.ws = ws;
		ws.on("message", (data, isBinary) => this.onMessage(data, isBinary));
		ws.on("error", () => {
			// 'close' follows and fails whatever is pending.
		});
		ws.on("close", (code, reason) => this.onClosed(code, reason.toString()));
		const welcome = await this.request("hello", {
			protocol: PROTOCOL_VERSION,
			client: { name: this.options.clientName, version: this.options.clientVersion, kind: "pi" },
			can_answer_questions: this.options.canAnswerQuestions,
		});
		if (welcome.kind !== "welcome") throw new Error(`unexpected hello reply ${welcome.kind}`);
		this.welcome = welcome;
		return welcome;
	}

	/** Send one request and wait for its reply. Abort → the daemon is asked to cancel it. */
	request<K extends ClientToDaemonOp>(op: K, fields: OpFields<K>, hooks: RequestHooks = {}): Promise<ResultBody> {
		const ws = this.ws;
		if (!ws || !this.isOpen) {
			return Promise.reject(new Error("not connected to the Deskhand daemon"));
		}
		const signal = hooks.signal;
		if (signal?.aborted) return Promise.reject(abortError(op, undefined));
		const id = this.nextId++;
		return new Promise<ResultBody>((resolve, reject) => {
			let onAbort: (() => void) | undefined;
			const done = () => {
				if (onAbort) signal?.removeEventListener("abort", onAbort);
			};
			this.pending.set(id, {
				op,
				hooks,
				resolve: (r) => {
					done();
					resolve(r);
				},
				reject: (e) => {
					done();
					reject(e);
				},
			});
			if (signal) {
				onAbort = () => this.cancelPending(id);
				signal.addEventListener("abort", onAbort, { once: true });
			}
			try {
				ws.send(JSON.stringify({ op, id, ...fields }));
			} catch (e) {
				this.pending.delete(id);
				done();
				reject(new Error(`could not send ${op} to the daemon: ${errorText(e)}`));
			}
		});
	}

	/** Fire-and-forget: answer a question (errors mean the question already ended). */
	answer(questionId: string, choice: string): void {
		if (!this.isOpen) return;
		this.request("answer", { question_id: questionId, choice: choice as OpFields<"answer">["choice"] }).catch(
			() => {},
		);
	}

	close(): void {
		if (this.closedFlag) return;
		this.closedFlag = true;
		const ws = this.ws;
		if (ws && (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)) {
			try {
				ws.close(1000, "pi session ended");
			} catch {
				ws.terminate();
			}
			// Don't let a daemon that never answers the close keep the process alive.
			setTimeout(() => ws.terminate(), 1000).unref();
		}
		this.failAll("the connection to the daemon was closed by this pi session");
		this.options.onClose?.(this);
	}

	private cancelPending(id: number): void {
		const p = this.pending.get(id);
		if (!p) return;
		// Ask the daemon to cancel; its reply to the original request (an error with the real
		// delivery state) settles it. If that reply doesn't come in time, give up waiting.
		this.request("cancel", { request_id: id }).catch(() => {});
		const timer = setTimeout(() => {
			const still = this.pending.get(id);
			if (still) {
				this.pending.delete(id);
				still.reject(abortError(still.op, "unknown"));
			}
		}, CANCEL_GRACE_MS);
		timer.unref();
		const origReject = p.reject;
		const origResolve = p.resolve;
		p.reject = (e) => {
			clearTimeout(timer);
			const delivery = e instanceof DaemonRequestError ? e.delivery : "unknown";
			origReject(abortError(p.op, delivery));
		};
		p.resolve = (r) => {
			clearTimeout(timer);
			// It finished before the cancel arrived: report the real result.
			origResolve(r);
		};
	}

	private onMessage(data: WebSocket.RawData, isBinary: boolean): void {
		if (isBinary) return; // a JSON connection never gets binary frames
		let msg: DaemonToClient;
		try {
			msg = JSON.parse(data.toString()) as DaemonToClient;
		} catch {
			return;
		}
		if (msg.type === "result" || msg.type === "error") {
			if (typeof msg.id !== "number") return;
			const p = this.pending.get(msg.id);
			if (!p) return;
			this.pending.delete(msg.id);
			if (msg.type === "result") p.resolve(msg.result);
			else p.reject(new DaemonRequestError(p.op, msg.error));
			return;
		}
		if (msg.type !== "event") return;
		const ev = msg.event;
		if (ev.kind === "notice") {
			this.options.onNotice?.(ev.code, ev.message);
		} else if (ev.kind === "progress") {
			this.pending.get(ev.request_id)?.hooks.onProgress?.(ev);
		} else if (ev.kind === "question") {
			const p = this.pending.get(ev.request_id);
			if (!p?.hooks.onQuestion) return; // not ours to answer: the daemon cancels it
			p.hooks
				.onQuestion(ev)
				.then((choice) => {
					if (choice) this.answer(ev.id, choice);
				})
				.catch(() => {});
		}
	}

	private onClosed(code: number, reason: string): void {
		const wasClosed = this.closedFlag;
		this.closedFlag = true;
		const why =
			code === 1001
				? "the daemon is stopping (going away)"
				: `the connection to the daemon ended (code ${code}${reason ? `: ${reason}` : ""})`;
		this.failAll(why);
		if (!wasClosed) this.options.onClose?.(this);
	}

	private failAll(why: string): void {
		const pending = [...this.pending.values()];
		this.pending.clear();
		for (const p of pending) {
			const err = new DaemonRequestError(p.op, {
				code: "connection_lost",
				message:
					`${why} before it answered ${p.op}; whether it took effect is unknown. ` +
					"Observe the app again before doing anything else, and do not repeat the action blindly.",
				data: { delivery: "unknown" },
			});
			p.reject(err);
		}
	}
}

/** A connected socket to `path` that passed the checks of trust.ts; nothing sent on it yet. */
async function openVerified(path: string): Promise<Socket> {
	let checked;
	try {
		checked = checkBeforeConnect(path); // NotYourDaemonError passes through as it is
	} catch (e) {
		if (e instanceof NoSocketError) throw new DaemonUnavailableError(path, e.message);
		throw e;
	}
	const raw = await new Promise<Socket>((resolve, reject) => {
		const s = netConnect({ path });
		const timer = setTimeout(() => {
			s.destroy();
			reject(new DaemonUnavailableError(path, "it accepted no connection in time"));
		}, HANDSHAKE_TIMEOUT_MS);
		timer.unref();
		s.once("error", (e) => {
			clearTimeout(timer);
			s.destroy();
			reject(new DaemonUnavailableError(path, errorText(e)));
		});
		s.once("connect", () => {
			clearTimeout(timer);
			s.removeAllListeners("error");
			// Until ws adds its own listener, an error must not go unhandled (that would end pi);
			// the HTTP request ws makes on this socket reports it.
			s.on("error", () => {});
			resolve(s);
		});
	});
	try {
		confirmAfterConnect(checked);
	} catch (e) {
		raw.destroy();
		throw e;
	}
	return raw;
}

function abortError(op: string, delivery: Delivery | undefined): DaemonRequestError {
	const effect =
		delivery === "refused"
			? "nothing reached the app"
			: delivery === "dispatched"
				? "it had already reached the app"
				: "whether it reached the app is unknown";
	return new DaemonRequestError(op, {
		code: "cancelled",
		message: `${op} was cancelled (aborted in pi; the daemon was asked to cancel it); ${effect}.`,
		data: { delivery: delivery ?? "unknown" },
	});
}

function errorText(e: unknown): string {
	if (e && typeof e === "object") {
		const code = (e as { code?: unknown }).code;
		const message = (e as { message?: unknown }).message;
		if (code === "ENOENT") return "no socket there";
		if (code === "ECONNREFUSED") return "connection refused: no daemon listens there";
		if (code === "EACCES") return "permission denied";
		if (typeof message === "string") return message;
	}
	return String(e);
}
