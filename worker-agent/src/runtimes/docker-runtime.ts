// Runs each job in a Docker container. The job's work dir is bind-mounted at the same path inside the container
// (and is its working dir), so any path a job prints or writes into its files means the same on the host. The
// job's command is the container's Cmd, run without a shell; an image's ENTRYPOINT (NVIDIA's images set one up,
// then exec their arguments) still comes first. Docker's init is PID 1, so the job gets the SIGTERM of a stop
// (a process that is PID 1 ignores it) and its orphans are reaped. Containers carry labels naming the job, the
// attempt and this agent, which is how recover() finds them after the agent restarts.
// A job may run a workspace's code (weights are pickles), so its container is kept from the host and from other jobs:
// it runs as an unprivileged user (jobUser), with every capability dropped and no-new-privileges, sees no other job's
// files (only its own work dir is mounted), and runs on JOB_NETWORK, a bridge of its own on which containers cannot
// reach one another; a service job (a deployment's inference server) publishes its port on a free host port there.
import Docker from 'dockerode';
import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { lchown, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { failureCause } from './failure-cause.ts';
import {
  LogBatcher,
  TAIL_LINES,
  jobFiles,
  type JobAssignment,
  type JobFiles,
  type JobRuntime,
  type LogSink,
  type LogStream,
  type RecoveredJob,
  type RunningJob,
  type ServiceKind,
} from './runtime.ts';
import { causeContext, DockerJob, outcomeOf, type JobOutput, removeContainer, statusOf } from './docker-job.ts';
import { endedJob, prepareWorkDir, serviceCommand } from './shared.ts';
import { DEFAULT_INFERENCE_IMAGE } from '../config.ts';
import { PROBE_COMMAND, PROBE_MAX_OUTPUT_BYTES, PROBE_TIMEOUT_MS } from '../exporter-probe.ts';

export interface DockerRuntimeOptions {
  /** Absolute; each job's `<workRoot>/<spec.workDir>` is mounted into its container. */
  workRoot: string;
  /** This agent's identity (its host id), in every container's `vp.host` label: recover() takes back only its own. */
  host: string;
  /** The agent's trainer image, for a job whose spec names none. */
  defaultImage?: string;
  /** The inference server's image, for an inference job whose spec names none. Default vp-inference:latest. */
  inferenceImage?: string;
  /** How long stop() waits after SIGTERM before SIGKILL, rounded up to whole seconds (Docker's unit). */
  stopGraceMs?: number;
  /** The Docker engine's socket. Default: DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  /** Who jobs run as. Default: jobUser(). */
  user?: JobUser;
}

export interface JobUser {
  uid: number;
  gid: number;
}

/** nobody:nogroup on Debian. */
const NOBODY: JobUser = { uid: 65534, gid: 65534 };

/** The agent's own user when that is not root (its work dirs are its own already), else nobody. */
export function jobUser(): JobUser {
  const uid = process.getuid?.() ?? 0;
  return uid === 0 ? NOBODY : { uid, gid: process.getgid?.() ?? uid };
}

/**
 * The bridge network jobs run on, created when missing: containers on it reach what the host's network reaches (the
 * control plane at its public URL) but not one another (inter-container traffic off).
 */
export const JOB_NETWORK = 'vp-jobs';

/** Creates JOB_NETWORK when missing. */
export async function ensureJobNetwork(docker: Docker): Promise<void> {
  const present = await docker
    .getNetwork(JOB_NETWORK)
    .inspect()
    .then(
      () => true,
      (error: unknown) => {
        if (statusOf(error) === 404) return false;
        throw error;
      },
    );
  if (present) return;
  const options = {
    Name: JOB_NETWORK,
    Driver: 'bridge',
    Options: { 'com.docker.network.bridge.enable_icc': 'false' },
    Labels: { [LABELS.managed]: 'true' },
  };
  // 409: another agent on this host created it meanwhile.
  await docker.createNetwork(options).catch((error: unknown) => {
    if (statusOf(error) !== 409) throw error;
  });
}

/** What every container of this runtime runs under: no root, no capabilities, no way to gain privileges. */
const UNPRIVILEGED = { CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] };

const LABELS = {
  managed: 'vp.managed',
  host: 'vp.host',
  jobId: 'vp.job-id',
  attempt: 'vp.attempt',
  /** Present when the job has a timeout, so a recovered job keeps it. */
  timeoutSeconds: 'vp.timeout-seconds',
  /** The job's work dir, checkpoint and outputs (JSON of JobFiles): a recovered job's uploads go on, its work dir is cleaned after. */
  files: 'vp.job-files',
} as const;

