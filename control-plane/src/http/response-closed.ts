import type { Context } from 'koa';

/** Aborts once the response is closed: sent, or its client gone first (a long poll then stops waiting for nobody). */
export function responseClosed(ctx: Pick<Context, 'res'>): AbortSignal {
  const closed = new AbortController();
  ctx.res.once('close', () => closed.abort());
  return closed.signal;
}
