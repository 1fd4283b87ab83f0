import type { Middleware } from 'koa';
import type { AppState } from '../http/app-context.ts';
import { auditEntryOf, WRITTEN_AT_ONCE } from './audit-actions.ts';
import type { AuditRecorder } from './audit-recorder.ts';

/**
 * Records each change the API's routes answered, refused ones included (see audit-actions.ts for what and how). Sits
 * outside the error middleware, so it sees the status an error was answered with; the route, its parameters and the
 * actor are known once the router has run. A GET costs one lookup; a change, one entry queued in memory (a named
 * action waits for its write).
 */
export function auditTrail(recorder: AuditRecorder): Middleware<AppState> {
  return async (ctx, next) => {
    const at = Date.now();
    await next();
    const route = ctx.state.route;
    if (route === undefined) return;
    const entry = auditEntryOf({
      at,
      method: ctx.method,
      route,
      params: (ctx as unknown as { params?: Record<string, string> }).params,
      status: ctx.status,
      actor: ctx.state.actor,
      note: ctx.state.audit,
      clientAddress: ctx.state.clientAddress,
      requestId: ctx.state.requestId,
    });
    if (!entry) return;
    recorder.record(entry);
    if (WRITTEN_AT_ONCE.has(entry.action)) await recorder.flush();
  };
}
