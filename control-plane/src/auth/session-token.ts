import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The console's session cookie: an opaque random value; the database keeps only its SHA-256. */
export const SESSION_COOKIE = 'vp_session';
/** Binds an OIDC sign-in's callback to the browser that started it (the state, which the provider echoes). */
export const OIDC_STATE_COOKIE = 'vp_oidc_state';
export const CSRF_HEADER = 'x-csrf-token';

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Undefined for a value that is no token of ours (not looked up). */
export function hashSessionToken(token: string): string | undefined {
  return TOKEN_PATTERN.test(token) ? createHash('sha256').update(token).digest('hex') : undefined;
}

/**
 * The session's CSRF token, derived from the cookie value: a page of another site cannot read it (the cookie is
 * HttpOnly and GET /api/auth/session answers only same-origin scripts), and nothing more is stored.
 */
export function csrfTokenFor(token: string): string {
  return createHmac('sha256', token).update('vp-csrf-v1').digest('base64url');
}

export function csrfMatches(token: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(csrfTokenFor(token));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A Set-Cookie value: HttpOnly, SameSite=Lax, Path=/, Secure when the appliance is reached over https. */
export function cookieHeader(name: string, value: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  return [
    `${name}=${value}`,
    'HttpOnly',
    'SameSite=Lax',
    'Path=/',
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
