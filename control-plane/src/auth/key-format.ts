import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PATTERN = /^ul_[0-9a-f]{40}$/;

/** A new key: `ul_` and 40 lowercase hex digits (43 characters). */
export function generateApiKey(): string {
  return `ul_${randomBytes(20).toString('hex')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The display prefix: `ul_` plus the first 8 hex digits. */
export function displayPrefix(key: string): string {
  return key.slice(0, 11);
}

/** The key from an `Authorization: Bearer <key>` header; undefined when the header is absent. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}
