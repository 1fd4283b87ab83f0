// The WebSocket protocol between the control plane and worker agents: one JSON object per frame, its kind
// in `type`. Both sides parse every frame with parseMessage, so a malformed or hostile frame is refused with
// a reason (to log, and to answer with `error`) instead of throwing inside a socket handler.
import { z } from 'zod';
import { FolderAgentMessages, FolderServerMessages } from './folders.ts';
import {
  MAX_PROTOCOL_VERSION_NUMBER,
  SUPPORTED_VERSIONS,
  commonVersion,
  describeVersions,
  helloVersions,
} from './versions.ts';

/** The largest frame either side accepts; senders batch and split below it. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
export const MAX_LOG_LINES_PER_MESSAGE = 1000;
export const MAX_LOG_LINE_BYTES = 16 * 1024;
export const MAX_ENV_ENTRIES = 256;
export const MAX_GPUS_PER_HOST = 64;
export const MAX_JOB_OUTPUTS = 8;
/** The longest run a job.finished can report (a job's timeout is at most 30 days; a year leaves room for no timeout). */
export const MAX_RUN_SECONDS = 366 * 86_400;

const text = (max: number) => z.string().max(max);
/** Job and host IDs travel into logs, labels and SQL parameters: keep them short and plain. */
const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, 'must be 1-128 letters, digits, _ . : -');
const count = z.int().min(0);
const gpuIndex = z
  .int()
  .min(0)
  .max(MAX_GPUS_PER_HOST - 1);
const version = z.int().min(1).max(MAX_PROTOCOL_VERSION_NUMBER);
const distinct = (indexes: number[]) => new Set(indexes).size === indexes.length;
const gpuIndexes = z.array(gpuIndex).max(MAX_GPUS_PER_HOST).refine(distinct, 'must not repeat a GPU index');

export const Gpu = z.strictObject({
  /** The index nvidia-smi and CUDA_VISIBLE_DEVICES use on this host. */
  index: gpuIndex,
  model: text(256),
  /** The spec's GPU type ID (rtx-4090, h100-sxm, ...), or a slug of an unrecognised NVIDIA model. */
  typeId: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must be a lowercase hyphenated type ID'),
  memoryMiB: count,
  driverVersion: text(64).nullable(),
});
export type Gpu = z.infer<typeof Gpu>;

/** Protocol 7: a host's load at a heartbeat, for operators (the hosts page); nothing is scheduled by it. */
export const HostLoad = z.strictObject({
  cpuPercent: z.number().min(0).max(100),
  memoryUsedBytes: count,
  gpus: z
    .array(
      z.strictObject({
        index: gpuIndex,
        /** null where the driver does not say (nvidia-smi's [N/A]). */
        utilizationPercent: z.number().min(0).max(100).nullable(),
        memoryUsedMiB: count.nullable(),
        temperatureC: z.number().min(-100).max(200).nullable().optional(),
      }),
    )
    .max(MAX_GPUS_PER_HOST),
});
export type HostLoad = z.infer<typeof HostLoad>;

export const Hardware = z
  .strictObject({
    cpu: z.strictObject({ model: text(256), cores: z.int().min(1).max(65_536) }),
    memoryBytes: count,
    /** Free space on the filesystem that holds the agent's work dir. */
    diskFreeBytes: count,
    gpus: z.array(Gpu).max(MAX_GPUS_PER_HOST),
    /** A host without NVIDIA GPUs still offers its CPUs and memory to CPU jobs. */
    cpuOnly: z.boolean(),
  })
  .refine((hardware) => hardware.cpuOnly === (hardware.gpus.length === 0), {
    message: 'cpuOnly must be true exactly when gpus is empty',
    path: ['cpuOnly'],
  });
export type Hardware = z.infer<typeof Hardware>;

/** A path inside the work dir: relative, no `..`. */
const relativePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((path) => !path.startsWith('/') && !path.split('/').includes('..'), 'must be a relative path without ..');

/** A file name the agent uploads under or looks for: no directories. */
const outputName = z
  .string()
  .regex(/^[\w.-]{1,128}$/)
  .refine((name) => name !== '.' && name !== '..', 'must be a file name');

/** A model format a host can export to (the spec's format IDs: onnx, openvino, engine, ...). */
const formatId = z.string().regex(/^[a-z0-9_]{1,32}$/);
export const MAX_EXPORTERS = 64;

