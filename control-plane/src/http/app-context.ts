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
  services: RequestServices;
}

export type AppContext = ParameterizedContext<AppState>;
