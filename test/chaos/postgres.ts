// A PostgreSQL server of the chaos suite's own (Debian's binaries, its own data folder and port), so a fault can stop
// and restart it without touching the machine's server that the other tests share.
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT_DIR = '/usr/lib/postgresql';

function binaries(): string {
  const versions = existsSync(ROOT_DIR)
    ? readdirSync(ROOT_DIR).filter((name) => existsSync(join(ROOT_DIR, name, 'bin/pg_ctl')))
    : [];
  const newest = versions.sort((a, b) => Number(a) - Number(b)).at(-1);
  if (!newest) throw new Error(`no PostgreSQL server binaries under ${ROOT_DIR}: run .ci/run (it installs postgresql)`);
  return join(ROOT_DIR, newest, 'bin');
}

/** PostgreSQL refuses to run as root: as root, its commands run as the postgres user, who owns the folder. */
async function asServerUser(command: string, args: string[]): Promise<string> {
  const [file, argv] =
    process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  const { stdout } = await run(file, argv, { timeout: 120_000 });
  return stdout;
}

export class ChaosPostgres {
  readonly port: number;
  private readonly dataDir: string;
  private readonly bin = binaries();
  /** Stops and starts one at a time (faults may overlap). */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(dir: string, port: number) {
    this.dataDir = join(dir, 'pgdata');
    this.port = port;
  }

  /** initdb (trust on loopback) in `dir` and start on `port`. */
  static async create(dir: string, port: number): Promise<ChaosPostgres> {
    const server = new ChaosPostgres(dir, port);
    mkdirSync(dir, { recursive: true });
    if (process.getuid?.() === 0) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const uid = Number(stdout.trim());
      chownSync(dir, uid, uid);
    }
    await asServerUser(join(server.bin, 'initdb'), [
      '-D',
      server.dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
    ]);
    await server.startNow();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  start(): Promise<void> {
    return this.serially(async () => {
      if (!(await this.running())) await this.startNow();
    });
  }

  private async startNow(): Promise<void> {
    const options = `-p ${this.port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await asServerUser(join(this.bin, 'pg_ctl'), [
      '-D',
      this.dataDir,
      '-o',
      options,
      '-l',
      `${this.dataDir}.log`,
      '-w',
      'start',
    ]);
  }

  /** immediate: as a crash would (no checkpoint, every connection cut); the next start recovers from the WAL. */
  stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    return this.serially(async () => {
      if (await this.running())
        await asServerUser(join(this.bin, 'pg_ctl'), ['-D', this.dataDir, '-m', mode, '-w', 'stop']);
    });
  }

  async running(): Promise<boolean> {
    try {
      await asServerUser(join(this.bin, 'pg_ctl'), ['-D', this.dataDir, 'status']);
      return true;
    } catch {
      return false;
    }
  }
}
