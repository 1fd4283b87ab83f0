import { linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';

/**
 * Creates `file` (owner-only) with `content` unless it exists. Written aside and linked into place, which fails when the
 * file exists: processes starting together (replicas on one data dir) all end up with the first one's whole content,
 * never an empty or half-written file, and none fails for having lost the race.
 */
export function writeFileOnce(file: string, content: string): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const aside = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.new`;
  writeFileSync(aside, content, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(aside, { force: true });
  }
}
