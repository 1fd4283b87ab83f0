import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { queryInt } from '../validation/integers.ts';
import { Invalid } from './errors.ts';

/**
 * Query fragments and response helpers for the spec's five pagination styles. A limit above the
 * maximum is refused with 400 (it names the maximum) rather than silently clamped, so a client never
 * mistakes a short page for the end of the list.
 */
export const limitQuery = (defaultLimit: number, max: number) =>
  z.object({
    limit: queryInt()
      .min(1)
      .max(max)
      .default(defaultLimit)
      .meta({ description: `1-${max}` }),
  });

export const offsetQuery = (defaultLimit: number, max: number) =>
  limitQuery(defaultLimit, max).extend({ offset: queryInt().min(0).default(0) });

export const cursorQuery = (defaultLimit: number, max: number) =>
  limitQuery(defaultLimit, max).extend({
    cursor: z.string().max(200).optional().meta({ description: 'nextCursor of the previous page' }),
    includeTotal: z.stringbool().default(true),
  });

export const pageQuery = (defaultLimit: number, max: number) =>
  limitQuery(defaultLimit, max).extend({ page: queryInt().min(1).default(1) });

export const tokenQuery = (defaultLimit: number, max: number) =>
  limitQuery(defaultLimit, max).extend({ pageToken: z.string().max(2000).optional() });

/** hasMore for offset pages: fetch limit + 1 rows and pass them here. */
export function offsetPage<T>(rows: T[], limit: number): { items: T[]; hasMore: boolean } {
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}

export function pageInfo(total: number, page: number, limit: number) {
  return { total, page, limit, totalPages: Math.max(1, Math.ceil(total / limit)) };
}

/** Opaque page tokens: base64url JSON with an HMAC, so a client can neither read nor forge one. */
export class PageTokens {
  private readonly secret: string;

  constructor(secret: string) {
    this.secret = secret;
  }

  encode(position: Record<string, unknown>): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  decode(token: string): Record<string, unknown> {
    const [body, signature] = token.split('.');
    const expected = this.sign(body ?? '');
    if (
      !body ||
      !signature ||
      signature.length !== expected.length ||
      !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))
    ) {
      throw Invalid('pageToken: is not a token this server issued');
    }
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  }

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(`page-token:${body}`).digest('base64url').slice(0, 22);
  }
}
