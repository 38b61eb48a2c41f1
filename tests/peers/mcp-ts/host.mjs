// A scripted MCP host built on the official TypeScript SDK client, for Deskhand's tests.
//
// Usage: node host.mjs PLAN.json   (PLAN: see below). It starts the server command of the plan
// over stdio with the SDK's StdioClientTransport, initializes, then runs the plan's steps in
// order and prints one JSON line per step on stdout ({step, ok, result | error}); the Python
// test makes the assertions. A step's arguments may refer to what came before:
//   {"$last": "state_id"}       the previous tool result's structuredContent field
//   {"$state": true}            the stateId the previous result's text hands on
//                               ("stateId for APP: ID" or "New stateId for APP: ID")
//   {"$index": "button 7\\b"}   the element index on the line of the previous result's text
//                               that matches this pattern (Sky's "<index> <role> <label>" lines)
// With "elicitation" in the plan the client declares the capability and answers each
// elicitation/create with the next answer of the list ({"action": ..., "content": ...}, and
// "delay_ms" to answer only after that long, as a person would); the requests it received are
// printed as {"elicitation": params} lines.
//
// PLAN = {"command": str, "args": [str], "env": {str: str}, "elicitation": [answer] | null,
//         "steps": [{"list_tools": true} | {"tool": str, "arguments": {...}}]}

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

const answers = plan.elicitation ?? null;
const client = new Client(
	{ name: "ts-sdk-host", version: "1.0.0" },
	{ capabilities: answers ? { elicitation: {} } : {} },
);
if (answers) {
	client.setRequestHandler(ElicitRequestSchema, async (request) => {
		out({ elicitation: request.params });
		const { delay_ms: delay = 0, ...answer } = answers.shift() ?? { action: "cancel" };
		if (delay > 0) await new Promise((done) => setTimeout(done, delay));
		return answer;
	});
}

const transport = new StdioClientTransport({
	command: plan.command,
	args: plan.args ?? [],
	env: plan.env ?? undefined,
	stderr: "inherit",
});

function resolve(value, last) {
	if (Array.isArray(value)) return value.map((v) => resolve(v, last));
	if (value === null || typeof value !== "object") return value;
	if ("$last" in value) return last?.structuredContent?.[value.$last];
	if ("$state" in value) {
		const text = (last?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
		const m = text.match(/^(?:New )?stateId for .+?: (\S+)$/m);
		if (!m) throw new Error("the previous result handed on no stateId");
		return m[1];
	}
	if ("$index" in value) {
		const pattern = new RegExp(value.$index);
		const text = (last?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
		for (const line of text.split("\n")) {
			const m = line.match(/^\s*(\d+)\s/);
			if (m && pattern.test(line)) return Number(m[1]);
		}
		throw new Error(`no element line matches ${value.$index}`);
	}
	return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, last)]));
}

let last = null;
try {
	await client.connect(transport);
	out({ step: "initialize", ok: true, result: { server: client.getServerVersion(), capabilities: client.getServerCapabilities() } });
	for (const [i, step] of plan.steps.entries()) {
		try {
			if (step.list_tools) {
				out({ step: i, ok: true, result: await client.listTools() });
				continue;
			}
			const result = await client.callTool({ name: step.tool, arguments: resolve(step.arguments ?? {}, last) });
			if (!result.isError) last = result;
			out({ step: i, ok: true, result });
		} catch (error) {
			out({ step: i, ok: false, error: String(error?.message ?? error) });
		}
	}
} finally {
	await client.close();
}