/**
 * One name per job attempt, so a repeated start of the same attempt meets Docker's name conflict instead of
 * running a twin. Job ids may hold ':' (not allowed in names): it becomes `_x`, and `_` becomes `__`, so no
 * two ids share a name.
 */
export function containerName(jobId: string, attempt: number): string {
  return `vp-job-${jobId.replaceAll('_', '__').replaceAll(':', '_x')}-${attempt}`;
}

/** What Docker is asked to create for a job; `workDir` is the job's absolute work dir on the host. */
export function containerOptions(
  { jobId, attempt, spec }: JobAssignment,
  { image, workDir, host, user = NOBODY }: { image: string; workDir: string; host: string; user?: JobUser },
): Docker.ContainerCreateOptions {
  const env: Record<string, string> = { ...spec.env, ...(spec.service && { PORT: String(spec.service.port) }) };
  // The NVIDIA runtime exposes what this names (images often bake in "all"); 'void' exposes nothing. With a count
  // but no indexes Docker picks the GPUs and sets it.
  if (spec.gpus.count === 0) env.NVIDIA_VISIBLE_DEVICES = 'void';
  else if (spec.gpus.indexes) env.NVIDIA_VISIBLE_DEVICES = spec.gpus.indexes.join(',');
  const gpus = spec.gpus.indexes ? { DeviceIDs: spec.gpus.indexes.map(String) } : { Count: spec.gpus.count };
  const labels: Record<string, string> = {
    [LABELS.managed]: 'true',
    [LABELS.host]: host,
    [LABELS.jobId]: jobId,
    [LABELS.attempt]: String(attempt),
  };
  if (spec.timeoutSeconds !== undefined) labels[LABELS.timeoutSeconds] = String(spec.timeoutSeconds);
  labels[LABELS.files] = JSON.stringify(jobFiles(spec));
  const service = spec.service && servicePortKey(spec.service.port);
  return {
    name: containerName(jobId, attempt),
    Image: image,
    Cmd: spec.command,
    User: `${user.uid}:${user.gid}`,
    Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
    WorkingDir: workDir,
    Labels: labels,
    ...(service && { ExposedPorts: { [service]: {} } }),
    HostConfig: {
      Init: true,
      ...UNPRIVILEGED,
      // Never the host's network (its loopback services, other jobs' ports): a trainer reaches the control plane at
      // its public URL through the bridge. A service gets a port of its own on the host (Docker picks a free one),
      // so any number of them run side by side.
      NetworkMode: JOB_NETWORK,
      ...(service && { PortBindings: { [service]: [{ HostPort: '' }] } }),
      Mounts: [{ Type: 'bind', Source: workDir, Target: workDir }],
      DeviceRequests: spec.gpus.count > 0 ? [{ Driver: 'nvidia', ...gpus, Capabilities: [['gpu']] }] : undefined,
      Memory: spec.memoryBytes,
      // Swap counts against the limit too, so a job over it is stopped rather than left crawling on swap.
      MemorySwap: spec.memoryBytes,
      NanoCpus: spec.cpus === undefined ? undefined : Math.round(spec.cpus * 1e9),
      ShmSize: spec.shmBytes,
    },
  };
}

const servicePortKey = (port: number) => `${port}/tcp`;

/**
 * The host port Docker published a service's container port on. None for a container that already exited (its
 * ports are gone): the job then ends with the cause its output gives.
 */
function publishedPort(info: Docker.ContainerInspectInfo, files: JobFiles | undefined): number | undefined {
  if (!files?.service) return undefined;
  const port = Number(info.NetworkSettings.Ports?.[servicePortKey(files.service.port)]?.[0]?.HostPort);
  if (!port && info.State.Running) throw new Error(`the service's port ${files.service.port} was not published`);
  return port || undefined;
}

export class DockerRuntime implements JobRuntime {
  readonly #docker: Docker;
  readonly #workRoot: string;
  readonly #host: string;
  readonly #defaultImage: string | undefined;
  readonly #inferenceImage: string;
  readonly #stopGraceMs: number;
  readonly #user: JobUser;
  /** Settles once JOB_NETWORK exists; reset after a failure, to be tried again by the next job. */
  #network: Promise<void> | undefined;

