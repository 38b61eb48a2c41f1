// Before the extension sends a byte to the daemon's socket, it makes sure the socket is its own
// user's: another user who made the socket's directory first (the /tmp/deskhand-<uid> fallback
// lives in a world-writable /tmp) or swapped ours for theirs would otherwise get every request,
// including the text typed into apps. The Python clients ask the kernel who listens on the
// connection (SO_PEERCRED, deskhand_d/clientcheck.py); Node cannot without a native addon, so
// this module checks what the file system shows, around the connect:
//
// before: the socket's directory is a real directory (not a symlink), ours, and not writable by
//         group or others; its parent lets nobody else rename it away (ours or root's, and not
//         writable by others unless sticky, like /tmp); the socket file is a socket and ours;
// after:  the directory and the socket file are still the same ones (device and inode).
//
// What this cannot see: which process holds the listening end behind a socket file of ours (only
// we or root could have handed it to someone), and renames further up than the parent.
import { lstatSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";

/** Stable codes, the same words as deskhand_d/clientcheck.py where the checks are the same. */
export type TrustCode =
	| "socket_dir_not_a_directory"
	| "socket_dir_foreign_owner"
	| "socket_dir_writable_by_others"
	| "socket_dir_parent_unsafe"
	| "socket_foreign_owner"
	| "socket_changed"
	| "daemon_peer_unknown";

const ELSEWHERE =
	"set XDG_RUNTIME_DIR to your private runtime directory, or point DESKHAND_SOCKET at your own " +
	"daemon's socket";

/** The socket may belong to another user: the extension refused it and sent nothing. */
export class NotYourDaemonError extends Error {
	readonly code: TrustCode;
	readonly path: string;
	constructor(code: TrustCode, path: string, message: string) {
		super(`${code}: ${message}`);
		this.name = "NotYourDaemonError";
		this.code = code;
		this.path = path;
	}
}

/** Nothing to connect to (no directory or no socket): not a refusal, just no daemon there. */
export class NoSocketError extends Error {
	constructor(reason: string) {
		super(reason);
		this.name = "NoSocketError";
	}
}

/** What the checks saw before connecting; `confirmAfterConnect` compares against it. */
export interface Checked {
	socketPath: string;
	dir: Identity;
	socket: Identity;
}

interface Identity {
	dev: number;
	ino: number;
}

/** This process's uid, or a refusal where the platform has none (nothing to compare with). */
function myUid(socketPath: string): number {
	const uid = process.getuid?.();
	if (uid === undefined) {
		throw new NotYourDaemonError(
			"daemon_peer_unknown",
			socketPath,
			`refusing to connect to ${socketPath}: this platform has no user ids to check the ` +
				"socket's owner against. Nothing was sent.",
		);
	}
	return uid;
}

// macOS: launchd (root) creates a LaunchAgent's socket file (in a directory of ours). Root can
// read your files anyway, so it is not "another user" here; the rule deskhand_d/clientcheck.py
// applies to the listener's uid.
function trustedOwner(owner: number, me: number): boolean {
	return owner === me || (process.platform === "darwin" && owner === 0);
}

function look(path: string, follow: boolean): Stats | undefined {
	try {
		return follow ? statSync(path) : lstatSync(path);
	} catch (e) {
		const code = (e as { code?: unknown }).code;
		if (code === "ENOENT" || code === "ENOTDIR") return undefined;
		if (code === "EACCES") throw new NoSocketError("permission denied");
		throw new NoSocketError(e instanceof Error ? e.message : String(e));
	}
}

/** The checks before connecting. Throws NotYourDaemonError, or NoSocketError when there is
 * nothing to connect to (the extension then never connects at all). */
export function checkBeforeConnect(socketPath: string): Checked {
	const me = myUid(socketPath);
	const dir = dirname(socketPath);
	const d = look(dir, false);
	if (!d) throw new NoSocketError("no socket there");
	const mode = d.mode & 0o7777;
	if (!d.isDirectory()) {
		const kind = d.isSymbolicLink() ? "a symbolic link" : "not a directory";
		throw new NotYourDaemonError(
			"socket_dir_not_a_directory",
			dir,
			`refusing to connect to ${socketPath}: its directory ${dir} is ${kind}, so it may lead ` +
				"to a socket that someone else set up. Nothing was sent. Remove it if you did not make it, " +
				`or ${ELSEWHERE}.`,
		);
	}
	if (mode & 0o022 && mode & 0o1000) {
		throw new NotYourDaemonError(
			"socket_dir_writable_by_others",
			dir,
			`refusing to connect to ${socketPath}: its directory ${dir} is shared (mode ${octal(mode)}), ` +
				"so anyone could have made that socket. Nothing was sent. deskhand-d keeps its socket in a " +
				`private directory of its own: ${ELSEWHERE}.`,
		);
	}
	if (d.uid !== me) {
		throw new NotYourDaemonError(
			"socket_dir_foreign_owner",
			dir,
			`refusing to connect to ${socketPath}: its directory ${dir} belongs to uid ${d.uid}, not to ` +
				`you (uid ${me}), so whatever listens there is not your daemon and would read everything you ` +
				`send. Nothing was sent. Have its owner or an administrator remove it, or ${ELSEWHERE}.`,
		);
	}
	if (mode & 0o022) {
		throw new NotYourDaemonError(
			"socket_dir_writable_by_others",
			dir,
			`refusing to connect to ${socketPath}: its directory ${dir} has mode ${octal(mode)}, so ` +
				"other users could have put their own socket there. Nothing was sent. deskhand-d creates it " +
				"0700: remove it and start deskhand-d again, or, if you are sure only you put anything in " +
				`it, run \`chmod 700 ${dir}\`.`,
		);
	}
	// Without the peer's credentials, a swap of the whole directory between our look and the
	// connect would go unseen; in a parent that only we (or root) can change there is none.
	const parent = dirname(dir);
	const p = look(parent, true);
	if (p) {
		const pmode = p.mode & 0o7777;
		if (!(p.uid === me || p.uid === 0) || (pmode & 0o022 && !(pmode & 0o1000))) {
			throw new NotYourDaemonError(
				"socket_dir_parent_unsafe",
				parent,
				`refusing to connect to ${socketPath}: the directory above it, ${parent} (uid ${p.uid}, ` +
					`mode ${octal(pmode)}), lets other users replace ${dir} with their own. Nothing was ` +
					`sent. deskhand-d refuses to listen there too: ${ELSEWHERE}.`,
			);
		}
	}
	const s = look(socketPath, false);
	if (!s) throw new NoSocketError("no socket there");
	if (!s.isSocket()) throw new NoSocketError("not a socket: no daemon listens there");
	if (!trustedOwner(s.uid, me)) {
		throw new NotYourDaemonError(
			"socket_foreign_owner",
			socketPath,
			`refusing to connect to ${socketPath}: the socket belongs to uid ${s.uid}, not to you ` +
				`(uid ${me}), so it is not your daemon's. Nothing was sent. Find out who created it and ` +
				`remove it, then start deskhand-d again; or ${ELSEWHERE}.`,
		);
	}
	return { socketPath, dir: { dev: d.dev, ino: d.ino }, socket: { dev: s.dev, ino: s.ino } };
}

/** After connecting, before sending: the directory and the socket are the ones we checked. */
export function confirmAfterConnect(checked: Checked): void {
	const path = checked.socketPath;
	let d: Stats | undefined;
	let s: Stats | undefined;
	try {
		d = look(dirname(path), false);
		s = look(path, false);
	} catch {
		d = undefined;
	}
	if (!d || !s || !same(d, checked.dir) || !same(s, checked.socket)) {
		throw new NotYourDaemonError(
			"socket_changed",
			path,
			`refusing to talk to ${path}: the socket or its directory was replaced while connecting, ` +
				"so the connection may lead to someone else. Nothing was sent. Try again; if it keeps " +
				`happening, find out who changes ${dirname(path)}.`,
		);
	}
}

function same(st: Stats, id: Identity): boolean {
	return st.dev === id.dev && st.ino === id.ino;
}

function octal(mode: number): string {
	return mode.toString(8).padStart(4, "0");
}
