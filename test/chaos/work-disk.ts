// An agent's work dir on a small tmpfs of its own, so a fault can fill its disk (ENOSPC for the agent and its jobs)
// without touching the machine's. Mounting needs root; elsewhere the fault is left out (the suite says so).
import { execFile } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const FILL_CHUNK = Buffer.alloc(8 * 2 ** 20);

export class WorkDisk {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  static canMount(): boolean {
    return process.getuid?.() === 0;
  }

  static async mount(dir: string, sizeMiB: number): Promise<WorkDisk> {
    mkdirSync(dir, { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir]);
    return new WorkDisk(dir);
  }

  private get filler(): string {
    return join(this.dir, '.chaos-fill');
  }

  /** Writes until the disk is full. */
  fill(): void {
    const fd = openSync(this.filler, 'w');
    try {
      for (;;) writeSync(fd, FILL_CHUNK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    } finally {
      closeSync(fd);
    }
  }

  free(): void {
    rmSync(this.filler, { force: true });
  }

  async unmount(): Promise<void> {
    await run('umount', ['-l', this.dir]).catch(() => undefined);
  }
}
