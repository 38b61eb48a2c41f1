// The daemon's questions for the person (the backend's approval prompt, app consent, full-trace
// consent) shown with pi's confirm and select dialogs. Nothing here ever answers yes on the
// person's behalf: without a UI, or when a dialog is dismissed, the answer is a refusal.
import type { ExtensionContext, ExtensionUIDialogOptions } from "@earendil-works/pi-coding-agent";
import type { Question } from "./protocol.gen.ts";

const CONSENT_LABELS: Record<string, string> = {
	once: "Allow for this task only",
	always: "Always allow this exact program",
	deny: "Deny",
};

/** Ask the person; resolves to one of the question's choices, or undefined once aborted. */
export async function askPerson(
	q: Question,
	signal: AbortSignal | undefined,
	ctx: ExtensionContext,
): Promise<string | undefined> {
	const choices = q.choices ?? ["accept", "decline"];
	if (!ctx.hasUI) return choices.includes("deny") ? "deny" : "decline";
	const opts: ExtensionUIDialogOptions = signal ? { signal } : {};
	const quoted = q.text
		.split("\n")
		.map((l) => `> ${l}`)
		.join("\n");
	if (q.question === "app_consent") {
		const offered = ["once", "always", "deny"].filter((c) => choices.includes(c));
		const picked = await ctx.ui.select(
			`Deskhand: may the agent use ${q.app || "this app"}? (the request below names it)\n${quoted}`,
			offered.map((c) => CONSENT_LABELS[c]),
			opts,
		);
		if (signal?.aborted) return undefined;
		const choice = offered.find((c) => CONSENT_LABELS[c] === picked);
		return choice ?? (choices.includes("deny") ? "deny" : undefined);
	}
	const title =
		q.question === "full_trace"
			? `Deskhand: record a full trace of this Jev task in ${q.app || "the app"}?`
			: `Deskhand: the desktop backend asks for approval to use ${q.app || "an app"}`;
	const message =
		q.question === "full_trace"
			? `A full trace stores the app's trees, typed text and Jev's exchanges on disk.\n\n${quoted}\n\nRecord it?`
			: "Its message, quoted as received (it comes from the backend, not from Deskhand or the agent):\n" +
				`${quoted}\n\nAllow?`;
	const yes = await ctx.ui.confirm(title, message, opts);
	if (signal?.aborted) return undefined;
	return yes && choices.includes("accept") ? "accept" : "decline";
}
