import { randomUUID } from 'node:crypto';
import {
  type FileHandle,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { callbackify } from 'node:util';
import { leftByEnded, processTag } from '../process-identity.ts';
import {
  BlobExists,
  type BlobHead,
  type BlobRead,
  type BlobStore,
  type ByteRange,
  type PutOptions,
  type StoredBlob,
} from './blob-store.ts';
import { CountingHash } from './counting-hash.ts';
import { clampRange } from './range-check.ts';

const TMP_DIR = '.tmp';
/**
 * Content types live in small sidecars under `.meta/<key>.json`, mirroring the object tree (extended
 * attributes are not on every filesystem), so the objects themselves stay plain files. A sidecar is
 * renamed into place just after its object is published, never before: a refused create-only put must
 * not touch the existing object's type. Until then (or if one is missing) the type reads as
 * application/octet-stream.
 */
const META_DIR = '.meta';
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';
const WRITE_CHUNK_BYTES = 1024 * 1024;
/**
 * Files past this are read in 1 MiB: a 10 MB artifact downloaded in 64 KiB reads (Node's default) took 25–40% longer.
 * Smaller ones keep the default: a read stream allocates a whole chunk for every read, whatever the file's size (1 MiB
 * per thumbnail halved the rate of a ul:// dataset's image downloads).
 */
const READ_CHUNK_BYTES = 1024 * 1024;
/**
 * A temp file is named after the process writing it (processTag): one of a process here that has ended is deleted at
 * once. One of another replica sharing the folder, whose process cannot be checked from here, goes when nothing has
 * written to it for this long: every chunk a put receives touches its file, and no upload stalls a day.
 */
const INTERRUPTED_AFTER_MS = 24 * 3600_000;

/** Keys are relative `/` paths; anything that could leave the root or hit the store's own folders is refused. */
function checkKey(key: string): void {
  const segments = key.split('/');
  const bad =
    key === '' ||
    key.includes('\\') ||
    key.includes('\0') ||
    segments.some((segment) => segment === '' || segment === '.' || segment === '..') ||
    segments[0] === TMP_DIR ||
    segments[0] === META_DIR;
  if (bad) throw new Error(`invalid blob key: ${JSON.stringify(key)}`);
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Runs `operation`, which creates `path`; when the folder it goes in is missing, makes the folder and runs it again. */
async function withFolder<T>(path: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(dirname(path), { recursive: true });
    return operation();
  }
}

async function unlinkIfThere(path: string): Promise<void> {
  await unlink(path).catch((error: unknown) => {
    if (!isMissing(error)) throw error;
  });
}

/** The embedded default: objects are plain files under `root`, made visible by one link or rename. */
export class DiskBlobStore implements BlobStore {
  readonly kind = 'disk';
  readonly directOrigin = undefined;
  readonly root: string;
  /** Temp files of this process's puts in progress, never swept whatever their age. */
  private readonly writing = new Set<string>();
  private readonly tag = processTag();

  constructor(root: string) {
    this.root = root;
  }

  /**
   * A put is nine file operations in the usual case: open, write and close the temp file, its content-type sidecar in
   * one writeFile, link (or rename) and rename them into place, unlink the temp name. Folders are made only when an
   * operation finds one missing (withFolder), not every time: an ingest stores a thumbnail per image.
   */
  async put(key: string, body: Readable, options: PutOptions): Promise<StoredBlob> {
    checkKey(key);
    const tmp = join(this.root, TMP_DIR, `${this.tag}${randomUUID()}`);
    const sidecar = `${tmp}.json`;
    const counter = new CountingHash(options.expectedBytes, { md5: false });
    this.writing.add(tmp);
    // What is left to delete when the put ends, whether it failed or not.
    const left = new Set([tmp, sidecar]);
    try {
      const file = await withFolder(tmp, () => open(tmp, 'wx'));
      if (options.ownedChunks === true) {
        try {
          await pipeline(body, counter, freeingFileWriter(file));
        } finally {
          await file.close();
        }
      } else {
        // Node's own file stream (it closes the file): ~12% less time per small put (a thumbnail) than the writer above.
        await pipeline(body, counter, file.createWriteStream({ highWaterMark: WRITE_CHUNK_BYTES }));
      }
      const stored = counter.result();
      await writeFile(sidecar, JSON.stringify({ contentType: options.contentType }));
      if (await this.publish(tmp, this.path(key), key, options.createOnly === true)) left.delete(tmp);
      await withFolder(this.metaPath(key), () => rename(sidecar, this.metaPath(key)));
      left.delete(sidecar);
      return stored;
    } finally {
      await Promise.all([...left].map(unlinkIfThere));
      this.writing.delete(tmp);
    }
  }

  /** Size and bytes come from one open file, so a concurrent overwrite (a rename) cannot mix two versions. */
  async get(key: string, range?: ByteRange): Promise<BlobRead | undefined> {
    checkKey(key);
    let file;
    try {
      file = await open(this.path(key));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      const info = await file.stat();
      if (!info.isFile()) {
        await file.close();
        return undefined;
      }
      const served = range && clampRange(range, info.size);
      const contentType = await this.readMeta(key);
      return {
        size: info.size,
        contentType,
        range: served,
        stream: file.createReadStream({
          ...served,
          ...((served ? served.end - served.start + 1 : info.size) > READ_CHUNK_BYTES && {
            highWaterMark: READ_CHUNK_BYTES,
          }),
        }),
      };
    } catch (error) {
      await file.close();
      throw error;
    }
  }

  async head(key: string): Promise<BlobHead | undefined> {
    checkKey(key);
    try {
      const info = await stat(this.path(key));
      // A folder is where keys below it live, not an object.
      return info.isFile() ? { size: info.size, contentType: await this.readMeta(key) } : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    await rm(this.path(key), { force: true });
    await rm(this.metaPath(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    yield* this.walk('', prefix);
  }

  localPath(key: string): string {
    checkKey(key);
    return this.path(key);
  }

  /** Temp files (and their content-type sidecars) of puts that stopped without cleaning up, see INTERRUPTED_AFTER_MS. */
  async sweepInterrupted(): Promise<number> {
    const dir = join(this.root, TMP_DIR);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isMissing(error)) return 0;
      throw error;
    }
    let deleted = 0;
    for (const name of names) {
      const path = join(dir, name);
      if (this.writing.has(path.replace(/\.json$/, ''))) continue;
      const info = await stat(path).catch((error: unknown) => (isMissing(error) ? undefined : Promise.reject(error)));
      if (!info?.isFile() || (!leftByEnded(name) && Date.now() - info.mtimeMs < INTERRUPTED_AFTER_MS)) continue;
      await rm(path, { force: true });
      deleted++;
    }
    return deleted;
  }

  async directUrl(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {}

  private path(key: string): string {
    return join(this.root, ...key.split('/'));
  }

  private metaPath(key: string): string {
    return `${join(this.root, META_DIR, ...key.split('/'))}.json`;
  }

  /** Link refuses an existing target atomically (create-only); rename replaces it atomically. True when `tmp` was renamed away. */
  private async publish(tmp: string, final: string, key: string, createOnly: boolean): Promise<boolean> {
    if (!createOnly) {
      await withFolder(final, () => rename(tmp, final));
      return true;
    }
    try {
      await withFolder(final, () => link(tmp, final));
      return false;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new BlobExists(key);
      throw error;
    }
  }

  private async readMeta(key: string): Promise<string> {
    try {
      return (JSON.parse(await readFile(this.metaPath(key), 'utf8')) as { contentType: string }).contentType;
    } catch (error) {
      if (isMissing(error)) return DEFAULT_CONTENT_TYPE;
      throw error;
    }
  }

  /** Depth-first through the folders that can hold keys under `prefix`, names sorted within each. */
  private async *walk(dir: string, prefix: string): AsyncIterable<{ key: string; size: number }> {
    let entries;
    try {
      entries = await readdir(join(this.root, dir), { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (dir === '' && (entry.name === TMP_DIR || entry.name === META_DIR)) continue;
      const key = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (prefix.startsWith(`${key}/`) || `${key}/`.startsWith(prefix)) yield* this.walk(key, prefix);
      } else if (entry.isFile() && key.startsWith(prefix)) {
        const { size } = await stat(join(this.root, key));
        yield { key, size };
      }
    }
  }
}

/**
 * The writer of a put whose chunks are its own (an upload's): chunks gathered up to WRITE_CHUNK_BYTES go out in one
 * writev and each is freed once written. V8 frees a request's chunks only in a collection it starts after 64 MB of
 * them, and at disk speed (~500 MB/s) another ~50 MB arrives while it marks, so a 2 GiB upload's RSS grew by 80–120 MB.
 */
function freeingFileWriter(file: FileHandle): Writable {
  return new Writable({
    highWaterMark: WRITE_CHUNK_BYTES,
    writev: callbackify(async (chunks: Array<{ chunk: Buffer }>) => {
      const buffers = chunks.map(({ chunk }) => chunk);
      await writeAll(file, buffers);
      buffers.forEach(free);
    }),
  });
}

async function writeAll(file: FileHandle, buffers: Buffer[]): Promise<void> {
  for (let rest = buffers; rest.length > 0;) {
    const { bytesWritten } = await file.writev(rest);
    if (bytesWritten === 0 && rest.some((buffer) => buffer.length > 0)) throw new Error('the disk took no bytes');
    rest = after(rest, bytesWritten);
  }
}

/** What is left of `buffers` once their first `bytes` are written. */
function after(buffers: Buffer[], bytes: number): Buffer[] {
  let skipped = 0;
  for (const [index, buffer] of buffers.entries()) {
    if (skipped + buffer.length > bytes) return [buffer.subarray(bytes - skipped), ...buffers.slice(index + 1)];
    skipped += buffer.length;
  }
  return [];
}

/** Frees a chunk's memory now, when the chunk is the whole of it (a view into a larger buffer is left alone). */
function free(chunk: Buffer): void {
  const memory = chunk.buffer;
  if (
    memory instanceof ArrayBuffer &&
    !memory.detached &&
    chunk.byteOffset === 0 &&
    chunk.byteLength === memory.byteLength
  )
    memory.transfer(0);
}
