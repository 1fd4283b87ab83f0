import type { EntityManager } from '@mikro-orm/postgresql';
import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { Actor } from '../auth/actor.ts';

/**
 * The services a request's handlers reach (`ctx.state.services`). Empty here, so the HTTP layer depends on no domain:
 * the composition root (services.ts) fills it in by declaration merging with its `Services`.
 */
export interface RequestServices {}

export interface AppState {
  requestId: string;
  log: Logger;
  /** The request's own fork of the ORM EntityManager, made on first use (see Services.em). */
  em: EntityManager;
  actor: Actor;
  clientAddress: string;
  /** The template of the route that took the request (`/api/datasets/:owner/:dataset`); unset where none did. */
  route?: string;
  services: RequestServices;
  /** What the route's handler adds to the request's audit entry (audit/audit-actions.ts). */
  audit?: AuditNote;
}

/**
 * What a handler tells the audit log that the request itself does not: who signed in (a sign-in has no key), the
 * workspace of a host enrolled with its token, the resource a change made where the path does not name it (a key
 * created, a trash item erased). Never a secret.
 */
export interface AuditNote {
  actor?: { userId: string; username: string; workspaceId: string | null; via: string | null };
  workspaceId?: string | null;
  resource?: string;
}

export type AppContext = ParameterizedContext<AppState>;
