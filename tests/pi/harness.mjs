// Drives the Deskhand pi extension inside a real pi: the real loader, a real AgentSession and
// pi's faux model provider (no model key, no network). Each scenario prints its findings as one
// `RESULT <json>` line; the pytest side asserts on them and on what the daemon and the simulator
// saw. Usage: node harness.mjs SCENARIO [JSON-ARGS]
//
// Environment: DH_PI_PKG (the package directory to load), DH_PI_NODE_MODULES (where pi is
// installed), DESKHAND_SOCKET (the test daemon), DH_SIM_RECORD (the simulator's call record).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const PKG = process.env.DH_PI_PKG;
const NM = process.env.DH_PI_NODE_MODULES;
const RECORD = process.env.DH_SIM_RECORD ?? "";
const pi = await import(pathToFileURL(join(NM, "@earendil-works/pi-coding-agent/dist/index.js")).href);
const piAi = await import(pathToFileURL(join(NM, "@earendil-works/pi-ai/dist/index.js")).href);
const { fauxProvider, fauxAssistantMessage, fauxToolCall } = piAi;

// Our 14 tool names, from the test (tests/pi/conftest.py OUR_TOOLS), written once there.
const OURS = JSON.parse(process.env.DH_PI_OUR_TOOLS ?? "[]");

const scratch = mkdtempSync(join(tmpdir(), "dhpi-"));
const cwd = join(scratch, "cwd");
const agentDir = join(scratch, "agent");
const sessionDir = join(scratch, "sessions");
for (const d of [cwd, agentDir, sessionDir]) mkdirSync(d, { recursive: true });
// Another extension's tool: switching modes must leave it active.
const OTHER_EXT = join(scratch, "other-extension.js");
writeFileSync(
	OTHER_EXT,
	`export default function (pi) {
	pi.registerTool({
		name: "other_tool",
		label: "Other",
		description: "A tool from another extension.",
		parameters: { type: "object", properties: {}, additionalProperties: false },
		execute: async () => ({ content: [{ type: "text", text: "other" }], details: undefined }),
	});
}
`,
);

function emit(result) {
	process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

/** A UI for bindExtensions: answers dialogs as told and records everything it was asked. */
function fakeUi(answers = {}) {
	const calls = [];
	const ui = {
		confirm: async (title, message, opts) => {
			calls.push({ method: "confirm", title, message });
			return answers.confirm ?? false;
		},
		select: async (title, options) => {
			calls.push({ method: "select", title, options });
			if (answers.select === undefined) return undefined;
			return options.find((o) => o.toLowerCase().includes(answers.select)) ?? undefined;
		},
		input: async (title) => {
			calls.push({ method: "input", title });
			return undefined;
		},
		editor: async (title) => {
			calls.push({ method: "editor", title });
			return undefined;
		},
		notify: (message, type) => {
			calls.push({ method: "notify", message, type });
		},
		setStatus: (key, text) => {
			calls.push({ method: "setStatus", key, text });
		},
	};
	const proxy = new Proxy(ui, {
		get(target, prop) {
			if (prop in target) return target[prop];
			return () => undefined;
		},
	});
	return { ui: proxy, calls };
}

async function makeSession({ ui, hasUI = true, sessionFile, faux: givenFaux } = {}) {
	const faux = givenFaux ?? fauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
	const modelRuntime = await pi.ModelRuntime.create({
		authPath: join(scratch, "auth.json"),
		modelsPath: null,
		refreshOnCreate: false,
	});
	modelRuntime.registerNativeProvider(faux.provider);
	const settings = pi.SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } });
	const loader = new pi.DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager: settings,
		additionalExtensionPaths: [PKG, OTHER_EXT],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await loader.reload();
	const sessionManager = sessionFile
		? pi.SessionManager.open(sessionFile, sessionDir)
		: pi.SessionManager.create(cwd, sessionDir);
	const { session, extensionsResult } = await pi.createAgentSession({
		cwd,
		agentDir,
		modelRuntime,
		model: faux.getModel(),
		thinkingLevel: "off",
		resourceLoader: loader,
		sessionManager,
		settingsManager: settings,
		noTools: "builtin",
	});
	const errors = (extensionsResult?.errors ?? []).map((e) => String(e.error ?? e.message ?? e));
	await session.bindExtensions(hasUI ? { uiContext: ui, mode: "rpc" } : {});
	return { session, faux, sessionManager, errors };
}

async function shutdown(session, reason = "quit") {
	await session.extensionRunner.emit({ type: "session_shutdown", reason });
	session.dispose();
}

