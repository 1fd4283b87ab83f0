import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The console package (sources, vite config) and its built files, relative to this module in the repository. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../../console/', import.meta.url));
export const CONSOLE_DIST = join(CONSOLE_DIR, 'dist');
/** The hash of the sources a dist was built from, written into the dist after each build. */
const STAMP = join(CONSOLE_DIST, '.source-hash');
const LOCK = join(CONSOLE_DIR, '.build-lock');
const INPUTS = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json'];
const LOCK_STALE_MS = 5 * 60_000;

interface Log {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

/** sha256 over the path and bytes of every input file, in a fixed order; undefined without sources (a production install). */
export function consoleSourceHash(dir = CONSOLE_DIR): string | undefined {
  if (!existsSync(join(dir, 'src'))) return undefined;
  const hash = createHash('sha256');
  const add = (path: string) => {
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort()) add(join(path, name));
      return;
    }
    hash.update(relative(dir, path)).update('\0').update(readFileSync(path)).update('\0');
  };
  for (const input of INPUTS) add(join(dir, input));
  return hash.digest('hex');
}

function builtHash(): string | undefined {
  return existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : undefined;
}

export function writeStamp(hash = consoleSourceHash()): void {
  if (hash) writeFileSync(STAMP, `${hash}\n`);
}

function viteBin(): string | undefined {
  try {
    return join(dirname(createRequire(join(CONSOLE_DIR, 'package.json')).resolve('vite/package.json')), 'bin/vite.js');
  } catch {
    return undefined;
  }
}

/**
 * Builds console/dist when its sources changed since the last build (`npm start` and the console tests call this).
 * Without the sources or without Vite (a production install), the shipped dist is used as it is. One build at a time
 * across processes: a lock file in console/, taken over when older than a build could take.
 */
export async function ensureConsoleBuilt(log: Log): Promise<void> {
  const hash = consoleSourceHash();
  if (!hash || hash === builtHash()) return;
  const vite = viteBin();
  if (!vite) {
    if (!existsSync(join(CONSOLE_DIST, 'index.html')))
      log.warn({}, 'the console is not built and Vite is not installed');
    return;
  }
  const release = await takeLock();
  try {
    if (consoleSourceHash() === builtHash()) return; // another process built it while this one waited
    log.info({ dir: CONSOLE_DIR }, 'building the console (its sources changed)');
    await promisify(execFile)(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
      cwd: CONSOLE_DIR,
      maxBuffer: 16 << 20,
    });
    writeStamp(hash);
  } finally {
    await release();
  }
}

async function takeLock(): Promise<() => Promise<void>> {
  for (;;) {
    try {
      const handle = await open(LOCK, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(LOCK, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const since = await stat(LOCK).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      );
      if (since > LOCK_STALE_MS) await rm(LOCK, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

// `node console-build.ts --stamp` after `vite build` (console's `npm run build`) records what was built.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--stamp')) writeStamp();
