// The embedding job's settings (EMBED_ENV) and manifest, checked once at its start with every problem named. The
// normalisation has no default: it must be the control plane's, whose vectors share the index.
import { availableParallelism } from 'node:os';
import { readFile, stat } from 'node:fs/promises';
import { defaults } from '@vp/config';
import { z } from 'zod';
import { EMBED_ENV, MAX_EMBED_IMAGES, type EmbedManifest } from '../contract.ts';

const rgb = z
  .string()
  .transform((text) => text.split(',').map(Number))
  .refine((values) => values.length === 3 && values.every(Number.isFinite), 'must be three comma-separated numbers')
  .transform((values) => values as [number, number, number]);

const Settings = z.object({
  [EMBED_ENV.model]: z.string({ error: 'is required: the ONNX embedder' }).min(1),
  [EMBED_ENV.manifest]: z.string({ error: 'is required: the images to embed' }).min(1),
  [EMBED_ENV.device]: z.enum(['cpu', 'cuda']).default('cpu'),
  [EMBED_ENV.mean]: rgb,
  [EMBED_ENV.std]: rgb.refine((values) => values.every((value) => value > 0), 'must be positive'),
  [EMBED_ENV.maxBytes]: z.coerce.number().int().min(1024).default(defaults.predictMaxBytes),
  [EMBED_ENV.threads]: z.coerce.number().int().min(1).max(256).optional(),
});

export interface EmbedSettings {
  modelFile: string;
  manifestFile: string;
  device: 'cpu' | 'cuda';
  mean: [number, number, number];
  std: [number, number, number];
  maxBytes: number;
  threads: number;
}

/** Throws an Error naming each variable that is missing or wrong. */
export function readEmbedSettings(env: Record<string, string | undefined>): EmbedSettings {
  const present = Object.fromEntries(
    Object.values(EMBED_ENV).flatMap((name) => (env[name] ? [[name, env[name]]] : [])),
  );
  const parsed = Settings.safeParse(present);
  if (!parsed.success)
    throw new Error(
      `invalid settings: ${parsed.error.issues.map((issue) => `${String(issue.path[0])} ${issue.message}`).join('; ')}`,
    );
  const values = parsed.data;
  return {
    modelFile: values[EMBED_ENV.model],
    manifestFile: values[EMBED_ENV.manifest],
    device: values[EMBED_ENV.device],
    mean: values[EMBED_ENV.mean],
    std: values[EMBED_ENV.std],
    maxBytes: values[EMBED_ENV.maxBytes],
    threads: values[EMBED_ENV.threads] ?? Math.max(1, availableParallelism()),
  };
}

const Manifest = z.strictObject({
  images: z.array(z.strictObject({ url: z.url({ protocol: /^https?$/ }).max(8192) })).max(MAX_EMBED_IMAGES),
});
/** A manifest of MAX_EMBED_IMAGES longest URLs, with room for JSON. */
const MAX_MANIFEST_BYTES = MAX_EMBED_IMAGES * 8300 + 1024;

export async function readManifest(file: string): Promise<EmbedManifest> {
  if ((await stat(file)).size > MAX_MANIFEST_BYTES) throw new Error(`the manifest is over ${MAX_MANIFEST_BYTES} bytes`);
  const parsed = Manifest.safeParse(JSON.parse(await readFile(file, 'utf8')));
  if (!parsed.success)
    throw new Error(
      `invalid manifest: ${parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.')} ${issue.message}`)
        .join('; ')}`,
    );
  return parsed.data;
}