function toolResults(session) {
	return session.messages
		.filter((m) => m.role === "toolResult")
		.map((m) => ({
			toolName: m.toolName,
			toolCallId: m.toolCallId,
			isError: m.isError,
			text: m.content
				.filter((c) => c.type === "text")
				.map((c) => c.text)
				.join("\n"),
			images: m.content.filter((c) => c.type === "image").map((c) => ({ mimeType: c.mimeType, bytes: c.data.length })),
			details: m.details ?? null,
		}));
}

const ours = (names) => names.filter((n) => OURS.includes(n));
const active = (session) => ours(session.getActiveToolNames());

function lastToolText(context) {
	for (let i = context.messages.length - 1; i >= 0; i--) {
		const m = context.messages[i];
		if (m.role === "toolResult") {
			return m.content
				.filter((c) => c.type === "text")
				.map((c) => c.text)
				.join("\n");
		}
	}
	return "";
}

/** The latest stateId in a tool result (an observation's, or the one an action returned). */
function stateIdIn(text) {
	const m = text.match(/(?:New stateId|stateId): ([0-9a-f]{8,})/);
	return m ? m[1] : undefined;
}

/** The element number of the line matching `pattern` in a tree. */
function indexIn(text, pattern) {
	for (const line of text.split("\n")) {
		const m = line.match(/^\s*(\d+) (.*)$/);
		if (m && pattern.test(m[2])) return Number(m[1]);
	}
	return undefined;
}

/** A scripted model step: click the Calculator button matching `pattern`, using what it was shown. */
function clickStep(pattern, id) {
	return (context) => {
		const text = lastToolText(context);
		const stateId = stateIdIn(text);
		const index = indexIn(text, pattern);
		if (!stateId || index === undefined) {
			return fauxAssistantMessage(`stuck: no stateId or no element for ${pattern} in: ${text.slice(0, 400)}`);
		}
		return fauxAssistantMessage([fauxToolCall("cua_click", { app: "Calculator", stateId, element_index: index }, { id })], {
			stopReason: "toolUse",
		});
	};
}

const call = (name, args, id) => fauxAssistantMessage([fauxToolCall(name, args, { id })], { stopReason: "toolUse" });

function readRecord() {
	if (!RECORD || !existsSync(RECORD)) return [];
	return readFileSync(RECORD, "utf8")
		.split("\n")
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l));
}

async function waitFor(predicate, timeoutMs, what) {
	const deadline = Date.now() + timeoutMs;
	while (Date.now() < deadline) {
		if (await predicate()) return;
		await new Promise((r) => setTimeout(r, 20));
	}
	throw new Error(`timed out waiting for ${what}`);
}

function readLine() {
	return new Promise((resolve) => {
		const rl = createInterface({ input: process.stdin });
		rl.once("line", (line) => {
			rl.close();
			resolve(line);
		});
	});
}

// ----- scenarios --------------------------------------------------------------------------------

