import type { EntityManager } from '@mikro-orm/postgresql';
import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { Actor } from '../auth/actor.ts';
import type { Services } from '../services.ts';

export interface AppState {
  requestId: string;
  log: Logger;
  /** The request's own fork of the ORM EntityManager, made on first use (see Services.em). */
  em: EntityManager;
  actor: Actor;
  clientAddress: string;
  services: Services;
}

export type AppContext = ParameterizedContext<AppState>;