/**
 * What runs a job's command. trainer: the trainer image (docker runtime) or the configured Python environment
 * (process runtime). inference: the inference server's image (docker) or the agent's own Node with the
 * inference server it ships (process); the command is then the server's arguments (INFERENCE_SERVER in
 * @vp/inference-server/contract). Protocol 3.
 */
export const JOB_ENVIRONMENTS = ['trainer', 'inference'] as const;
export type JobEnvironment = (typeof JOB_ENVIRONMENTS)[number];
/** A service a host can run (capabilities.services): the inference server of deployments. */
export const SERVICE_KINDS = ['inference'] as const;

export const JobSpec = z.strictObject({
  /** Absent: the agent's configured trainer image (docker runtime) or no image at all (process runtime). */
  image: text(512).min(1).optional(),
  command: z
    .array(text(16 * 1024))
    .min(1)
    .max(1024),
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/), text(32 * 1024))
    .refine((env) => Object.keys(env).length <= MAX_ENV_ENTRIES, `at most ${MAX_ENV_ENTRIES} entries`),
  /** Relative to the agent's work dir, so the server can never point a job at the rest of the host. */
  workDir: relativePath,
  gpus: z
    .strictObject({ count: z.int().min(0).max(MAX_GPUS_PER_HOST), indexes: gpuIndexes.optional() })
    .refine((gpus) => gpus.indexes === undefined || gpus.indexes.length === gpus.count, 'indexes must list count GPUs'),
  memoryBytes: z.int().min(1).optional(),
  cpus: z.number().positive().max(65_536).optional(),
  shmBytes: z.int().min(1).optional(),
  timeoutSeconds: z
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional(),
  /** Files the agent downloads into the work dir before the job starts (a checkpoint to resume from). */
  inputs: z
    .array(z.strictObject({ url: z.url({ protocol: /^https?$/ }).max(8192), path: relativePath }))
    .max(16)
    .optional(),
  /**
   * A file the job keeps rewriting (a trainer's last.pt) that the agent uploads whenever it changed, at most every
   * everySeconds: the newest file of that name under `under` in the work dir. A requeued job resumes from it.
   */
  checkpoint: z
    .strictObject({ under: relativePath, file: outputName, everySeconds: z.int().min(1).max(86_400) })
    .optional(),
  /**
   * What the job leaves behind for the control plane (an exported model): after it exits 0, the agent uploads each
   * path under its name (a directory as one zip archive of its contents) and only then reports it completed; a path
   * that is missing or fails to upload fails the job. Protocol 2.
   */
  outputs: z
    .array(z.strictObject({ path: relativePath, name: outputName }))
    .max(MAX_JOB_OUTPUTS)
    .optional(),
  /** Absent: trainer. Protocol 3. */
  environment: z.enum(JOB_ENVIRONMENTS).optional(),
  /**
   * A long-running service (a deployment's inference server): it listens on `port` (in its container; the process
   * runtime gives it a free port of the host instead, in its PORT variable) until it is cancelled; its exit is a
   * failure. Once `healthPath` answers 200 the agent reports `job.service` with the port the control plane reaches it
   * at. Protocol 3.
   */
  service: z
    .strictObject({
      port: z.int().min(1).max(65_535),
      healthPath: z.string().regex(/^\/[\w./-]{0,255}$/, 'must be an absolute path'),
      /** How long the service may take to answer its health check before the job fails. */
      startSeconds: z.int().min(1).max(3600),
    })
    .optional(),
});
export type JobSpec = z.infer<typeof JobSpec>;

const logLine = z
  .string()
  .refine((line) => Buffer.byteLength(line) <= MAX_LOG_LINE_BYTES, `each line at most ${MAX_LOG_LINE_BYTES} bytes`);

