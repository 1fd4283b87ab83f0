// The appliance's processes as the chaos suite runs them, supervised as docker-compose's `restart: unless-stopped` and
// the worker's systemd unit do (one that exits by itself is started again a second later); a fault kills one (SIGKILL
// or SIGTERM) and keeps it down until it is started again. Each keeps the tail of its output for a failure report.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KEPT_OUTPUT = 20_000;
const SIGTERM_GRACE_MS = 20_000;
const RESTART_DELAY_MS = 1000;

export class ManagedProcess {
  readonly name: string;
  private readonly args: string[];
  private readonly env: NodeJS.ProcessEnv;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private tail = '';
  /** Killed by a fault: not restarted until start(). */
  private held = false;

  constructor(name: string, args: string[], env: NodeJS.ProcessEnv) {
    this.name = name;
    this.args = args;
    this.env = env;
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.alive ? this.child!.pid : undefined;
  }

  output(): string {
    return this.tail;
  }

  start(): void {
    this.held = false;
    if (this.alive) return;
    const child = spawn(process.execPath, this.args, { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: string) => {
      this.tail = (this.tail + chunk).slice(-KEPT_OUTPUT);
    };
    child.stdout!.setEncoding('utf8').on('data', keep);
    child.stderr!.setEncoding('utf8').on('data', keep);
    this.exited = new Promise((resolve) => child.once('close', () => resolve()));
    this.child = child;
    void this.exited.then(() =>
      setTimeout(() => {
        if (!this.held && this.child === child) this.start();
      }, RESTART_DELAY_MS),
    );
  }

  /** SIGKILL at once, or SIGTERM with a grace period before SIGKILL; resolves once it has exited. */
  async kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    this.held = true;
    if (!this.alive) return;
    this.child!.kill(signal);
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), signal === 'SIGTERM' ? SIGTERM_GRACE_MS : 0);
    await this.exited;
    clearTimeout(timer);
  }
}
