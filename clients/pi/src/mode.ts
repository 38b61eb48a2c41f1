// Modes as pi sees them: reading the person's /cua-mode choice back from the session's custom
// entries, and working out which tools should be active for a mode and handoff state without
// disturbing the tools other extensions contribute.
import { enabledToolNames, TOOL_NAMES } from "./tools.ts";

export type Mode = "native" | "jev";

/** The custom session entry that records the person's /cua-mode choice. */
export const MODE_ENTRY = "cua-mode";
/** The predecessor's entry type: still read, so old sessions keep their mode. */
const LEGACY_MODE_ENTRY = "jev-cua-mode";

export function isMode(v: unknown): v is Mode {
	return v === "native" || v === "jev";
}

export interface ModeChoice {
	mode: Mode;
	reason: string;
}

/** The last mode recorded on this branch (either entry type), or undefined when none was. */
export function recordedMode(branch: readonly unknown[]): ModeChoice | undefined {
	let found: ModeChoice | undefined;
	for (const entry of branch) {
		const e = entry as { type?: unknown; customType?: unknown; data?: unknown };
		if (e.type !== "custom" || (e.customType !== MODE_ENTRY && e.customType !== LEGACY_MODE_ENTRY)) continue;
		const data = e.data as { mode?: unknown; reason?: unknown } | undefined;
		if (!data || !isMode(data.mode)) continue;
		found = { mode: data.mode, reason: typeof data.reason === "string" ? data.reason : "" };
	}
	return found;
}

/**
 * The active tool list for a mode: everything not ours, in its order, then ours for this mode
 * and handoff state. Undefined when that is the set already active (nothing to change).
 */
export function nextActiveTools(active: readonly string[], mode: Mode, handoffOpen: boolean): string[] | undefined {
	const ours = new Set(TOOL_NAMES);
	const next = [...active.filter((n) => !ours.has(n)), ...enabledToolNames(mode, handoffOpen)];
	const now = new Set(active);
	const same = next.length === now.size && next.every((n) => now.has(n));
	return same ? undefined : next;
}