/** Agent → control plane. */
export const AgentMessage = z.discriminatedUnion('type', [
  z
    .strictObject({
      type: z.literal('hello'),
      /** The agent's highest version (an agent before ranges sends only this: the one version it speaks). */
      protocolVersion: version,
      /**
       * The versions the agent speaks, when more than one; the control plane answers with the highest it speaks too. A
       * hello must read the same in every version of its range.
       */
      protocolVersions: z
        .strictObject({ min: version, max: version })
        .refine((range) => range.min <= range.max, 'min must not exceed max')
        .optional(),
      agentVersion: text(64).min(1),
      /** Absent on the first connection; afterwards the id from `welcome`, kept on disk so a restart reuses the host. */
      hostId: id.optional(),
      hardware: Hardware,
      /** The agent's own cap on jobs at once; absent: one per free GPU, or one on a CPU-only host. */
      maxConcurrentJobs: z.int().min(1).max(1024).optional(),
      /**
       * The jobs the agent knows of: still running, or ended while the socket was down (their job.finished
       * follows the welcome). After a reconnect this is how the server neither loses nor re-assigns them.
       */
      runningJobs: z
        .array(z.strictObject({ jobId: id, attempt: z.int().min(1), gpuIndexes: gpuIndexes.optional() }))
        .max(1024),
    })
    .refine((hello) => hello.protocolVersions === undefined || hello.protocolVersions.max === hello.protocolVersion, {
      message: 'must be the highest of protocolVersions',
      path: ['protocolVersion'],
    }),
  z.strictObject({
    type: z.literal('heartbeat'),
    at: z.iso.datetime({ offset: true }),
    freeGpus: gpuIndexes.optional(),
    load: HostLoad.optional(),
  }),
  /**
   * Protocol 2, sent after each welcome once the agent's probe answered, and again when a later probe answers (one that
   * failed is retried): the model formats this host's trainer environment can export to, and for the others why not
   * (a missing toolchain), for the control plane to say. Each replaces the last.
   */
  z.strictObject({
    type: z.literal('capabilities'),
    exporters: z.array(formatId).max(MAX_EXPORTERS),
    missingExporters: z
      .record(formatId, text(512))
      .refine((missing) => Object.keys(missing).length <= MAX_EXPORTERS, `at most ${MAX_EXPORTERS} entries`),
    /** Protocol 3: the services this host can run (its inference image is built, or its Node can run the server). */
    services: z.array(z.enum(SERVICE_KINDS)).max(SERVICE_KINDS.length).optional(),
  }),
  z.strictObject({ type: z.literal('job.accepted'), jobId: id }),
  z.strictObject({
    type: z.literal('job.log'),
    jobId: id,
    stream: z.enum(['stdout', 'stderr']),
    lines: z.array(logLine).min(1).max(MAX_LOG_LINES_PER_MESSAGE),
  }),
  /**
   * Protocol 3: a service job (JobSpec.service) answers its health check; `url` is its origin on the host (the host's
   * address and the published port). The control plane takes only its port: it reaches the service over http at the
   * address the agent's connection comes from, never at a host the agent names. Sent again after a reconnect.
   */
  z.strictObject({ type: z.literal('job.service'), jobId: id, url: z.url({ protocol: /^https?$/ }).max(2048) }),
  /** progress: the fraction done, 0 to 1. */
  z.strictObject({ type: z.literal('job.progress'), jobId: id, progress: z.number().min(0).max(1) }),
  z.strictObject({
    type: z.literal('job.finished'),
    jobId: id,
    outcome: z.enum(['completed', 'failed', 'cancelled']),
    exitCode: z.int().optional(),
    error: text(4096).optional(),
    /**
     * Protocol 6: how long the attempt's process ran, start to exit, as its host's clock measured it (absent when the
     * agent could not tell): a job whose host was lost and came back with it is charged what it really ran.
     */
    ranSeconds: z.number().min(0).max(MAX_RUN_SECONDS).optional(),
    /** Protocol 6: seconds between the process's exit and this message (an end held while the socket was down). */
    endedSecondsAgo: z.number().min(0).max(MAX_RUN_SECONDS).optional(),
    /**
     * Protocol 8: the attempt failed before it started on this host (its inputs could not be fetched, the runtime could
     * not start it: a full disk, say), so nothing of it ran: a restartable job may run again, elsewhere.
     */
    notStarted: z.literal(true).optional(),
  }),
  ...FolderAgentMessages,
]);
export type AgentMessage = z.infer<typeof AgentMessage>;

/** Control plane → agent. */
export const ServerMessage = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('welcome'),
    /** The version chosen for this connection: the highest both sides speak. */
    protocolVersion: version,
    hostId: id,
    heartbeatSeconds: z.int().min(1).max(3600),
    /**
     * Protocol 5: the host is in the appliance-wide pool and runs every workspace's jobs (false: one workspace's
     * only). An agent whose runtime cannot keep jobs apart refuses a pool unless its operator allowed it.
     */
    pool: z.boolean().optional(),
  }),
  z.strictObject({ type: z.literal('job.assign'), jobId: id, attempt: z.int().min(1), spec: JobSpec }),
  z.strictObject({ type: z.literal('job.cancel'), jobId: id, reason: text(1024) }),
  z.strictObject({ type: z.literal('error'), message: text(4096) }),
  ...FolderServerMessages,
]);
export type ServerMessage = z.infer<typeof ServerMessage>;

