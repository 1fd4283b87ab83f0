import { z } from 'zod';
import { randomBytes } from 'node:crypto';

/** 24-hex identifiers: 4 bytes of seconds then 8 random bytes, so IDs sort by creation time. */
export function newId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0');
  return seconds + randomBytes(8).toString('hex');
}

/** newId() in SQL, for set-based inserts: the same seconds prefix, then 8 bytes hashed from a random UUID. */
export const NEW_ID_SQL = `lpad(to_hex(floor(extract(epoch from clock_timestamp()))::bigint), 8, '0') || left(md5(gen_random_uuid()::text), 16)`;

export const ID_PATTERN = /^[0-9a-f]{24}$/;

export const ObjectId = z.string().regex(ID_PATTERN, 'must be a 24-character hexadecimal id');
