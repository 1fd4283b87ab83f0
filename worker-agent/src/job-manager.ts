// The agent's jobs: starts what the control plane assigns on the runtime, streams their output back, reports
// how they ended, and keeps that report (and output) while the socket is down so nothing is lost on a reconnect.
// Only once the report has gone out does the runtime drop what would let a restarted agent report it again, and
// the job's work dir start its keep time. A job with outputs that exited 0 is reported completed only once its
// outputs are uploaded. A service job (JobSpec.service) is announced (job.service) once it answers its health check,
// and again after each reconnect; it fails when it does not answer in time or when it exits.
import { MAX_RUN_SECONDS, type AgentMessage, type ServerMessage } from '@vp/protocol';
import { fetchInputs, watchCheckpoint, type JobFilesOptions } from './job-files.ts';
import { OutputError, uploadOutputs } from './job-outputs.ts';
import type { Logger } from './log.ts';
import { serviceUrl, waitHealthy } from './service-health.ts';
import {
  jobFiles,
  type JobFiles,
  type JobOutcome,
  type JobRuntime,
  type LogSink,
  type RunningJob,
} from './runtimes/runtime.ts';
import { sanitizeCause } from './runtimes/failure-cause.ts';
import type { WorkDirRetention } from './work-dir-retention.ts';

/** Output lines held while disconnected; beyond this they are dropped (the agent's log says how many). */
export const MAX_HELD_LOG_LINES = 20_000;

type Assign = Extract<ServerMessage, { type: 'job.assign' }>;
type Cancel = Extract<ServerMessage, { type: 'job.cancel' }>;

interface Tracked {
  attempt: number;
  gpuIndexes: number[];
  /** Its work dir (relative to the work root), checkpoint and outputs; unknown for a job an older agent started. */
  files?: JobFiles;
  /** Undefined while the runtime is starting it. */
  job?: RunningJob;
  /** A cancel that arrived while it was starting. */
  cancelReason?: string;
  /** Stops its checkpoint uploads. */
  stopWatching?: () => void;
  /** Stops its output uploads (a cancel, the agent stopping). */
  readonly uploads: AbortController;
  /** A service job's port on this host, once it answered its health check. */
  servicePort?: number;
  /** Aborted when the job ends: stops waiting for its health check. */
  readonly ended: AbortController;
  /** When this agent started it (epoch ms), for a runtime that does not say. */
  startedAt?: number;
  /** When it ended (epoch ms): its job.finished says how long ago, whenever it goes out. */
  endedAt?: number;
  /**
   * A newer attempt of the job, assigned here while this one still ran (the control plane gave this one up meanwhile):
   * it starts once this one has stopped, and this one's end is not reported (it would end the newer attempt).
   */
  next?: Assign;
}

export class JobManager {
  readonly #runtime: JobRuntime;
  readonly #log: Logger;
  /** Delivers a message now; false when the socket is not ready (the message is then kept and sent later). */
  readonly #deliver: (message: AgentMessage) => boolean;
  /** Every job the control plane should hear of: running, or ended with its report not yet delivered. */
  readonly #jobs = new Map<string, Tracked>();
  #held: AgentMessage[] = [];
  #heldLines = 0;
  #droppedLines = 0;
  /** Where inputs come from and checkpoints go; absent: jobs with inputs or checkpoints fail (tests of the runtime alone). */
  readonly #files: JobFilesOptions | undefined;
  readonly #retention: WorkDirRetention | undefined;
  /** The agent is stopping: a job that finishes starting now is left to the next agent at once. */
  #detached = false;
  /** The address the control plane reaches this host's services at; undefined while not connected. */
  readonly #serviceHost: () => string | undefined;
  readonly #onRecovered: () => void;

  constructor(
    runtime: JobRuntime,
    log: Logger,
    deliver: (message: AgentMessage) => boolean,
    options: {
      files?: JobFilesOptions;
      retention?: WorkDirRetention;
      serviceHost?: () => string | undefined;
      /** Told of each job adopted from an earlier agent process (the agent's metrics). */
      onRecovered?: () => void;
    } = {},
  ) {
    this.#onRecovered = options.onRecovered ?? (() => undefined);
    this.#runtime = runtime;
    this.#log = log;
    this.#deliver = deliver;
    this.#files = options.files;
    this.#retention = options.retention;
    this.#serviceHost = options.serviceHost ?? (() => undefined);
  }

