import { z } from 'zod';
import { randomBytes } from 'node:crypto';

/** 24-hex identifiers: 4 bytes of seconds then 8 random bytes, so IDs sort by creation time. */
export function newId(): string {
  const seconds = Math.floor(Date.now() / 1000).toString(16).padStart(8, '0');
  return seconds + randomBytes(8).toString('hex');
}

export const ID_PATTERN = /^[0-9a-f]{24}$/;

export const ObjectId = z.string().regex(ID_PATTERN, 'must be a 24-character hexadecimal id');