  constructor(options: DockerRuntimeOptions) {
    this.#docker = new Docker(options.socketPath === undefined ? undefined : { socketPath: options.socketPath });
    this.#workRoot = resolve(options.workRoot);
    this.#host = options.host;
    this.#defaultImage = options.defaultImage;
    this.#inferenceImage = options.inferenceImage ?? DEFAULT_INFERENCE_IMAGE;
    this.#stopGraceMs = options.stopGraceMs ?? 10_000;
    this.#user = options.user ?? jobUser();
  }

  /** Rejects, with nothing left running, when the job cannot start: no image, an image that cannot be pulled, a bad work dir. */
  async start(assignment: JobAssignment, sink: LogSink): Promise<RunningJob> {
    const { jobId, attempt, spec } = assignment;
    if (spec.environment === 'inference') serviceCommand(spec);
    const image = spec.image ?? (spec.environment === 'inference' ? this.#inferenceImage : this.#defaultImage);
    if (image === undefined) throw new Error('the job names no image and this agent has no trainer image configured');
    const workDir = await prepareWorkDir(this.#workRoot, spec.workDir);
    await handOver(workDir, this.#user);
    await this.#ensureImage(image);
    await this.#ensureNetwork();
    const container = await this.#docker
      .createContainer(containerOptions(assignment, { image, workDir, host: this.#host, user: this.#user }))
      .catch((error: unknown) => {
        if (statusOf(error) === 409)
          throw new Error(`job ${jobId} attempt ${attempt} already has a container (${containerName(jobId, attempt)})`);
        throw error;
      });
    try {
      // Attached before it starts, so no output is missed; the stream holds what comes until it is read. It is the
      // HTTP response, which dockerode's types call a ReadWriteStream.
      const output = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
      await container.start().catch((error: unknown) => {
        output.destroy();
        throw error;
      });
      const deadline = spec.timeoutSeconds === undefined ? undefined : Date.now() + spec.timeoutSeconds * 1000;
      const cause = { env: spec.env, workDirs: [workDir] };
      const servicePort = publishedPort(await container.inspect(), jobFiles(spec));
      return new DockerJob(jobId, container, this.#follow(output, sink), {
        stopGraceMs: this.#stopGraceMs,
        cause,
        timeoutAt: deadline,
        servicePort,
      });
    } catch (error) {
      await removeContainer(container);
      throw error;
    }
  }

  /**
   * This agent's containers: running ones are adopted (their output from now on goes to the sink, their timeout
   * still counts from their start), ended ones are reported with the outcome Docker recorded (and the failure cause
   * in the output it kept), and removed once that is reported.
   */
  async recover(sinkFor: (jobId: string) => LogSink): Promise<RecoveredJob[]> {
    const found = await this.#docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.managed}=true`, `${LABELS.host}=${this.#host}`] },
    });
    return Promise.all(
      found.map(async ({ Id, Labels }) => {
        const jobId = Labels[LABELS.jobId] as string;
        const files = Labels[LABELS.files] ? (JSON.parse(Labels[LABELS.files]) as JobFiles) : undefined;
        return {
          jobId,
          attempt: Number(Labels[LABELS.attempt]),
          job: await this.#adopt(jobId, this.#docker.getContainer(Id), sinkFor, files),
          ...(files && { files }),
        };
      }),
    );
  }

  async #adopt(
    jobId: string,
    container: Docker.Container,
    sinkFor: (jobId: string) => LogSink,
    files: JobFiles | undefined,
  ): Promise<RunningJob> {
    const info = await container.inspect().catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw error;
    });
    if (info === undefined)
      return endedJob(jobId, { outcome: 'failed', error: "the job's container was removed while the agent was away" });
    // Kept until its end is reported (release()), like a container this agent saw end.
    if (!info.State.Running)
      return endedJob(jobId, outcomeOf(info, await this.#recordedCause(container, info)), () =>
        removeContainer(container),
      );
    // Logs rather than attach: attaching to a container that has just exited would wait for it to start again.
    const output = (await container.logs({
      follow: true,
      stdout: true,
      stderr: true,
      since: Date.now() / 1000,
    })) as Readable;
    const timeout = info.Config.Labels[LABELS.timeoutSeconds];
    const deadline = timeout === undefined ? undefined : Date.parse(info.State.StartedAt) + Number(timeout) * 1000;
    const servicePort = publishedPort(info, files);
    return new DockerJob(jobId, container, this.#follow(output, sinkFor(jobId)), {
      stopGraceMs: this.#stopGraceMs,
      cause: causeContext(info),
      timeoutAt: deadline,
      servicePort,
    });
  }