export type Direction = 'toServer' | 'toAgent';
/** unsupportedVersion: a hello or welcome of no version this side speaks (reconnecting will not help). */
export type ParseResult<M> = { ok: true; message: M } | { ok: false; error: string; unsupportedVersion?: true };

const schemas = { toServer: AgentMessage, toAgent: ServerMessage } as const;
const typesOf = (union: typeof AgentMessage | typeof ServerMessage) =>
  new Set<string>(union.options.map((option) => option.shape.type.value));
const knownTypes = { toServer: typesOf(AgentMessage), toAgent: typesOf(ServerMessage) };

/** Parses one frame; never throws. The error is short and safe to log or send back in an `error` message. */
export function parseMessage(raw: string | Buffer, direction: 'toServer'): ParseResult<AgentMessage>;
export function parseMessage(raw: string | Buffer, direction: 'toAgent'): ParseResult<ServerMessage>;
export function parseMessage(raw: string | Buffer, direction: Direction): ParseResult<AgentMessage | ServerMessage>;
export function parseMessage(raw: string | Buffer, direction: Direction): ParseResult<AgentMessage | ServerMessage> {
  // A string's UTF-8 size is at least its length, so a huge string is refused before it is measured.
  const bytes =
    typeof raw === 'string' ? (raw.length > MAX_MESSAGE_BYTES ? raw.length : Buffer.byteLength(raw)) : raw.length;
  if (bytes > MAX_MESSAGE_BYTES)
    return refuse(`message of ${bytes}+ bytes exceeds the ${MAX_MESSAGE_BYTES}-byte limit`);
  let value: unknown;
  try {
    value = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    return refuse('message is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return refuse('message must be a JSON object');
  const { type, protocolVersion } = value as Record<string, unknown>;
  if (typeof type !== 'string') return refuse('message has no string "type"');
  if (!knownTypes[direction].has(type)) return refuse(`unknown message type ${JSON.stringify(type.slice(0, 64))}`);
  const versionProblem =
    type === 'hello'
      ? helloVersionProblem(value)
      : type === 'welcome'
        ? welcomeVersionProblem(protocolVersion)
        : undefined;
  if (versionProblem) return { ok: false, error: versionProblem, unsupportedVersion: true };
  const parsed = schemas[direction].safeParse(value);
  if (parsed.success) return { ok: true, message: parsed.data };
  const problems = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(message)'}: ${issue.message}`);
  return refuse(`invalid ${type}: ${problems.join('; ')}`.slice(0, 500));
}

const refuse = (error: string): { ok: false; error: string } => ({ ok: false, error });

/** Checked before the schema: a hello of versions this side does not speak gets a refusal that says so. */
function helloVersionProblem(hello: { protocolVersion?: unknown; protocolVersions?: unknown }): string | undefined {
  const range = helloVersions(hello);
  const ours = describeVersions(SUPPORTED_VERSIONS);
  if (!range)
    return `protocol version ${JSON.stringify(hello.protocolVersions ?? hello.protocolVersion) ?? 'missing'} is not supported; the control plane speaks ${ours}`;
  if (commonVersion(range) === null)
    return `no common protocol version: the agent speaks ${describeVersions(range)}, the control plane ${ours}`;
  return undefined;
}

function welcomeVersionProblem(chosen: unknown): string | undefined {
  if (Number.isInteger(chosen) && commonVersion({ min: chosen as number, max: chosen as number }) !== null)
    return undefined;
  return `protocol version ${JSON.stringify(chosen) ?? 'missing'} chosen by the control plane is not supported; this agent speaks ${describeVersions(SUPPORTED_VERSIONS)}`;
}

/** Serialises a message; a frame the peer would refuse for its size is a sender bug, so it throws. */
export function encodeMessage(message: AgentMessage | ServerMessage): string {
  const frame = JSON.stringify(message);
  if (Buffer.byteLength(frame) > MAX_MESSAGE_BYTES)
    throw new RangeError(`${message.type} message exceeds ${MAX_MESSAGE_BYTES} bytes; split it`);
  return frame;
}
