// The server's settings, from its environment (SERVER_ENV), checked once at start with every problem named.
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { defaults } from '@vp/config';
import { z } from 'zod';
import { SERVER_ENV, SERVICE_PORT } from './contract.ts';

const Settings = z.object({
  [SERVER_ENV.model]: z.string({ error: 'is required: the ONNX file to serve' }).min(1),
  [SERVER_ENV.port]: z.coerce.number().int().min(1).max(65_535).default(SERVICE_PORT),
  [SERVER_ENV.token]: z
    .string({ error: 'is required: the bearer token callers must present' })
    .min(16, 'must be at least 16 characters'),
  [SERVER_ENV.threads]: z.coerce.number().int().min(1).max(256).optional(),
  [SERVER_ENV.maxBytes]: z.coerce.number().int().min(1024).default(defaults.predictMaxBytes),
  [SERVER_ENV.device]: z.enum(['cpu', 'cuda']).default('cpu'),
  [SERVER_ENV.modelName]: z.string().min(1).max(512).optional(),
  [SERVER_ENV.ffmpeg]: z.string().min(1).default('ffmpeg'),
});

export interface ServerSettings {
  modelFile: string;
  port: number;
  token: string;
  intraOpThreads: number;
  maxBytes: number;
  device: 'cpu' | 'cuda';
  modelName: string;
  /** The ffmpeg the camera runs (a path, or a name on PATH). */
  ffmpeg: string;
}

/** Throws an Error naming each variable that is missing or wrong. */
export function readSettings(env: Record<string, string | undefined>): ServerSettings {
  const present = Object.fromEntries(
    Object.values(SERVER_ENV).flatMap((name) => (env[name] ? [[name, env[name]]] : [])),
  );
  const parsed = Settings.safeParse(present);
  if (!parsed.success)
    throw new Error(
      `invalid settings: ${parsed.error.issues.map((issue) => `${String(issue.path[0])} ${issue.message}`).join('; ')}`,
    );
  const values = parsed.data;
  const modelFile = values[SERVER_ENV.model];
  return {
    modelFile,
    port: values[SERVER_ENV.port],
    token: values[SERVER_ENV.token],
    intraOpThreads: values[SERVER_ENV.threads] ?? Math.max(1, availableParallelism()),
    maxBytes: values[SERVER_ENV.maxBytes],
    device: values[SERVER_ENV.device],
    modelName: values[SERVER_ENV.modelName] ?? basename(modelFile),
    ffmpeg: values[SERVER_ENV.ffmpeg],
  };
}
