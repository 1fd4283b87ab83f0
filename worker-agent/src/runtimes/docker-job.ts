// One job's container, from the moment it runs until its outcome is known, its output delivered and it is removed.
import type Docker from 'dockerode';
import { finished, type Readable } from 'node:stream';
import { failureCause, type CauseContext } from './failure-cause.ts';
import type { JobOutcome, LogBatcher, RunningJob, StopOutcome } from './runtime.ts';
import { after } from './shared.ts';

/** The last output follows the exit; an output stream that never ends (a daemon bug) must not hold the job open. */
const OUTPUT_DRAIN_MS = 5000;
/** How long Docker's OOM event may trail the exit it caused (it is recorded separately, sometimes after the exit). */
const OOM_EVENT_WAIT_MS = [100, 250, 500, 1000];
/** SIGKILL's exit status: what the kernel's OOM killer leaves, and also a `docker kill` from outside. */
const SIGKILL_EXIT = 137;

/** The HTTP status of a failed Docker API call; undefined when Docker was not reached. */
export function statusOf(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

/** The outcome of a container that is no longer running, as Docker recorded it; `cause` is what its output says went wrong. */
export function outcomeOf(info: Docker.ContainerInspectInfo, cause?: string): JobOutcome {
  const { Status, ExitCode: exitCode, OOMKilled } = info.State;
  if (Status === 'created') return { outcome: 'failed', error: 'the agent stopped before the job started' };
  if (exitCode === 0) return { outcome: 'completed', ...runTimes(info) };
  const limit = info.HostConfig.Memory ? ` (its limit is ${info.HostConfig.Memory} bytes)` : '';
  if (OOMKilled) {
    return { outcome: 'failed', exitCode, error: `killed for running out of memory${limit}`, ...runTimes(info) };
  }
  // Some hosts (nested cgroups) never deliver the OOM event to dockerd; a SIGKILL the agent did not send under a
  // memory limit is then most likely the OOM killer, and the user needs the limit to act on it.
  if (exitCode === SIGKILL_EXIT && info.HostConfig.Memory) {
    const error = `killed (SIGKILL), most likely for running out of memory${limit}`;
    return { outcome: 'failed', exitCode, error, ...runTimes(info) };
  }
  return {
    outcome: 'failed',
    exitCode,
    error: `exited with status ${exitCode}${cause === undefined ? '' : `: ${cause}`}`,
    ...runTimes(info),
  };
}

/** When the container ran, as Docker recorded it (this host's clock); a time it never set (year 1) is left out. */
export function runTimes(info: Docker.ContainerInspectInfo): Pick<JobOutcome, 'startedAt' | 'endedAt'> {
  const startedAt = Date.parse(info.State.StartedAt);
  const endedAt = Date.parse(info.State.FinishedAt);
  return { ...(startedAt > 0 && { startedAt }), ...(endedAt > 0 && { endedAt }) };
}

/**
 * The container's record once its exit is fully known: a SIGKILL exit (137) under a memory limit that Docker has not
 * (yet) marked OOMKilled is read again, because the kernel's OOM event reaches dockerd apart from the exit.
 */
async function inspectSettled(container: Docker.Container): Promise<Docker.ContainerInspectInfo> {
  let info = await container.inspect();
  for (const wait of OOM_EVENT_WAIT_MS) {
    if (info.State.ExitCode !== SIGKILL_EXIT || !info.HostConfig.Memory || info.State.OOMKilled) break;
    await new Promise((resolve) => setTimeout(resolve, wait));
    info = await container.inspect();
  }
  return info;
}

/** What failure-cause.ts needs of a container: the job's environment (from its config) and its work dir (mounted at its host path). */
export function causeContext(info: Docker.ContainerInspectInfo): CauseContext {
  const env = Object.fromEntries(
    info.Config.Env.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
  return { env, workDirs: [info.Config.WorkingDir] };
}

/** Removes a container, its anonymous volumes too; one that cannot be removed now is found by the next recover(). */
export async function removeContainer(container: Docker.Container): Promise<void> {
  await container.remove({ force: true, v: true }).catch(() => {});
}

/** The container's output stream, already feeding `logs`; the job watches it only for its end. */
export interface JobOutput {
  output: Readable;
  logs: LogBatcher;
}

export class DockerJob implements RunningJob {
  readonly jobId: string;
  readonly servicePort: number | undefined;
  readonly #container: Docker.Container;
  readonly #graceSeconds: number;
  readonly #cause: CauseContext;
  readonly #done: Promise<JobOutcome>;
  /** Set when the agent ends the job; decides the outcome whatever the exit status. */
  #stopped: JobOutcome | undefined;
  #ended = false;
  #cancelTimeout: () => void = () => {};
  readonly #output: Readable;
  /** Ends the wait on the container when the agent detaches from it. */
  readonly #detach = new AbortController();

  /** `timeoutAt` (epoch ms) fails the job as timed out if it is still running then. */
  constructor(
    jobId: string,
    container: Docker.Container,
    { output, logs }: JobOutput,
    options: { stopGraceMs: number; cause: CauseContext; timeoutAt?: number; servicePort?: number },
  ) {
    const { stopGraceMs, timeoutAt } = options;
    this.jobId = jobId;
    this.servicePort = options.servicePort;
    this.#container = container;
    this.#cause = options.cause;
    this.#output = output;
    // Docker counts the grace period in whole seconds.
    this.#graceSeconds = Math.ceil(stopGraceMs / 1000);
    if (timeoutAt !== undefined) {
      // If Docker cannot be reached to stop it, waiting on the container fails too and says so.
      this.#cancelTimeout = after(
        timeoutAt - Date.now(),
        () => void this.#end({ outcome: 'failed', error: 'timed out' }).catch(() => {}),
      );
    }
    this.#done = this.#watch(output, logs);
  }

  wait(): Promise<JobOutcome> {
    return this.#done;
  }

  async stop(reason: string, outcome: StopOutcome = 'cancelled'): Promise<void> {
    await this.#end({ outcome, error: reason });
  }

  /** The agent stops and leaves the container running, for the next agent to adopt: nothing of it is waited on. */
  detach(): void {
    this.#cancelTimeout();
    this.#detach.abort();
    this.#output.destroy();
  }

  /** Until its end is reported the ended container stays, so an agent restarted meanwhile still finds its outcome. */
  async release(): Promise<void> {
    await removeContainer(this.#container);
  }

  async #watch(output: Readable, logs: LogBatcher): Promise<JobOutcome> {
    let info: Docker.ContainerInspectInfo | undefined;
    let lost: string | undefined;
    try {
      await this.#container.wait({ abortSignal: this.#detach.signal });
      await drained(output);
      info = await inspectSettled(this.#container);
    } catch (error) {
      if (this.#detach.signal.aborted) return new Promise<JobOutcome>(() => {});
      lost = `lost track of the job's container: ${(error as Error).message}`;
    }
    this.#ended = true;
    this.#cancelTimeout();
    output.destroy();
    logs.end();
    if (this.#stopped) return { ...this.#stopped, ...(info && runTimes(info)) };
    return info ? outcomeOf(info, failureCause(logs.tail, this.#cause)) : { outcome: 'failed', error: lost };
  }

  /** docker stop: SIGTERM (through the container's init to the job), SIGKILL after the grace; the first stop's outcome stands. */
  async #end(outcome: JobOutcome): Promise<void> {
    if (!this.#ended && this.#stopped === undefined) {
      this.#stopped = outcome;
      await this.#container.stop({ t: this.#graceSeconds }).catch((error: unknown) => {
        // 304: it had already stopped; 404: it is already gone. Either way wait() has the rest.
        if (statusOf(error) !== 304 && statusOf(error) !== 404) throw error;
      });
    }
    await this.#done;
  }
}

function drained(output: Readable): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, OUTPUT_DRAIN_MS);
    finished(output, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
