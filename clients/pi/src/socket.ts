// Where the daemon listens: the same lookup as deskhand_d/paths.py (default_socket_str).
import { join } from "node:path";

export const SOCKET_NAME = "deskhand.sock";

export interface SocketLookupEnv {
	[name: string]: string | undefined;
}

/** The daemon's private runtime directory, as the daemon computes it. */
export function runtimeDir(
	env: SocketLookupEnv = process.env,
	platform: string = process.platform,
	uid: number | undefined = process.getuid?.(),
): string {
	if (platform === "darwin") {
		// $TMPDIR is a per-user directory on macOS, unlike /tmp.
		return join(env.TMPDIR || "/tmp", "deskhand");
	}
	const xdg = env.XDG_RUNTIME_DIR;
	if (xdg) return join(xdg, "deskhand");
	return `/tmp/deskhand-${uid ?? 0}`;
}

/** DESKHAND_SOCKET if set, else the socket inside the daemon's runtime directory. */
export function defaultSocketPath(
	env: SocketLookupEnv = process.env,
	platform: string = process.platform,
	uid: number | undefined = process.getuid?.(),
): string {
	return env.DESKHAND_SOCKET || join(runtimeDir(env, platform, uid), SOCKET_NAME);
}
