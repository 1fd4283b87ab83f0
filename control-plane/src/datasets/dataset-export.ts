import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { imageFileUrl } from '../images/image-bytes.ts';
import { imagesWithLabelsAfter } from '../images/image.store.ts';
import type { Label, Task } from '../images/labels.ts';
import { toNdjsonAnnotations } from '../ingest/formats/ndjson.ts';
import type { Storage } from '../storage/storage.ts';
import { versionImagesAfter } from './dataset-version.store.ts';
import type { Split } from './dataset.entity.ts';

/** Image URLs in an export stay valid this long; the file itself is rewritten once it is a day old. */
export const EXPORT_URL_SECONDS = 7 * 24 * 3600;
/** Images read and written per round: bounded memory whatever the dataset's size. */
const PAGE_SIZE = 5000;

/** What line 1 of the NDJSON describes: the dataset, or one of its versions. */
export interface ExportHeader {
  task: Task;
  name: string;
  description: string;
  classNames: string[];
  version?: number;
  kptShape?: [number, number] | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One image as the export writes it. */
export interface ExportImage {
  /** An image indexed in place (connected dataset) is read from its storage, by its id, when reference_key is set. */
  id?: string;
  reference_key?: string | null;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  split: Split;
  labels: Label[];
  metadata: Record<string, unknown>;
}

/**
 * Pages by keyset, asking for the next page before handing out this one: the database reads while the
 * caller signs and writes.
 */
async function* keysetPages<T>(fetchAfter: (last: T | undefined) => Promise<T[]>): AsyncGenerator<T[]> {
  let page = await fetchAfter(undefined);
  while (page.length > 0) {
    const next = page.length === PAGE_SIZE ? fetchAfter(page[page.length - 1]) : Promise.resolve([]);
    // Handled here too, so a caller that stops early never leaves a rejection unhandled.
    next.catch(() => undefined);
    yield page;
    page = await next;
  }
}

/** The dataset's images as they are now, oldest first. Run it in one snapshot (repeatable read) for a consistent file. */
export function liveImagePages(em: EntityManager, datasetId: string): AsyncGenerator<ExportImage[]> {
  return keysetPages<ExportImage & { id: string }>((last) => imagesWithLabelsAfter(em, datasetId, last?.id, PAGE_SIZE));
}

/** An image of a version's manifest: what an export writes, plus what a restore needs. */
export interface VersionImageRow extends ExportImage {
  position: number;
  channels: number;
  /** bigint: the driver hands it over as text. */
  bytes: string | number;
  error: string | null;
}

/**
 * A version's images from its manifest, in position order. A version of a connected dataset stores no bytes: an image
 * still indexed with the same file (hash) is read in place, through its id and key.
 */
export function versionImagePages(em: EntityManager, versionId: string): AsyncGenerator<VersionImageRow[]> {
  return keysetPages<VersionImageRow>((last) => versionImagesAfter(em, versionId, last?.position ?? -1, PAGE_SIZE));
}

/**
 * File names unique within the export: the client lays images out as images/{split}/{file} and labels
 * as labels/{split}/{stem}.txt, so a repeated stem (same name in two splits, or a.jpg beside a.png)
 * gets the image hash's first 8 characters in front. Stems compare ignoring case, for case-insensitive disks.
 */
class UniqueNames {
  private readonly taken = new Set<string>();

  take(name: string, hash: string): string {
    let candidate = name;
    for (let n = 1; this.taken.has(stemKey(candidate)); n += 1) {
      candidate = n === 1 ? `${hash.slice(0, 8)}-${name}` : `${hash.slice(0, 8)}-${n}-${name}`;
    }
    this.taken.add(stemKey(candidate));
    return candidate;
  }
}

const stemKey = (name: string) => name.replace(/\.[^.]*$/, '').toLowerCase();

function headerLine(header: ExportHeader): string {
  return JSON.stringify({
    type: 'dataset',
    task: header.task,
    name: header.name,
    description: header.description,
    class_names: Object.fromEntries(header.classNames.map((name, index) => [String(index), name])),
    ...(header.version !== undefined ? { version: header.version } : {}),
    ...(header.kptShape ? { kpt_shape: header.kptShape } : {}),
    created_at: header.createdAt.toISOString(),
    updated_at: header.updatedAt.toISOString(),
  });
}

/**
 * Writes a dataset's NDJSON (line 1 the dataset, then one line per image with a signed URL valid
 * EXPORT_URL_SECONDS) and stores it under `key`, overwriting what was there. Images are read page by
 * page and the file is written to a temporary file first: the blob store needs the exact length up front.
 * Returns the file's size in bytes.
 */
export async function writeExport(
  storage: Storage,
  key: string,
  workspaceId: string,
  header: ExportHeader,
  pages: AsyncIterable<ExportImage[]>,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'vp-export-'));
  const path = join(dir, 'export.ndjson');
  try {
    await pipeline(ndjsonChunks(storage, workspaceId, header, pages), createWriteStream(path));
    const { size } = await stat(path);
    await storage.store.put(key, createReadStream(path), { contentType: 'application/x-ndjson', expectedBytes: size });
    return size;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The file's text, one chunk per page (pipeline waits for the disk between chunks). */
async function* ndjsonChunks(
  storage: Storage,
  workspaceId: string,
  header: ExportHeader,
  pages: AsyncIterable<ExportImage[]>,
): AsyncGenerator<string> {
  yield `${headerLine(header)}\n`;
  const names = new UniqueNames();
  for await (const page of pages) {
    const lines = await Promise.all(
      page.map((image) => imageLine(storage, workspaceId, header.task, names.take(image.name, image.hash), image)),
    );
    yield lines.join('');
  }
}

async function imageLine(
  storage: Storage,
  workspaceId: string,
  task: Task,
  file: string,
  image: ExportImage,
): Promise<string> {
  const url = await imageFileUrl(
    storage.urls,
    { id: image.id ?? '', workspaceId, hash: image.hash, ext: image.ext, referenceKey: image.reference_key ?? null },
    { expiresInSeconds: EXPORT_URL_SECONDS, filename: file },
  );
  const annotations = toNdjsonAnnotations(task, image.labels);
  const line = {
    type: 'image',
    file,
    url,
    width: image.width,
    height: image.height,
    split: image.split,
    ...(annotations ? { annotations } : {}),
    ...(Object.keys(image.metadata).length > 0 ? { metadata: image.metadata } : {}),
    hash: image.hash,
  };
  return `${JSON.stringify(line)}\n`;
}
