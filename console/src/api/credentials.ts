/**
 * How this tab proves who it is. A pasted API key lives in sessionStorage (this tab only, gone when it closes) and is
 * sent as `Authorization: Bearer`; a password or OIDC sign-in is an HttpOnly session cookie the script never sees,
 * plus the session's CSRF token (kept in memory) for writes.
 */
const KEY_ITEM = 'vp-key';
let csrfToken: string | undefined;

export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_ITEM) ?? undefined;
}

export function rememberKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function rememberCsrfToken(token: string | undefined): void {
  csrfToken = token;
}

export function forgetCredentials(): void {
  sessionStorage.removeItem(KEY_ITEM);
  csrfToken = undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Headers for one request: the bearer key when one was given, else the CSRF token on a cookie-authenticated write. */
export function credentialHeaders(method: string): Record<string, string> {
  const key = storedKey();
  if (key) return { authorization: `Bearer ${key}` };
  if (csrfToken && !SAFE_METHODS.has(method.toUpperCase())) return { 'x-csrf-token': csrfToken };
  return {};
}