  /** For a container that ended while the agent was away: the failure cause in the end of the output Docker kept. */
  async #recordedCause(container: Docker.Container, info: Docker.ContainerInspectInfo): Promise<string | undefined> {
    if (info.State.ExitCode === 0) return undefined;
    const recorded = await container
      .logs({ stdout: true, stderr: true, tail: TAIL_LINES, follow: false })
      .catch(() => undefined);
    if (!recorded) return undefined;
    const { output, logs } = this.#follow(Readable.from([recorded]), () => {});
    await finished(output);
    logs.end();
    return failureCause(logs.tail, causeContext(info));
  }

  /**
   * `docker run --rm --network none <trainer image> vp-probe-exporters`: the image is pulled first if missing (as a job
   * would), then the probe gets PROBE_TIMEOUT_MS and PROBE_MAX_OUTPUT_BYTES of stdout; its container is always removed.
   */
  async runExporterProbe(): Promise<string> {
    const image = this.#defaultImage;
    if (image === undefined) throw new Error('this agent has no trainer image configured (VP_WORKER_TRAINER_IMAGE)');
    await this.#ensureImage(image);
    const container = await this.#docker.createContainer({
      Image: image,
      Cmd: [PROBE_COMMAND],
      Labels: { [LABELS.host]: this.#host },
      User: `${this.#user.uid}:${this.#user.gid}`,
      HostConfig: { NetworkMode: 'none', Init: true, ...UNPRIVILEGED },
    });
    try {
      const output = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const stdout = new Writable({
        write(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          if (bytes > PROBE_MAX_OUTPUT_BYTES)
            return done(new Error(`the probe printed more than ${PROBE_MAX_OUTPUT_BYTES} bytes`));
          chunks.push(chunk);
          done();
        },
      });
      const tooLong = new Promise<never>((_, fail) => stdout.once('error', fail));
      tooLong.catch(() => {});
      this.#docker.modem.demuxStream(output, stdout, new Writable({ write: (_chunk, _encoding, done) => done() }));
      await container.start();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<never>((_, fail) => {
        timer = setTimeout(
          () => fail(new Error(`the probe ran longer than ${PROBE_TIMEOUT_MS / 1000} s`)),
          PROBE_TIMEOUT_MS,
        );
      });
      try {
        const { StatusCode } = (await Promise.race([container.wait(), timedOut, tooLong])) as { StatusCode: number };
        await Promise.race([finished(output), tooLong]);
        if (StatusCode !== 0) throw new Error(`the probe exited with status ${StatusCode}`);
      } finally {
        clearTimeout(timer);
        output.destroy();
      }
      return Buffer.concat(chunks).toString('utf8');
    } finally {
      await removeContainer(container);
    }
  }

  /** Inference when its image is on this host (it is built locally, never pulled). */
  async services(): Promise<ServiceKind[]> {
    const present = await this.#docker
      .getImage(this.#inferenceImage)
      .inspect()
      .then(
        () => true,
        () => false,
      );
    return present ? ['inference'] : [];
  }

  async #ensureNetwork(): Promise<void> {
    this.#network ??= ensureJobNetwork(this.#docker).catch((error: unknown) => {
      this.#network = undefined;
      throw error;
    });
    await this.#network;
  }

  /** Present locally: used as it is. Otherwise pulled, which fails on a host that cannot reach the registry. */
  async #ensureImage(image: string): Promise<void> {
    try {
      await this.#docker.getImage(image).inspect();
      return;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    try {
      const progress = await this.#docker.pull(image);
      await new Promise<void>((done, fail) =>
        this.#docker.modem.followProgress(progress, (error) => (error ? fail(error) : done())),
      );
    } catch (error) {
      throw new Error(`image ${image} is not on this host and could not be pulled: ${(error as Error).message}`);
    }
  }

  /** Splits Docker's multiplexed output into the job's stdout and stderr lines. */
  #follow(output: Readable, sink: LogSink): JobOutput {
    const logs = new LogBatcher(sink);
    const to = (stream: LogStream) =>
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.write(stream, chunk);
          done();
        },
      });
    this.#docker.modem.demuxStream(output, to('stdout'), to('stderr'));
    return { output, logs };
  }
}

/**
 * Gives the job's user its work dir and what the agent fetched into it (its inputs), symlinks not followed, when the
 * agent runs as root (so made them root's).
 */
async function handOver(dir: string, user: JobUser): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await lchown(dir, user.uid, user.gid);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) await handOver(join(dir, entry.name), user);
    else await lchown(join(dir, entry.name), user.uid, user.gid);
  }
}
