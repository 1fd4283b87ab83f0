import { NotFoundError, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import { PredictInputError } from '@vp/inference/request';
import { ProviderError } from '../integrations/providers/provider.ts';
import { HttpError } from './errors.ts';
import type { AppState } from './app-context.ts';

/** A storage provider's failures other than these are the caller's to fix (400). */
const PROVIDER_ERROR_STATUS: Partial<Record<ProviderError['kind'], number>> = {
  failing: 502,
  missing: 404,
  changed: 409,
};

/** At most this many problems are listed, and this many unknown keys of one object: a hostile body cannot grow the answer. */
const MAX_LISTED = 10;
/** A key or path segment, and a whole problem, longer than these are cut: both can quote what the request sent. */
const MAX_NAME = 100;
const MAX_PROBLEM = 1000;

const cut = (text: string, max = MAX_NAME) => (text.length > max ? `${text.slice(0, max)}…` : text);
const andMore = (listed: number, total: number, what: string) =>
  total > listed ? ` and ${total - listed} more ${what}` : '';

function ruleOf(issue: ZodError['issues'][number]): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const keys = issue.keys.slice(0, MAX_LISTED).map((key) => JSON.stringify(cut(key)));
  return `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${keys.join(', ')}${andMore(keys.length, issue.keys.length, 'keys')}`;
}

/** Field path and rule for each problem, e.g. `body.role: must be one of viewer, editor, admin, owner` (the first few). */
export function describeZodError(error: ZodError, location: string): string {
  const listed = error.issues.slice(0, MAX_LISTED).map((issue) => {
    const path = [location, ...issue.path.map((segment) => cut(String(segment)))].filter(Boolean).join('.');
    return cut(`${path}: ${ruleOf(issue)}`, MAX_PROBLEM);
  });
  return `${listed.join('; ')}${andMore(listed.length, error.issues.length, 'problems')}`;
}

/** Body-parser failures carry a status and a type; translate the ones a client can cause. */
function fromParserError(error: { status?: number; type?: string }): HttpError | undefined {
  if (error.status === 413 || error.type === 'entity.too.large') return new HttpError(413, 'Request body too large');
  if (error.status === 415) return new HttpError(415, 'Unsupported content type');
  if (error.status === 400 && (error.type === 'entity.parse.failed' || error.type === undefined)) {
    return new HttpError(400, 'Malformed JSON body');
  }
  return undefined;
}

function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof PredictInputError) return new HttpError(error.status, error.message);
  // As for every user-given address (a predict source), an endpoint that refuses, is not allowed or does not answer is the
  // caller's to fix (400); one that answers with a server error is a bad gateway; an object that is not there is 404.
  if (error instanceof ProviderError) return new HttpError(PROVIDER_ERROR_STATUS[error.kind] ?? 400, error.message);
  if (error instanceof NotFoundError) return new HttpError(404, 'Not found');
  if (error instanceof UniqueConstraintViolationException) return new HttpError(409, 'Already exists');
  if (error && typeof error === 'object' && 'status' in error && 'expose' in error) {
    return fromParserError(error as { status?: number; type?: string });
  }
  return undefined;
}

/** The one place errors become responses: `{ error }` with the spec's status, never a stack or SQL. */
export function errorMiddleware(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const known = toHttpError(error);
      if (known) {
        ctx.status = known.status;
        ctx.set(known.headers);
        ctx.body = { error: known.message, ...known.extra };
        return;
      }
      ctx.state.log.error({ err: error }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { error: 'Internal server error', requestId: ctx.state.requestId };
    }
  };
}
