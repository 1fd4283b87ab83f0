// Which process left something behind (an embedded PostgreSQL it started, a temp file it was writing), in a form a
// later process on the same machine can check: is that process still running, or did it die (kill -9)?
import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** `<pid>-<start time>` of a live process (a pid used again is another process); undefined once it ended. Off Linux, the pid. */
function processIdentity(pid: number): string | undefined {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return String(pid);
  }
  // After the command's closing parenthesis: state, then 18 fields, then the start time (proc(5) fields 3 and 22).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[0] === 'Z' ? undefined : `${pid}-${fields[19]}`;
}

/** True once the process `identity` names (from processIdentity) has ended. */
function processEnded(identity: string): boolean {
  return processIdentity(Number.parseInt(identity, 10)) !== identity;
}

/** Where pids mean what they mean here: this host name and PID namespace (replicas sharing a folder differ in one). */
const PID_SCOPE = (() => {
  let namespace = '';
  try {
    namespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // Off Linux: the host name alone.
  }
  return createHash('sha256').update(`${hostname()}\0${namespace}`).digest('hex').slice(0, 12);
})();

const TAG = /^([0-9a-f]{12})-(\d+(?:-\d+)?)-/;

/** A file-name prefix naming this process, for leftovers a later process may delete once it ended (see leftByEnded). */
export function processTag(): string {
  return `${PID_SCOPE}-${processIdentity(process.pid)!}-`;
}

/** A name with processTag's prefix, of a process here that has ended: nobody finishes what it left. */
export function leftByEnded(name: string): boolean {
  const match = TAG.exec(name);
  return match !== null && match[1] === PID_SCOPE && processEnded(match[2]);
}