  /** Before the first connection: adopts (or reports as ended) what an earlier agent process left running. */
  async recover(): Promise<void> {
    for (const { jobId, attempt, job, files } of await this.#runtime.recover((id) => this.#sink(id))) {
      this.#log('info', 'recovered a job from before the restart', { jobId, attempt });
      this.#onRecovered();
      const tracked: Tracked = {
        attempt,
        gpuIndexes: [],
        job,
        files,
        uploads: new AbortController(),
        ended: new AbortController(),
      };
      // An adopted trainer keeps uploading its checkpoint, so a later host loss still resumes from a recent one.
      if (files && this.#files) tracked.stopWatching = watchCheckpoint(this.#files, { jobId, attempt, spec: files });
      this.#jobs.set(jobId, tracked);
      this.#watch(jobId, job);
      this.#serve(jobId, tracked, job);
    }
  }

  /** For hello: what this agent knows of, so the server neither loses nor re-assigns it. */
  known(): Array<{ jobId: string; attempt: number; gpuIndexes: number[] }> {
    return [...this.#jobs].map(([jobId, tracked]) => ({
      jobId,
      attempt: tracked.attempt,
      gpuIndexes: tracked.gpuIndexes,
    }));
  }

  get running(): number {
    return this.#jobs.size;
  }

  /** The work dirs of the jobs known here: never swept. */
  workDirs(): string[] {
    return [...this.#jobs.values()].flatMap((tracked) => (tracked.files === undefined ? [] : [tracked.files.workDir]));
  }

  /** After a welcome: sends what was held while the socket was down, in order. */
  connected(): void {
    const held = this.#held;
    this.#held = [];
    this.#heldLines = 0;
    if (this.#droppedLines > 0)
      this.#log('warn', 'output lines were dropped while disconnected', { lines: this.#droppedLines });
    this.#droppedLines = 0;
    for (const message of held) this.#send(message);
    // The control plane may reach this host at another address now, and must hear of its services again anyway.
    for (const jobId of this.#jobs.keys()) this.#announce(jobId);
  }

  async assign(message: Assign): Promise<void> {
    const { jobId, attempt, spec } = message;
    const earlier = this.#jobs.get(jobId);
    if (earlier && earlier.attempt < attempt && earlier.endedAt === undefined) {
      this.#log('info', 'a newer attempt waits for the earlier one to stop', {
        jobId,
        attempt,
        earlier: earlier.attempt,
      });
      earlier.next = message;
      this.cancel({ type: 'job.cancel', jobId, reason: 'a newer attempt of the job was assigned to this host' });
      return;
    }
    if (earlier) {
      this.#log('warn', 'ignored a repeated assignment', { jobId, attempt });
      return;
    }
    const tracked: Tracked = {
      attempt,
      gpuIndexes: spec.gpus.indexes ?? [],
      files: jobFiles(spec),
      uploads: new AbortController(),
      ended: new AbortController(),
    };
    this.#jobs.set(jobId, tracked);
    let job: RunningJob;
    try {
      if ((spec.inputs?.length || spec.checkpoint || spec.outputs?.length) && !this.#files)
        throw new Error('this agent takes no job files');
      // Finished jobs' kept work dirs give way to this one where the disk runs short.
      await this.#retention
        ?.makeRoom()
        .catch((error: unknown) =>
          this.#log('warn', 'could not make room for a job', { jobId, error: (error as Error).message }),
        );
      if (this.#files) await fetchInputs(this.#files, spec);
      job = await this.#runtime.start({ jobId, attempt, spec }, this.#sink(jobId));
    } catch (error) {
      this.#log('error', 'a job could not start', { jobId, error: (error as Error).message });
      // Shown to the job's workspace: without this host's paths (ENOSPC names the file it could not write) or secrets.
      const cause = sanitizeCause((error as Error).message, { workDirs: [], env: spec.env });
      this.#report(jobId, { outcome: 'failed', error: `the job could not start: ${cause}`, notStarted: true });
      return;
    }
    tracked.job = job;
    tracked.startedAt = Date.now();
    if (this.#detached) return job.detach();
    if (this.#files) tracked.stopWatching = watchCheckpoint(this.#files, { jobId, attempt, spec });
    this.#send({ type: 'job.accepted', jobId });
    this.#log('info', 'job started', { jobId, attempt });
    this.#watch(jobId, job);
    if (tracked.cancelReason !== undefined) void job.stop(tracked.cancelReason);
    else this.#serve(jobId, tracked, job);
  }

  cancel(message: Cancel): void {
    const tracked = this.#jobs.get(message.jobId);
    if (!tracked) {
      // Unknown here (its assignment was lost): saying it ended lets the server close it at once.
      this.#send({ type: 'job.finished', jobId: message.jobId, outcome: 'cancelled', error: message.reason });
      return;
    }
    this.#log('info', 'cancelling a job', { jobId: message.jobId, reason: message.reason });
    tracked.uploads.abort(message.reason);
    if (tracked.job) void tracked.job.stop(message.reason);
    else tracked.cancelReason = message.reason;
  }

  /** Stops every job (the host was disconnected or its key revoked) and waits until they have ended. */
  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.#jobs.values()].flatMap(({ job }) => (job ? [job.stop(reason)] : [])));
  }

  /** The agent is stopping, its jobs go on: stop following them (a restarted agent adopts them) and their uploads. */
  detachAll(): void {
    this.#detached = true;
    for (const tracked of this.#jobs.values()) {
      tracked.stopWatching?.();
      // A job whose outputs were being uploaded has ended: the next agent finds it so and uploads them again.
      tracked.uploads.abort('the agent is stopping');
      tracked.ended.abort();
      tracked.job?.detach();
    }
  }

  /** A service job: its health check waited for (the job fails past its start time), then announced. */
  #serve(jobId: string, tracked: Tracked, job: RunningJob): void {
    const service = tracked.files?.service;
    const port = job.servicePort;
    if (!service || port === undefined) return;
    waitHealthy(
      `http://127.0.0.1:${port}${service.healthPath}`,
      service.startSeconds * 1000,
      tracked.ended.signal,
    ).then(
      () => {
        tracked.servicePort = port;
        this.#log('info', 'service ready', { jobId, port });
        this.#announce(jobId);
      },
      (error: unknown) => {
        if (!tracked.ended.signal.aborted)
          void job.stop(`the service did not start: ${(error as Error).message}`, 'failed');
      },
    );
  }

  /** job.service for a ready service, at the address the control plane reaches this host at (once connected). */
  #announce(jobId: string): void {
    const port = this.#jobs.get(jobId)?.servicePort;
    const host = this.#serviceHost();
    if (port !== undefined && host !== undefined)
      this.#send({ type: 'job.service', jobId, url: serviceUrl(host, port) });
  }

  #watch(jobId: string, job: RunningJob): void {
    job.wait().then(
      async (ended) => {
        const tracked = this.#jobs.get(jobId);
        tracked?.ended.abort();
        // A service runs until it is stopped: one that exits on its own, even with status 0, has failed.
        const outcome: JobOutcome =
          tracked?.files?.service && ended.outcome === 'completed'
            ? { outcome: 'failed', exitCode: 0, error: 'the service exited with status 0' }
            : ended;
        const delivered = outcome.outcome === 'completed' ? await this.#uploadOutputs(jobId, outcome) : outcome;
        if (delivered) this.#report(jobId, delivered);
      },
      (error: unknown) =>
        this.#report(jobId, { outcome: 'failed', error: `the runtime lost the job: ${(error as Error).message}` }),
    );
  }

  /**
   * After a job exited 0: its outputs, uploaded. Its outcome: completed, failed when an output is missing or could not
   * be uploaded, cancelled when a cancel came meanwhile; undefined when the agent is stopping (the next one uploads).
   */
  async #uploadOutputs(jobId: string, completed: JobOutcome): Promise<JobOutcome | undefined> {
    const tracked = this.#jobs.get(jobId);
    if (!tracked?.files?.outputs?.length) return completed;
    if (!this.#files) return { outcome: 'failed', error: 'this agent takes no job files' };
    const { signal } = tracked.uploads;
    const say = (line: string) => this.#sink(jobId)({ stream: 'stdout', lines: [line] });
    try {
      await uploadOutputs(this.#files, { jobId, attempt: tracked.attempt, files: tracked.files, say, signal });
      return completed;
    } catch (error) {
      if (this.#detached) return undefined;
      if (signal.aborted) return { outcome: 'cancelled', error: String(signal.reason) };
      const message =
        error instanceof OutputError ? error.message : `uploading its outputs failed: ${(error as Error).message}`;
      say(message);
      return { outcome: 'failed', exitCode: 0, error: message };
    }
  }

  /** Its end, with how long it ran (start to exit, by this host's clock) when the runtime or this agent knows its start. */
  #report(jobId: string, ended: JobOutcome & { notStarted?: true }): void {
    const tracked = this.#jobs.get(jobId);
    tracked?.stopWatching?.();
    if (tracked?.next) return this.#superseded(jobId, tracked, tracked.next);
    const { startedAt = tracked?.startedAt, endedAt = Date.now(), ...outcome } = ended;
    if (tracked) tracked.endedAt = endedAt;
    this.#log('info', 'job ended', { jobId, ...outcome });
    const ran =
      startedAt === undefined
        ? {}
        : { ranSeconds: Math.min(MAX_RUN_SECONDS, Math.max(0, (endedAt - startedAt) / 1000)) };
    // The job stays known (listed in hello) until this report is delivered.
    this.#send({
      type: 'job.finished',
      jobId,
      ...outcome,
      ...(outcome.error && { error: outcome.error.slice(0, 4096) }),
      ...ran,
    });
  }

  /** A job.finished as it goes out: how long ago the job ended, counted now (it may have waited for the socket). */
  #stamped(message: AgentMessage): AgentMessage {
    if (message.type !== 'job.finished') return message;
    const endedAt = this.#jobs.get(message.jobId)?.endedAt;
    if (endedAt === undefined) return message;
    return { ...message, endedSecondsAgo: Math.min(MAX_RUN_SECONDS, Math.max(0, (Date.now() - endedAt) / 1000)) };
  }

  #sink(jobId: string): LogSink {
    return ({ stream, lines }) => this.#send({ type: 'job.log', jobId, stream, lines });
  }

  #send(message: AgentMessage): void {
    if (this.#held.length === 0 && this.#deliver(this.#stamped(message))) {
      if (message.type === 'job.finished') this.#reported(message.jobId);
      return;
    }
    if (message.type === 'job.log') {
      if (this.#heldLines + message.lines.length > MAX_HELD_LOG_LINES) {
        this.#droppedLines += message.lines.length;
        return;
      }
      this.#heldLines += message.lines.length;
    }
    this.#held.push(message);
  }

  /** Its end went out: the runtime's leftovers of it go, and its work dir's keep time starts. */
  #reported(jobId: string): void {
    const tracked = this.#jobs.get(jobId);
    this.#jobs.delete(jobId);
    if (tracked) void this.#forget(jobId, tracked);
  }

  /** An attempt a newer one replaced has stopped: its leftovers go (they share the job's id), then the newer starts. */
  #superseded(jobId: string, tracked: Tracked, next: Assign): void {
    this.#log('info', 'an earlier attempt stopped; starting the newer one', { jobId, attempt: next.attempt });
    void (async () => {
      await this.#forget(jobId, tracked);
      if (this.#jobs.get(jobId) === tracked) this.#jobs.delete(jobId);
      await this.assign(next);
    })();
  }

  async #forget(jobId: string, tracked: Tracked): Promise<void> {
    try {
      await tracked.job?.release();
      if (tracked.files !== undefined) await this.#retention?.ended(tracked.files.workDir);
    } catch (error) {
      this.#log('warn', 'could not clean up after a job', { jobId, error: (error as Error).message });
    }
  }
}
