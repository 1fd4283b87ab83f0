import { createHash } from 'node:crypto';
import type { BlobStore } from './blob-store.ts';

/** Hex digest of a stored object, streamed back from the store; undefined when the key holds nothing. */
export async function digestOf(
  store: BlobStore,
  key: string,
  algorithm: 'md5' | 'sha256',
): Promise<string | undefined> {
  const read = await store.get(key);
  if (!read) return undefined;
  const hash = createHash(algorithm);
  for await (const chunk of read.stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Hex MD5 of a stored object; undefined when the key holds nothing. */
export const md5Of = (store: BlobStore, key: string): Promise<string | undefined> => digestOf(store, key, 'md5');
