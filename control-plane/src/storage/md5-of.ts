import { createHash } from 'node:crypto';
import type { BlobStore } from './blob-store.ts';

/** Hex MD5 of a stored object, streamed back from the store; undefined when the key holds nothing. */
export async function md5Of(store: BlobStore, key: string): Promise<string | undefined> {
  const read = await store.get(key);
  if (!read) return undefined;
  const hash = createHash('md5');
  for await (const chunk of read.stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
