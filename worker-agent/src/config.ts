// The agent's settings: a JSON file (written by `vp-worker enroll`, edited by the operator) with environment
// variables on top, validated once with every problem reported together.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { MAX_SHARED_FOLDERS } from '@vp/protocol';
import { z } from 'zod';

export const RUNTIMES = ['docker', 'process'] as const;
/** The moving tag installer/inference/build-inference-image.sh gives the image it builds. */
export const DEFAULT_INFERENCE_IMAGE = 'vp-inference:latest';

/** Each setting's key in the config file and the environment variable that overrides it. */
const ENV_OVERRIDES = {
  server: 'VP_WORKER_SERVER',
  workerKey: 'VP_WORKER_KEY',
  workDir: 'VP_WORKER_WORK_DIR',
  runtime: 'VP_WORKER_RUNTIME',
  trainerImage: 'VP_WORKER_TRAINER_IMAGE',
  inferenceImage: 'VP_WORKER_INFERENCE_IMAGE',
  serviceHost: 'VP_WORKER_SERVICE_HOST',
  maxConcurrentJobs: 'VP_WORKER_MAX_CONCURRENT_JOBS',
  processVenv: 'VP_WORKER_PROCESS_VENV',
  hostId: 'VP_WORKER_HOST_ID',
  keepWorkDirsHours: 'VP_WORKER_KEEP_WORK_DIRS_HOURS',
  sharedFolders: 'VP_WORKER_SHARED_FOLDERS',
  allowSharedProcessRuntime: 'VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME',
  metricsListen: 'VP_WORKER_METRICS_LISTEN',
} as const;
type Setting = keyof typeof ENV_OVERRIDES;

