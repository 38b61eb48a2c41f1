// Where the daemon listens: the same lookup as deskhand_d/paths.py (default_socket_str).
import { execFileSync } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";

export const SOCKET_NAME = "deskhand.sock";
const SUN_PATH_BYTES_MACOS = 104; // sockaddr_un.sun_path on macOS, the NUL included

/** This user's own temp directory on macOS: $TMPDIR, else what the system says; never /tmp. */
function darwinUserTempDir(env: SocketLookupEnv, platform: string): string {
	if (env.TMPDIR) return env.TMPDIR;
	if (platform !== "darwin" || process.platform !== "darwin") return "";
	try {
		return execFileSync("/usr/bin/getconf", ["DARWIN_USER_TEMP_DIR"], { encoding: "utf8" }).trim();
	} catch {
		return "";
	}
}

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
		// Under ~/Library (the temp folder may be cleaned); the per-user temp folder only when
		// that path is too long for a socket.
		const library = join(env.HOME || homedir(), "Library", "Application Support", "Deskhand", "run");
		if (Buffer.byteLength(join(library, SOCKET_NAME)) < SUN_PATH_BYTES_MACOS) return library;
		const tmp = darwinUserTempDir(env, platform);
		return tmp ? join(tmp, "deskhand") : library;
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
