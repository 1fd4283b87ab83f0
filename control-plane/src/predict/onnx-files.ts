import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../storage/blob-store.ts';

export interface LocalOnnx {
  file: string;
  bytes: number;
}

/**
 * ONNX artifacts as local files for onnxruntime. A disk store's file is used in place; from S3 each artifact is
 * fetched once into `dir` (keyed by its blob key, which never changes its bytes), and the folder is kept under
 * `maxBytes` by deleting the files used longest ago (a loaded session keeps its model in memory).
 */
export class OnnxFiles {
  private readonly store: BlobStore;
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly fetching = new Map<string, Promise<LocalOnnx>>();

  constructor(store: BlobStore, dir: string, maxBytes: number) {
    this.store = store;
    this.dir = dir;
    this.maxBytes = maxBytes;
  }

  async local(key: string): Promise<LocalOnnx> {
    const inPlace = this.store.localPath(key);
    if (inPlace) return { file: inPlace, bytes: (await stat(inPlace)).size };
    const file = join(this.dir, `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.onnx`);
    const cached = await stat(file).catch(() => undefined);
    if (cached) {
      const now = new Date();
      await utimes(file, now, now).catch(() => undefined);
      return { file, bytes: cached.size };
    }
    let fetching = this.fetching.get(file);
    if (!fetching) {
      fetching = this.fetch(key, file).finally(() => this.fetching.delete(file));
      this.fetching.set(file, fetching);
    }
    return fetching;
  }

  private async fetch(key: string, file: string): Promise<LocalOnnx> {
    const read = await this.store.get(key);
    if (!read) throw new Error('the ONNX export file is missing from storage');
    await mkdir(this.dir, { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    try {
      await pipeline(read.stream, createWriteStream(partial));
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    const bytes = (await stat(file)).size;
    await this.trim(file);
    return { file, bytes };
  }

  private async trim(keep: string): Promise<void> {
    const names = (await readdir(this.dir)).filter((name) => name.endsWith('.onnx'));
    const files = (
      await Promise.all(
        names.map(async (name) => ({
          path: join(this.dir, name),
          info: await stat(join(this.dir, name)).catch(() => undefined),
        })),
      )
    )
      .flatMap(({ path, info }) => (info ? [{ path, size: info.size, used: info.mtimeMs }] : []))
      .sort((a, b) => a.used - b.used);
    let total = files.reduce((sum, entry) => sum + entry.size, 0);
    for (const entry of files) {
      if (total <= this.maxBytes) break;
      if (entry.path === keep) continue;
      await rm(entry.path, { force: true });
      total -= entry.size;
    }
  }
}
