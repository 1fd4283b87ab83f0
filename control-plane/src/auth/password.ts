import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { Invalid } from '../http/errors.ts';

/** scrypt cost: N = 2^15, r = 8, p = 1 (OWASP's minimum is 2^17 with r = 8 at p = 1 for 64 MiB; this is 32 MiB, ~50 ms here). */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** Refuses passwords too short to resist guessing or too long to hash cheaply (400). */
export function checkPasswordRules(password: string): void {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX)
    throw Invalid(`password: must be ${PASSWORD_MIN}-${PASSWORD_MAX} characters`);
}

/** `scrypt$N$r$p$<salt, base64>$<key, base64>`: the cost travels with the hash, so it can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** A stored hash of no password, checked against when the user is unknown, so both take the same time. */
let decoy: Promise<string> | undefined;

/** Whether `password` matches `stored`; with no stored hash, spends the same time and answers false. */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parts = (stored ?? (await (decoy ??= hashPassword(randomBytes(16).toString('hex'))))).split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  const expected = Buffer.from(parts[5], 'base64');
  const key = await derive(password, Buffer.from(parts[4], 'base64'), { N, r, p });
  return stored !== undefined && key.length === expected.length && timingSafeEqual(key, expected);
}