const scenarios = {
	/** Level 2: the real loader only. Nothing may connect while loading. */
	async load() {
		const res = await pi.discoverAndLoadExtensions([PKG], cwd, agentDir);
		const ext = res.extensions[0];
		const skills = pi.loadSkillsFromDir({ dir: join(PKG, "skills"), source: "test" });
		emit({
			errors: res.errors.map((e) => String(e.error ?? e.message ?? JSON.stringify(e))),
			extensions: res.extensions.length,
			tools: ext ? [...ext.tools.keys()] : [],
			sequential: ext ? [...ext.tools.values()].map((t) => t.definition.executionMode) : [],
			commands: ext ? [...ext.commands.keys()] : [],
			handlers: ext ? [...ext.handlers.keys()] : [],
			schemas: ext
				? Object.fromEntries([...ext.tools.values()].map((t) => [t.definition.name, t.definition.parameters]))
				: {},
			skills: skills.skills.map((s) => ({ name: s.name, description: s.description })),
			skillDiagnostics: skills.diagnostics,
		});
	},

	/** Level 3: observe, click 6 + 7 =, observe again, through a scripted model. */
	async calc() {
		const { ui, calls } = fakeUi({ confirm: true });
		const { session, faux, errors } = await makeSession({ ui });
		const registered = ours(session.getAllTools().map((t) => t.name));
		const commands = (session.extensionRunner?.getRegisteredCommands?.() ?? []).map((c) => c.name);
		faux.setResponses([
			call("cua_get_app_state", { app: "Calculator" }, "obs1"),
			clickStep(/^button Description: 6,/, "c6"),
			clickStep(/^button Add$/, "cplus"),
			clickStep(/^button Description: 7,/, "c7"),
			clickStep(/^button Equals$/, "ceq"),
			call("cua_get_app_state", { app: "Calculator" }, "obs2"),
			fauxAssistantMessage("done"),
		]);
		await session.prompt("Work out 6 + 7 on the Calculator.");
		const results = toolResults(session);
		await shutdown(session);
		emit({ errors, registered, commands, active: active(session), results, ui: calls });
	},

	/** /cua-mode switches, persisted entries, reload and reopening the session file. */
	async mode() {
		const { ui, calls } = fakeUi();
		const { session, faux, sessionManager, errors } = await makeSession({ ui });
		const out = { errors, steps: [] };
		const snap = async (label) => {
			out.steps.push({ label, active: active(session) });
		};
		await snap("start");
		out.otherAtStart = session.getActiveToolNames().filter((n) => !OURS.includes(n));
		await session.prompt("/cua-mode jev");
		await snap("jev");
		// Ask the daemon (through the status tool) which mode this session has there.
		faux.setResponses([call("cua_status", {}, "st1"), fauxAssistantMessage("ok")]);
		await session.prompt("status?");
		out.statusAfterJev = toolResults(session).at(-1);
		await session.reload();
		await snap("jev after reload");
		await session.prompt("/cua-mode native");
		await snap("native");
		await session.reload();
		await snap("native after reload");
		await session.prompt("/cua-mode jev");
		await snap("jev again");
		faux.setResponses([call("cua_status", {}, "st2"), fauxAssistantMessage("ok")]);
		await session.prompt("status again?");
		out.statusAfterReload = toolResults(session).at(-1);
		await session.prompt("/cua-mode bogus");
		out.entries = sessionManager
			.getEntries()
			.filter((e) => e.type === "custom")
			.map((e) => ({ customType: e.customType, data: e.data }));
		out.otherToolsKept = session.getActiveToolNames().filter((n) => !OURS.includes(n));
		const file = sessionManager.getSessionFile();
		await shutdown(session);
		out.notifications = calls.filter((c) => c.method === "notify").map((c) => c.message);
		if (file && existsSync(file)) {
			const again = await makeSession({ ui: fakeUi().ui, sessionFile: file });
			out.reopened = active(again.session);
			await shutdown(again.session);
		}
		emit(out);
	},

	/** /cua-mode jev against a daemon without a Jev key: it stays native, and says why. */
	async mode_nokey() {
		const { ui, calls } = fakeUi();
		const { session, sessionManager } = await makeSession({ ui });
		await session.prompt("/cua-mode jev");
		const out = {
			active: active(session),
			entries: sessionManager
				.getEntries()
				.filter((e) => e.type === "custom")
				.map((e) => e.data),
			notifications: calls.filter((c) => c.method === "notify").map((c) => c.message),
		};
		await shutdown(session);
		emit(out);
	},

	/** The backend's approval prompt shown with pi's confirm; the answer goes back to the daemon. */
	async confirm(args) {
		const { ui, calls } = fakeUi({ confirm: args.answer });
		const { session, faux } = await makeSession({ ui });
		faux.setResponses([call("cua_get_app_state", { app: "Calculator" }, "obs"), fauxAssistantMessage("done")]);
		await session.prompt("Look at the Calculator.");
		const results = toolResults(session);
		await shutdown(session);
		emit({ results, dialogs: calls.filter((c) => c.method === "confirm" || c.method === "select") });
	},

	/** Deskhand's own consent question shown with pi's select. */
	async consent(args) {
		const { ui, calls } = fakeUi({ select: args.pick });
		const { session, faux } = await makeSession({ ui });
		faux.setResponses([call("cua_get_app_state", { app: "Calculator" }, "obs"), fauxAssistantMessage("done")]);
		await session.prompt("Look at the Calculator.");
		const results = toolResults(session);
		await shutdown(session);
		emit({ results, dialogs: calls.filter((c) => c.method === "confirm" || c.method === "select") });
	},

	/** No UI (print mode): the extension tells the daemon it cannot answer questions. */
	async noui() {
		const { session, faux } = await makeSession({ hasUI: false });
		faux.setResponses([call("cua_get_app_state", { app: "Calculator" }, "obs"), fauxAssistantMessage("done")]);
		await session.prompt("Look at the Calculator.");
		const results = toolResults(session);
		await shutdown(session);
		emit({ results });
	},

	/** An abort while the daemon is working on a click cancels that daemon request. */
	async abort() {
		const { ui } = fakeUi();
		const { session, faux } = await makeSession({ ui });
		faux.setResponses([
			call("cua_get_app_state", { app: "Calculator" }, "obs"),
			clickStep(/^button Description: 6,/, "c6"),
			fauxAssistantMessage("never reached"),
		]);
		const started = Date.now();
		const prompt = session.prompt("Press 6.").catch((e) => `prompt rejected: ${e}`);
		await waitFor(
			() => readRecord().some((r) => r.event === "call_start" && r.tool === "click"),
			20_000,
			"the click to reach the simulator",
		);
		await session.abort();
		const promptOutcome = await prompt;
		await waitFor(
			() => readRecord().some((r) => r.event === "call_end" && r.tool === "click"),
			10_000,
			"the simulator to end the click",
		);
		const results = toolResults(session);
		await shutdown(session);
		emit({ results, promptOutcome: promptOutcome ?? null, elapsedMs: Date.now() - started });
	},

	/** Jev mode (the daemon's default here): a run hands a step back, the native actions appear
	 * for it, one click spends a step with the handoff token, and the turn's end hides them. */
	async jev_handoff() {
		const { ui } = fakeUi();
		const { session, faux } = await makeSession({ ui });
		const seen = { atStart: active(session) };
		const updates = [];
		session.subscribe((e) => {
			if (e.type === "tool_execution_update") updates.push(e.toolName ?? null);
		});
		faux.setResponses([
			call("jev_cua_run", { appName: "Calculator", goal: "Enter 1", maxSteps: 3 }, "run1"),
			() => {
				seen.afterRun = active(session);
				return call("cua_get_app_state", { app: "Calculator" }, "obs");
			},
			clickStep(/ID: One$/, "c1"),
			() => {
				seen.afterClick = active(session);
				return fauxAssistantMessage("done");
			},
		]);
		await session.prompt("Enter 1 on the Calculator.");
		seen.afterTurn = active(session);
		const results = toolResults(session);
		await shutdown(session);
		emit({ seen, results, updates });
	},

	/** The daemon restarts between two tool calls: the extension reconnects once. */
	async restart() {
		const { ui } = fakeUi();
		const { session, faux } = await makeSession({ ui });
		faux.setResponses([call("cua_list_apps", {}, "a1"), fauxAssistantMessage("one")]);
		await session.prompt("List apps.");
		process.stdout.write("READY\n");
		await readLine(); // the test restarts the daemon, then says go
		faux.setResponses([call("cua_get_app_state", { app: "Calculator" }, "a2"), fauxAssistantMessage("two")]);
		await session.prompt("Look at the Calculator.");
		const results = toolResults(session);
		await shutdown(session);
		emit({ results });
	},

	/** No daemon at all: the session still starts, and the tool error says how to start it. */
	async nodaemon() {
		const { ui, calls } = fakeUi();
		const { session, faux, errors } = await makeSession({ ui });
		faux.setResponses([call("cua_get_app_state", { app: "Calculator" }, "x1"), fauxAssistantMessage("done")]);
		await session.prompt("Look at the Calculator.");
		faux.setResponses([call("cua_status", {}, "x2"), fauxAssistantMessage("done")]);
		await session.prompt("Status?");
		const results = toolResults(session);
		await shutdown(session);
		emit({ errors, results, status: calls.filter((c) => c.method === "setStatus").map((c) => c.text) });
	},

	/** Turns follow agent runs, the session's connection is its own, and shutdown closes it. */
	async lifecycle() {
		const { ui } = fakeUi();
		const { session, faux } = await makeSession({ ui });
		process.stdout.write("STARTED\n");
		await readLine();
		faux.setResponses([call("cua_list_apps", {}, "l1"), fauxAssistantMessage("done")]);
		await session.prompt("List apps.");
		process.stdout.write("PROMPTED\n");
		await readLine();
		await shutdown(session);
		process.stdout.write("SHUTDOWN\n");
		await readLine();
		emit({ results: toolResults(session) });
	},
};

const [name, rawArgs] = process.argv.slice(2);
const scenario = scenarios[name];
if (!scenario) {
	console.error(`unknown scenario ${name}`);
	process.exit(2);
}
try {
	await scenario(rawArgs ? JSON.parse(rawArgs) : {});
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
// Anything the extension left open (it shouldn't) must not keep us alive.
process.exit(0);
