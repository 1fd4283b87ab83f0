// One worker process of the inference pool and the watch on its memory and progress: onnxruntime allocates outside any
// JS heap and runs a session without yielding, so a graph that expands (Tile, Expand …) to gigabytes, or that computes
// without end, is stopped by killing its process, not by a limit it would obey.
import { type ChildProcess, fork } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { LoadReply, WorkerFailure, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';

const WORKER = fileURLToPath(new URL('./inference-worker.ts', import.meta.url));
/** How often a process with requests in flight has its resident memory read. */
const WATCH_MS = 50;
const PAGE_BYTES = 4096;

type Pending = { resolve: (reply: WorkerReply | LoadReply) => void; reject: (error: Error) => void };

export class InferenceProcess {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private readonly stopListeners: Array<() => void> = [];
  private readonly memoryBytes: number;
  private readonly stallMs: number;
  private readonly failure: (error: Pick<WorkerFailure, 'cause' | 'message'>) => Error;
  private watch: NodeJS.Timeout | undefined;
  /** Fires when a process with requests in flight has answered none for `stallMs`. */
  private stall: NodeJS.Timeout | undefined;
  /** Why the process ended, for the requests it leaves unanswered. */
  private ended: Pick<WorkerFailure, 'cause' | 'message'> | undefined;
  private closing = false;

  constructor(
    setup: WorkerSetup,
    limits: { memoryBytes: number; stallMs: number },
    failure: InferenceProcess['failure'],
  ) {
    this.memoryBytes = limits.memoryBytes;
    this.stallMs = limits.stallMs;
    this.failure = failure;
    // Advanced serialization carries typed arrays (images in, masks and depth out) as they are.
    this.child = fork(WORKER, [JSON.stringify(setup)], {
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (reply: WorkerReply | LoadReply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      waiter?.resolve(reply);
      if (this.pending.size === 0) this.unwatch();
      else this.restartStall();
    });
    this.child.on('error', (error) =>
      this.stop({ cause: 'internal', message: `inference worker failed: ${error.message}` }),
    );
    this.child.on('exit', (code, signal) =>
      this.stop(
        this.ended ?? { cause: 'internal', message: `inference worker stopped (${signal ?? `exit code ${code}`})` },
      ),
    );
  }

  /** Whether it has requests in flight. */
  get busy(): boolean {
    return this.pending.size > 0;
  }

  get stopped(): boolean {
    return this.ended !== undefined || this.closing;
  }

  onStop(listener: () => void): void {
    this.stopListeners.push(listener);
  }

  ask(request: Extract<WorkerRequest, { id: number }>): Promise<WorkerReply | LoadReply> {
    if (this.stopped)
      return Promise.reject(
        this.failure(this.ended ?? { cause: 'internal', message: 'the inference worker is closing' }),
      );
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      this.child.send(request);
      this.startWatch();
      if (!this.stall) this.restartStall();
    });
  }

  tell(request: Extract<WorkerRequest, { kind: 'release' }>): void {
    if (!this.stopped) this.child.send(request);
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.closing = true;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }

  private startWatch(): void {
    if (this.watch || !Number.isFinite(this.memoryBytes) || this.child.pid === undefined) return;
    const statm = `/proc/${this.child.pid}/statm`;
    this.watch = setInterval(() => {
      void readFile(statm, 'utf8').then(
        (text) => {
          const rss = Number(text.split(' ')[1]) * PAGE_BYTES;
          if (rss > this.memoryBytes)
            this.kill(
              `the model took more than the ${Math.round(this.memoryBytes / 2 ** 20)} MiB of memory an inference worker may use, and was stopped`,
            );
        },
        () => {
          // no /proc (not Linux), or the process is gone
          clearInterval(this.watch);
          this.watch = undefined;
        },
      );
    }, WATCH_MS);
    this.watch.unref();
  }

  /** onnxruntime runs a session on the process's JS thread: one that never returns is stopped only by killing it. */
  private restartStall(): void {
    clearTimeout(this.stall);
    this.stall = setTimeout(
      () => this.kill(`the model gave no answer for ${this.stallMs / 1000} s, and was stopped`),
      this.stallMs,
    );
    this.stall.unref();
  }

  private kill(message: string): void {
    if (this.stopped) return;
    this.ended = { cause: 'model', message };
    this.child.kill('SIGKILL');
  }

  private unwatch(): void {
    clearInterval(this.watch);
    this.watch = undefined;
    clearTimeout(this.stall);
    this.stall = undefined;
  }

  private stop(reason: Pick<WorkerFailure, 'cause' | 'message'>): void {
    this.unwatch();
    this.ended ??= reason;
    // An IPC error leaves the process running: it is of no further use.
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    for (const waiter of this.pending.values()) waiter.reject(this.failure(reason));
    this.pending.clear();
    for (const listener of this.stopListeners.splice(0)) listener();
  }
}
