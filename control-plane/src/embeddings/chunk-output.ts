// What an embedding chunk's host left behind (EMBED_FILES, uploaded as the job's outputs), read back by its analysis.
// Nothing in it is trusted: sizes are checked before a byte is read, the result against the chunk's images, the
// vectors' length against images x dims x 4, every value for being finite and every vector for unit length, so a
// hostile or broken host fails its chunk (ChunkOutputInvalid) and never the control plane.
import type { EntityManager } from '@mikro-orm/postgresql';
import { MAX_EMBED_DIMS } from '@vp/inference-server/contract';
import { z } from 'zod';
import { deleteJobOutputs, jobOutputs, type JobOutput } from '../jobs/job-output.store.ts';
import type { Storage } from '../storage/storage.ts';
import { forgetObject } from '../storage/stored-object.store.ts';
import { CHUNK_OUTPUTS } from './embedding-chunk.job.ts';

/** How far a host's vector may be from unit length (float32 rounding is far below it). */
const UNIT_TOLERANCE = 1e-3;
const MAX_REASON = 1000;

export class ChunkOutputInvalid extends Error {}

const Result = z.strictObject({
  device: z.enum(['cpu', 'cuda']),
  deviceNote: z.string().max(MAX_REASON).optional(),
  dims: z.int().min(0).max(MAX_EMBED_DIMS),
  images: z.array(
    z.strictObject({ stage: z.enum(['download', 'decode']), reason: z.string().max(MAX_REASON) }).nullable(),
  ),
});

export interface ChunkOutcome {
  device: 'cpu' | 'cuda';
  deviceNote?: string;
  dims: number;
  /** Per image of the chunk, in order: its vector, or why the host could not embed it. */
  embeddings: Array<Float32Array | { error: string; stage: 'download' | 'decode' }>;
}

/** The chunk's outcome for its `images` images; `dims`: the length the model's vectors already have, when known. */
export async function readChunkOutput(
  em: EntityManager,
  storage: Storage,
  jobId: string,
  images: number,
  dims: number | null,
): Promise<ChunkOutcome> {
  const outputs = await jobOutputs(em, jobId);
  const named = (name: string) => {
    const output = outputs.find((candidate) => candidate.name === name);
    if (!output) throw new ChunkOutputInvalid(`the host uploaded no ${name}`);
    return output;
  };
  const resultFile = named(CHUNK_OUTPUTS.result);
  let parsed: z.infer<typeof Result>;
  try {
    parsed = Result.parse(
      JSON.parse((await readCapped(storage, resultFile, 4096 + images * (MAX_REASON + 100))).toString('utf8')),
    );
  } catch (error) {
    if (error instanceof ChunkOutputInvalid) throw error;
    throw new ChunkOutputInvalid(
      `its ${CHUNK_OUTPUTS.result} is not a valid result: ${(error as Error).message.split('\n')[0].slice(0, 300)}`,
    );
  }
  if (parsed.images.length !== images)
    throw new ChunkOutputInvalid(`its result covers ${parsed.images.length} images, not the chunk's ${images}`);
  const embedded = parsed.images.filter((image) => image === null).length;
  if (embedded > 0 && (parsed.dims === 0 || (dims !== null && parsed.dims !== dims))) {
    throw new ChunkOutputInvalid(`its vectors have ${parsed.dims} values, not the model's ${dims ?? 'at least 1'}`);
  }
  const vectorsFile = named(CHUNK_OUTPUTS.vectors);
  const expected = embedded * parsed.dims * 4;
  if (vectorsFile.size !== expected)
    throw new ChunkOutputInvalid(
      `its vectors are ${vectorsFile.size} bytes, not ${embedded} images x ${parsed.dims} values x 4`,
    );
  const bytes = await readCapped(storage, vectorsFile, expected);
  const values = new Float32Array(new Uint8Array(bytes).buffer);
  let next = 0;
  const embeddings = parsed.images.map((image): ChunkOutcome['embeddings'][number] => {
    if (image !== null) return { error: image.reason, stage: image.stage };
    const vector = values.slice(next * parsed.dims, (next + 1) * parsed.dims);
    next++;
    let squares = 0;
    for (const value of vector) squares += value * value;
    if (!Number.isFinite(squares) || Math.abs(Math.sqrt(squares) - 1) > UNIT_TOLERANCE)
      throw new ChunkOutputInvalid('its vectors are not of unit length');
    return vector;
  });
  return {
    device: parsed.device,
    ...(parsed.deviceNote && { deviceNote: parsed.deviceNote }),
    dims: parsed.dims,
    embeddings,
  };
}

/** Removes the chunk's outputs once read (or not needed): the objects, their records, their storage accounting. */
export async function removeChunkOutputs(em: EntityManager, storage: Storage, jobId: string): Promise<void> {
  for (const output of await jobOutputs(em, jobId)) {
    await storage.store.delete(output.storageKey);
    await forgetObject(em, output.storageKey);
  }
  await deleteJobOutputs(em, jobId);
}

/** The object's bytes, refused past `max` whatever its record or the store says. */
async function readCapped(storage: Storage, output: JobOutput, max: number): Promise<Buffer> {
  if (output.size > max)
    throw new ChunkOutputInvalid(`its ${output.name} is ${output.size} bytes, over the ${max} expected`);
  const read = await storage.store.get(output.storageKey);
  if (!read) throw new ChunkOutputInvalid(`its ${output.name} is gone from storage`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of read.stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      read.stream.destroy();
      throw new ChunkOutputInvalid(`its ${output.name} is over the ${max} bytes expected`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