// Not strict: enroll may keep more in the same file (the host's id, say) than the agent's settings.
const SettingsSchema = z.object({
  server: z.url({ protocol: /^(https?|wss?)$/, error: 'must be an http(s) or ws(s) URL' }),
  workerKey: z
    .string({ error: 'is missing; run `vp-worker enroll --server URL --token T` first' })
    .min(1, 'must not be empty'),
  workDir: z
    .string()
    .min(1)
    .default(join(homedir(), '.local', 'share', 'vp-worker')),
  runtime: z.enum(RUNTIMES, { error: `must be one of ${RUNTIMES.join(', ')}` }).default('docker'),
  trainerImage: z.string().min(1).optional(),
  inferenceImage: z.string().min(1).default(DEFAULT_INFERENCE_IMAGE),
  // A host name or an IP address (IPv6 without brackets), as the control plane reaches this host.
  serviceHost: z
    .string()
    .regex(/^[\w.:-]{1,253}$/, 'must be a host name or an IP address')
    .optional(),
  maxConcurrentJobs: z.coerce.number({ error: 'must be a positive integer' }).int().min(1).optional(),
  processVenv: z.string().min(1).optional(),
  hostId: z.string().min(1).optional(),
  hostName: z.string().min(1).optional(),
  keepWorkDirsHours: z.coerce
    .number({ error: 'must be a number of hours, 0 or more' })
    .min(0, 'must be 0 or more')
    .default(24),
  // A list in the file, comma-separated in the environment.
  sharedFolders: z
    .preprocess(
      (value) =>
        typeof value === 'string'
          ? value
              .split(',')
              .map((folder) => folder.trim())
              .filter(Boolean)
          : value,
      z
        .array(z.string().refine((folder) => isAbsolute(folder), 'must list absolute paths'))
        .max(MAX_SHARED_FOLDERS, `must list at most ${MAX_SHARED_FOLDERS} folders`),
    )
    .default([]),
  // true/false in the file; 1/0 (or true/false) in the environment.
  allowSharedProcessRuntime: z
    .preprocess(
      (value) => (value === '1' || value === 'true' ? true : value === '0' || value === 'false' ? false : value),
      z.boolean({ error: 'must be true or false (1 or 0)' }),
    )
    .default(false),
  metricsListen: z
    .string()
    .regex(/^(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:9465')
    .optional(),
});

export interface WorkerConfig {
  /** The control plane's base URL; `enroll` writes it. */
  server: string;
  /** This host's worker key; `enroll` writes it. */
  workerKey: string;
  /** Absolute; jobs' work dirs live under it. */
  workDir: string;
  runtime: (typeof RUNTIMES)[number];
  /** The image of jobs that name none (docker runtime). */
  trainerImage: string | undefined;
  /** The inference server's image for deployments (docker runtime); installer/inference/build-inference-image.sh builds it. */
  inferenceImage: string;
  /** The address the control plane reaches this host's services at; unset: the local address of the agent's socket to it. */
  serviceHost: string | undefined;
  /** Unset: no limit on the agent's side; the server assigns one job per free GPU, or one on a CPU-only host. */
  maxConcurrentJobs: number | undefined;
  /** Process runtime: a Python virtual environment (the trainer's) whose bin/ comes first on the jobs' PATH. */
  processVenv: string | undefined;
  /** Written by `enroll`; labels this agent's containers so a restart adopts only its own. */
  hostId: string | undefined;
  /** Written by `enroll`: the host's name on the control plane, for the operator's messages. */
  hostName: string | undefined;
  /** How long a finished job's work dir is kept after its end was reported; 0: removed at once. */
  keepWorkDirsHours: number;
  /**
   * Folders the control plane may list and read (storage integrations of the local provider), read-only; anything
   * outside them, symlinks leading out included, is refused. Empty: none.
   */
  sharedFolders: string[];
  /**
   * Run the process runtime on a host of the appliance-wide pool anyway, though it cannot keep one workspace's jobs
   * from another's (README: the process runtime). Without it such an agent refuses the pool and stops.
   */
  allowSharedProcessRuntime: boolean;
  /** host:port of the agent's own Prometheus metrics (agent-metrics.ts); unset: not served. */
  metricsListen: string | undefined;
  /** Where these settings were read from. */
  configFile: string;
}

export class WorkerConfigError extends Error {}

/** VP_WORKER_CONFIG, else `~/.config/vp-worker/config.json` (XDG_CONFIG_HOME respected, as `enroll` does). */
export function configPath(env: Record<string, string | undefined> = process.env): string {
  return resolve(
    env.VP_WORKER_CONFIG || join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'vp-worker', 'config.json'),
  );
}

function readConfigFile(file: string, required: boolean): Record<string, unknown> {
  if (!existsSync(file)) {
    if (required) throw new WorkerConfigError(`Invalid configuration: ${file} (from VP_WORKER_CONFIG) does not exist`);
    return {};
  }
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new WorkerConfigError(`Invalid configuration: ${file} is not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new WorkerConfigError(`Invalid configuration: ${file} must hold a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** Reads the file, applies the environment over it; problems name the variable or file key they came from. */
export function loadWorkerConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  const configFile = configPath(env);
  const input = readConfigFile(configFile, Boolean(env.VP_WORKER_CONFIG));
  const source: Partial<Record<Setting, string>> = {};
  for (const [setting, variable] of Object.entries(ENV_OVERRIDES) as [Setting, string][]) {
    const value = env[variable];
    if (value === undefined || value === '') continue;
    input[setting] = value;
    source[setting] = variable;
  }
  const parsed = SettingsSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const setting = issue.path[0] as Setting;
      return `${source[setting] ?? `${setting} (in ${configFile})`} ${issue.message}`;
    });
    throw new WorkerConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const settings = parsed.data;
  return {
    server: settings.server.replace(/\/+$/, ''),
    workerKey: settings.workerKey,
    workDir: resolve(settings.workDir),
    runtime: settings.runtime,
    trainerImage: settings.trainerImage,
    inferenceImage: settings.inferenceImage,
    serviceHost: settings.serviceHost,
    maxConcurrentJobs: settings.maxConcurrentJobs,
    processVenv: settings.processVenv && resolve(settings.processVenv),
    hostId: settings.hostId,
    hostName: settings.hostName,
    keepWorkDirsHours: settings.keepWorkDirsHours,
    sharedFolders: settings.sharedFolders.map((folder) => resolve(folder)),
    allowSharedProcessRuntime: settings.allowSharedProcessRuntime,
    metricsListen: settings.metricsListen,
    configFile,
  };
}
