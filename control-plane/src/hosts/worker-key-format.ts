import { createHash, randomBytes } from 'node:crypto';

// Prefixes differ from API keys (`ul_` + 40 hex), so neither kind of secret can pass for the other.
export const WORKER_KEY_PATTERN = /^vpw_[0-9a-f]{48}$/;
export const ENROLLMENT_TOKEN_PATTERN = /^vpe_[0-9a-f]{32}$/;

/** `vpw_` and 48 lowercase hex digits (52 characters). */
export function generateWorkerKey(): string {
  return `vpw_${randomBytes(24).toString('hex')}`;
}

/** `vpe_` and 32 lowercase hex digits. */
export function generateEnrollmentToken(): string {
  return `vpe_${randomBytes(16).toString('hex')}`;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** `vpw_` plus the first 8 hex digits. */
export function workerKeyPrefix(key: string): string {
  return key.slice(0, 12);
}
