import { z } from 'zod';
import { pingDatabase } from '../db/database-health.ts';
import { defineRoute } from '../http/define-route.ts';
import { Unavailable } from '../http/errors.ts';

const Health = z.object({ status: z.literal('ok') });

export const liveness = defineRoute({
  method: 'GET',
  path: '/api/health',
  tag: 'Operations',
  summary: 'Liveness: the process answers',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'Alive', schema: Health },
  handler: () => ({ status: 'ok' as const }),
});

export const readiness = defineRoute({
  method: 'GET',
  path: '/api/ready',
  tag: 'Operations',
  summary: 'Readiness: the database answers',
  auth: 'public',
  limit: null,
  response: { status: 200, description: 'Ready for traffic', schema: Health },
  errors: [503],
  handler: async (ctx) => {
    try {
      await pingDatabase(ctx.state.em);
    } catch {
      throw Unavailable('Database unreachable');
    }
    return { status: 'ok' as const };
  },
});

export const healthRoutes = [liveness, readiness];
