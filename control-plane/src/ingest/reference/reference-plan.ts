import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { referencedFiles } from '../../images/image-references.store.ts';
import { ProviderError, type StoredObject } from '../../integrations/providers/provider.ts';
import { JobFailure } from '../../jobs/job-runner.ts';
import { normalizeEntryPath } from '../archive/safe-path.ts';
import { planArchive } from '../formats/detect.ts';
import { DatasetFileError, type IngestPlan } from '../formats/plan.ts';
import { Skips } from '../formats/skips.ts';
import { IN_MEMORY_IMAGE_BYTES, MAX_IMAGE_BYTES, type ItemReader, type KnownFile } from '../ingest-staging.ts';
import { listPage, readFile, type OpenedReference } from './reference-storage.ts';

/**
 * The most objects one prefix may hold (images, labels and everything else beneath it): the listing is held in
 * memory while the job runs (about 300 bytes an object). A larger one fails the job: index narrower prefixes.
 */
export const MAX_REFERENCE_OBJECTS = 1_000_000;
/** Label and metadata files (data.yaml, YOLO .txt, COCO .json) are read whole into memory, as from an archive; larger ones fail the job. */
export const MAX_LABEL_FILE_BYTES = 256 * 2 ** 20;

/** Why a file listed but gone when read is left out of the sync. */
export const DELETED_WHILE_SYNCING = 'deleted from the storage while the sync ran';

/** An image indexed by an earlier sync: what a re-sync reuses when its object's version is unchanged. */
type Indexed = KnownFile & { version: string | null };

/**
 * Lists the reference's prefix, plans it as an archive of the same files would be (YOLO, COCO, classify folders,
 * raw images; label files read through the provider) and returns the plan with the reader staging uses: each image
 * read once, in place (only its thumbnail is stored), unless it is indexed already at the version now listed.
 */
export async function planReference(
  em: EntityManager,
  datasetId: string,
  ref: OpenedReference,
  signal: AbortSignal,
  onListed: (objects: number) => void,
): Promise<{ plan: IngestPlan; reader: ItemReader }> {
  const { objects, skipped } = await listObjects(ref, signal, onListed);
  const files = [...objects.values()].map((object) => ({
    path: object.key.slice(ref.prefix.length),
    size: object.size,
  }));
  const streamLabels = async (path: string) => {
    const size = objects.get(path)?.size ?? 0;
    if (size > MAX_LABEL_FILE_BYTES)
      throw new DatasetFileError(`${path}: larger than ${MAX_LABEL_FILE_BYTES / 2 ** 20} MiB`);
    return readFile(ref, path, MAX_LABEL_FILE_BYTES, signal);
  };
  const plan = await planArchive(
    { read: async (path) => buffer(await streamLabels(path)), stream: streamLabels },
    files,
  );
  plan.skipped.merge(skipped);
  const indexed = await indexedImages(em, datasetId);
  const versionOf = (path: string) => objects.get(path)?.version ?? null;
  const reader: ItemReader = {
    inPlace: true,
    sizeOf: (item) => objects.get(item.path)?.size ?? 0,
    versionOf: (item) => versionOf(item.path),
    known(item) {
      const before = indexed.get(item.path);
      return before && before.version === versionOf(item.path) ? before : undefined;
    },
    async read(item, size, spillFile) {
      if (size > MAX_IMAGE_BYTES) return `larger than ${MAX_IMAGE_BYTES} bytes`;
      try {
        if (size <= IN_MEMORY_IMAGE_BYTES)
          return await buffer(await readFile(ref, item.path, IN_MEMORY_IMAGE_BYTES, signal));
        await pipeline(await readFile(ref, item.path, MAX_IMAGE_BYTES, signal), createWriteStream(spillFile), {
          signal,
        });
        return { path: spillFile, bytes: (await stat(spillFile)).size };
      } catch (error) {
        // Storage in use changes while it is synced: a file deleted since the listing is left out (and an image indexed
        // from it removed), as the next listing would; the rest of the sync goes on.
        if (error instanceof ProviderError && error.kind === 'missing') return DELETED_WHILE_SYNCING;
        throw error;
      }
    },
  };
  return { plan, reader };
}

/** Every object beneath the prefix, by its path beneath it; keys no archive path could be are skipped with why. */
async function listObjects(
  ref: OpenedReference,
  signal: AbortSignal,
  onListed: (objects: number) => void,
): Promise<{ objects: Map<string, StoredObject>; skipped: Skips }> {
  const objects = new Map<string, StoredObject>();
  // Counted with a few examples, like an archive's: a prefix of a million odd keys holds no million reasons.
  const skipped = new Skips();
  let cursor: string | undefined;
  let seen = 0;
  do {
    signal.throwIfAborted();
    const page = await listPage(ref, cursor);
    seen += page.objects.length;
    if (seen > MAX_REFERENCE_OBJECTS)
      throw new JobFailure(`${ref.label} holds more than ${MAX_REFERENCE_OBJECTS} objects; connect a narrower prefix`);
    for (const object of page.objects) {
      const path = object.key.slice(ref.prefix.length);
      const entry = normalizeEntryPath(path);
      if ('path' in entry && entry.path === path) objects.set(path, object);
      else if (!('skip' in entry && ['directory', 'ignored'].includes(entry.skip)))
        skipped.add(path, 'skip' in entry ? entry.skip : 'a key that is not a plain relative path');
    }
    onListed(seen);
    cursor = page.cursor;
  } while (cursor);
  return { objects, skipped };
}

async function indexedImages(em: EntityManager, datasetId: string): Promise<Map<string, Indexed>> {
  const rows = await referencedFiles(em, datasetId);
  return new Map(
    rows.map((row) => [
      row.reference_key,
      {
        hash: row.hash,
        ext: row.ext,
        width: row.width,
        height: row.height,
        channels: row.channels,
        bytes: Number(row.bytes),
        error: row.error,
        version: row.reference_version,
      },
    ]),
  );
}
