import { createHmac, timingSafeEqual } from 'node:crypto';
import { Forbidden } from '../http/errors.ts';

export type SignedMethod = 'GET' | 'PUT';

/** What a signature covers besides the path: the method, the expiry and, for downloads, the filename. */
interface Signable {
  method: SignedMethod;
  path: string;
  expiresAt: number;
  filename?: string;
}

/** One message for every refusal, so a refusal never tells whether the object exists. */
export const BAD_SIGNATURE = 'Invalid or expired signed URL';

/**
 * HMAC-signed URLs for the control plane's own file routes (downloads from the disk store, upload PUTs).
 * The signature binds method, path, expiry and download filename; query parameters `expires` (unix
 * seconds) and `signature`. Verification happens before any lookup.
 */
export class UrlSigner {
  private readonly key: Buffer;
  /** The appliance's own URL, read when used: a server on port 0 learns its address only once it listens. */
  readonly baseUrl: () => string;

  constructor(secret: string, baseUrl: () => string) {
    this.key = createHmac('sha256', secret).update('signed-url').digest();
    this.baseUrl = baseUrl;
  }

  sign(method: SignedMethod, path: string, expiresAt: Date, filename?: string): string {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const query = new URLSearchParams({ expires: String(expires) });
    if (filename !== undefined) query.set('filename', filename);
    query.set('signature', this.signature({ method, path, expiresAt: expires, filename }));
    return `${this.baseUrl()}${path}?${query.toString()}`;
  }

  /** Throws 403 for a missing, tampered, expired or other-method signature. */
  verify(method: string, path: string, query: Record<string, string | string[] | undefined>): { filename?: string } {
    const { expires, signature, filename } = query;
    if (
      typeof expires !== 'string' ||
      typeof signature !== 'string' ||
      Array.isArray(filename) ||
      !/^\d{1,12}$/.test(expires)
    ) {
      throw Forbidden(BAD_SIGNATURE);
    }
    const signedMethod = method === 'HEAD' ? 'GET' : method;
    if (signedMethod !== 'GET' && signedMethod !== 'PUT') throw Forbidden(BAD_SIGNATURE);
    const expected = Buffer.from(this.signature({ method: signedMethod, path, expiresAt: Number(expires), filename }));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw Forbidden(BAD_SIGNATURE);
    if (Number(expires) * 1000 < Date.now()) throw Forbidden(BAD_SIGNATURE);
    return { filename };
  }

  private signature(what: Signable): string {
    return createHmac('sha256', this.key)
      .update(`${what.method}\n${what.path}\n${what.expiresAt}\n${what.filename ?? ''}`)
      .digest('base64url');
  }
}
