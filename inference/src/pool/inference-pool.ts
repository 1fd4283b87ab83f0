import type { ExecutionProvider, ModelInfo, Prediction, PredictOptions } from '../index.ts';
import type { LoadReply, WorkerFailure, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';
import { InferenceProcess } from './inference-process.ts';

/** Images with more pixels are refused from their header, before decoding (50 MP: 150 MB of RGB). */
export const MAX_IMAGE_PIXELS = 50_000_000;

/** Room a worker process has past `cacheBytes` before it is killed: its own baseline, a run's tensors, a decoded image. */
export const WORKER_BASELINE_BYTES = 256 * 2 ** 20;

/** What a live worker process counts in the cache besides its sessions: Node, onnxruntime and libvips (about 129 MB measured). */
const PROCESS_BYTES = 128 * 2 ** 20;

/** A session's footprint until its load is measured: the weights twice (file buffer, initializers) plus activations. */
const ACTIVATION_BYTES = 64 * 2 ** 20;
export const sessionBytes = (fileBytes: number) => 2 * fileBytes + ACTIVATION_BYTES;

/** Files refused at load, remembered (their key names their bytes) so that asking again starts no process; forgotten all at once past this many. */
const MAX_REFUSED = 1000;

export interface PoolOptions {
  /** Worker processes per partition (a workspace): its sessions are spread over them. */
  workers: number;
  /** onnxruntime intra-op threads per session. */
  intraOpThreads: number;
  /** Whether onnxruntime's idle threads spin (see SessionOptions.spinning). */
  spinning: boolean;
  /** Memory the resident sessions may take together (measured at load); least recently used ones are released first. */
  cacheBytes: number;
  /**
   * Resident memory one worker process may reach (sessions, a run's tensors, decoded images) before it is killed and
   * its requests fail as the model's; default cacheBytes plus the process's own baseline.
   */
  workerMemoryBytes?: number;
  /** A worker process with requests in flight that answers none for this long is killed (default 60 s). */
  workerStallMs?: number;
  /** Default cpu. */
  executionProvider?: ExecutionProvider;
  /**
   * When set, a request that arrives while its model is already in use goes to the less busy of two more sessions of
   * the model ("lanes"), each with this many intra-op threads and no spinning, in processes of their own; a lone
   * request keeps the main session and all its threads. Two processes with half the threads each serve concurrent
   * clients faster than one with all of them: each process decodes, letterboxes and runs NMS on its JS thread between
   * its session's runs, which the other's session overlaps (yolo11n, 640 px, 2 cores: 32.6–34.1 img/s against
   * 24.1–25.4 for one 2-thread session, 4 clients).
   */
  laneThreads?: number;
  /** A lane session unused this long is released, and its process goes when that empties it (default 60 s). */
  laneIdleMs?: number;
}

/** Sessions for overlapping requests per model (see PoolOptions.laneThreads). */
const LANES = 2;

/** The inference's failure, for the caller to map: 'image' is the client's (400), 'model' the model's (its file or what it does), 'internal' ours. */
export class InferenceError extends Error {
  readonly kind: 'image' | 'model' | 'internal';
  constructor(kind: InferenceError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

/** An ONNX file to run: its identity (blob key), the local file and its size; partition: whose processes run it. */
export interface Artifact {
  key: string;
  file: string;
  bytes: number;
  /** A workspace's id: its models run in worker processes of their own. Default: one shared partition. */
  partition?: string;
}

interface Resident {
  worker: InferenceProcess;
  /** The artifact's key: what its process calls the session. */
  sessionKey: string;
  bytes: number;
  lastUsed: number;
  running: number;
  /** A lane's release once it has been idle for laneIdleMs. */
  idleRelease?: NodeJS.Timeout;
  /** False while a lane's session loads: a request sent to it then would wait for its process to start. */
  ready?: boolean;
}

/**
 * Worker processes that decode and run ONNX sessions, apart per partition (workspace): a model that crashes, starves
 * or floods its process holds up only its own workspace's predicts, and a process past `workerMemoryBytes` is killed.
 * Each session lives in one process of its partition (onnxruntime runs its requests concurrently there), placed on
 * the one holding the fewest bytes; sessions are evicted least recently used first once their measured memory passes
 * `cacheBytes`, and a process left without sessions exits.
 */
export class InferencePool {
  private readonly options: PoolOptions;
  private readonly partitions = new Map<string, InferenceProcess[]>();
  private readonly resident = new Map<string, Resident>();
  private readonly refused = new Map<string, string>();
  private nextId = 1;
  private closed = false;

  constructor(options: PoolOptions) {
    this.options = options;
  }

  async run(
    artifact: Artifact,
    image: Uint8Array,
    options: PredictOptions,
    maxPixels: number,
  ): Promise<{ prediction: Prediction; info: ModelInfo }> {
    this.usable(artifact);
    const [key, session] =
      this.options.laneThreads && this.inUse(artifact)
        ? this.leastBusy(artifact)
        : [artifact.key, this.place(artifact)];
    session.running += 1;
    session.lastUsed = performance.now();
    this.evict(key);
    const request: WorkerRequest = {
      kind: 'run',
      id: this.nextId++,
      sessionKey: artifact.key,
      file: artifact.file,
      image,
      options,
      maxPixels,
    };
    try {
      const reply = (await session.worker.ask(request)) as WorkerReply;
      if (!reply.ok) throw this.failed(artifact, reply);
      this.measured(artifact, session, reply.footprintBytes);
      return { prediction: reply.prediction, info: reply.info };
    } finally {
      session.running -= 1;
      session.lastUsed = performance.now();
      if (key !== artifact.key) this.releaseWhenIdle(key, session);
    }
  }

  /** Loads the artifact's session before any run; rejects with InferenceError('model') when it does not load. */
  async load(artifact: Artifact): Promise<ModelInfo> {
    this.usable(artifact);
    const session = this.place(artifact);
    session.running += 1;
    try {
      return await this.loadInto(artifact, session);
    } catch (error) {
      if (this.resident.get(artifact.key) === session) this.resident.delete(artifact.key);
      throw error;
    } finally {
      session.running -= 1;
    }
  }

  /** Has the session's process load the artifact; rejects with the failure's InferenceError when it does not load. */
  private async loadInto(artifact: Artifact, session: Resident): Promise<ModelInfo> {
    const request: WorkerRequest = { kind: 'load', id: this.nextId++, sessionKey: artifact.key, file: artifact.file };
    const reply = (await session.worker.ask(request)) as LoadReply;
    if (!reply.ok) throw this.failed(artifact, reply);
    this.measured(artifact, session, reply.footprintBytes);
    return reply.info;
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = [...this.partitions.values()].flat();
    this.partitions.clear();
    await Promise.all(workers.map((worker) => worker.close()));
  }

  private usable(artifact: Artifact): void {
    if (this.closed) throw new InferenceError('internal', 'the inference pool is closed');
    const refused = this.refused.get(artifact.key);
    if (refused !== undefined) throw new InferenceError('model', refused);
  }

  private failed(artifact: Artifact, failure: WorkerFailure): InferenceError {
    if (failure.invalidFile) {
      if (this.refused.size >= MAX_REFUSED) this.refused.clear();
      this.refused.set(artifact.key, failure.message);
      for (const [key, session] of this.resident) if (session.sessionKey === artifact.key) this.resident.delete(key);
      this.closeEmpty();
    }
    return new InferenceError(failure.cause, failure.message);
  }

  /** The session's bytes become what its load and runs measured (never less than the file it holds). */
  private measured(artifact: Artifact, session: Resident, footprintBytes: number): void {
    session.bytes = Math.max(artifact.bytes, footprintBytes);
    this.evict(artifact.key);
  }

  /** The artifact's main session, placed on the process of its partition holding the fewest bytes. */
  private place(artifact: Artifact): Resident {
    const { workers, intraOpThreads, spinning } = this.options;
    return this.placed(artifact, artifact.key, artifact.partition ?? '', workers, { intraOpThreads, spinning });
  }

  /** Whether any session of the artifact runs a request now. */
  private inUse(artifact: Artifact): boolean {
    return [...this.resident.values()].some((session) => session.sessionKey === artifact.key && session.running > 0);
  }

  /**
   * Of the artifact's main session and its loaded lanes (see PoolOptions.laneThreads), the one running the fewest
   * requests, and its key. Lanes start loading with the first overlap, each in a process of its own; until a lane is
   * loaded the others serve: a request sent to a starting lane would wait for a process to start and a model to load.
   */
  private leastBusy(artifact: Artifact): [string, Resident] {
    const candidates: Array<[string, Resident]> = [
      [artifact.key, this.place(artifact)],
      ...this.lanes(artifact).filter(([, lane]) => lane.ready),
    ];
    return candidates.reduce((best, candidate) => (candidate[1].running < best[1].running ? candidate : best));
  }

  private lanes(artifact: Artifact): Array<[string, Resident]> {
    return Array.from({ length: LANES }, (_, lane): [string, Resident] => {
      const key = `${artifact.key}\0lane ${lane}`;
      const known = this.resident.get(key);
      if (known && !known.worker.stopped) return [key, known];
      const partition = `${artifact.partition ?? ''}\0lane ${lane}`;
      const setup = { intraOpThreads: this.options.laneThreads!, spinning: false };
      const session = this.placed(artifact, key, partition, 1, setup);
      session.ready = false;
      void this.warm(artifact, key, session);
      return [key, session];
    });
  }

  /** Loads a lane's session before it takes requests; a lane that does not load is dropped (the others serve). */
  private async warm(artifact: Artifact, key: string, lane: Resident): Promise<void> {
    lane.running += 1;
    try {
      await this.loadInto(artifact, lane);
      lane.ready = true;
    } catch {
      if (this.resident.get(key) === lane) this.resident.delete(key);
      this.closeEmpty();
    } finally {
      lane.running -= 1;
      lane.lastUsed = performance.now();
    }
    if (lane.ready) this.releaseWhenIdle(key, lane);
  }

  /** A burst's lanes do not hold their memory long after it: each goes once unused for laneIdleMs. */
  private releaseWhenIdle(key: string, lane: Resident): void {
    clearTimeout(lane.idleRelease);
    lane.idleRelease = setTimeout(() => {
      if (this.resident.get(key) !== lane || lane.running > 0) return;
      this.resident.delete(key);
      lane.worker.tell({ kind: 'release', sessionKey: lane.sessionKey });
      this.closeEmpty();
    }, this.options.laneIdleMs ?? 60_000).unref();
  }

  private placed(
    artifact: Artifact,
    key: string,
    partition: string,
    count: number,
    threads: Pick<WorkerSetup, 'intraOpThreads' | 'spinning'>,
  ): Resident {
    let session = this.resident.get(key);
    if (!session || session.worker.stopped) {
      // Processes start with their partition's first predict: a control plane that never predicts never loads onnxruntime.
      let workers = this.partitions.get(partition);
      if (!workers) this.partitions.set(partition, (workers = []));
      while (workers.length < count) workers.push(this.spawn(partition, threads));
      const held = (worker: InferenceProcess) =>
        [...this.resident.values()]
          .filter((other) => other.worker === worker)
          .reduce((sum, other) => sum + other.bytes, 0);
      const worker = workers.reduce((best, candidate) => (held(candidate) < held(best) ? candidate : best));
      session = { worker, sessionKey: artifact.key, bytes: sessionBytes(artifact.bytes), lastUsed: 0, running: 0 };
      this.resident.set(key, session);
    }
    return session;
  }

  /**
   * Releases idle sessions, least recently used first, until the measured total fits (the one in use always stays); a
   * live process counts too, so that many workspaces with small models do not keep a process each.
   */
  private evict(keep: string): void {
    const processes = [...this.partitions.values()].reduce((sum, workers) => sum + workers.length, 0);
    let total = [...this.resident.values()].reduce((sum, session) => sum + session.bytes, processes * PROCESS_BYTES);
    const idle = [...this.resident.entries()]
      .filter(([key, session]) => key !== keep && session.running === 0)
      .sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    for (const [key, session] of idle) {
      if (total <= this.options.cacheBytes) break;
      this.resident.delete(key);
      total -= session.bytes;
      session.worker.tell({ kind: 'release', sessionKey: session.sessionKey });
      const emptied =
        !session.worker.busy && ![...this.resident.values()].some((other) => other.worker === session.worker);
      if (emptied) total -= PROCESS_BYTES;
    }
    this.closeEmpty();
  }

  /** A process that holds no session and runs nothing goes, giving back its baseline memory. */
  private closeEmpty(): void {
    const used = new Set([...this.resident.values()].map((session) => session.worker));
    for (const [partition, workers] of this.partitions) {
      const kept = workers.filter((worker) => used.has(worker) || worker.busy);
      for (const worker of workers) if (!kept.includes(worker)) void worker.close();
      if (kept.length > 0) this.partitions.set(partition, kept);
      else this.partitions.delete(partition);
    }
  }

  private spawn(partition: string, threads: Pick<WorkerSetup, 'intraOpThreads' | 'spinning'>): InferenceProcess {
    const { executionProvider, cacheBytes, workerMemoryBytes, workerStallMs } = this.options;
    const setup: WorkerSetup = { ...threads, executionProvider };
    const limits = {
      memoryBytes: workerMemoryBytes ?? cacheBytes + WORKER_BASELINE_BYTES,
      stallMs: workerStallMs ?? 60_000,
    };
    const worker = new InferenceProcess(setup, limits, (error) => new InferenceError(error.cause, error.message));
    // A process that dies takes its sessions with it; the partition's next request starts another.
    worker.onStop(() => {
      for (const [key, session] of this.resident) if (session.worker === worker) this.resident.delete(key);
      const workers = this.partitions.get(partition);
      if (workers?.includes(worker)) {
        const left = workers.filter((other) => other !== worker);
        if (left.length > 0) this.partitions.set(partition, left);
        else this.partitions.delete(partition);
      }
    });
    return worker;
  }
}
