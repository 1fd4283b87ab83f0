import { z } from 'zod';
import { pingDatabase } from '../db/database-health.ts';
import { defineRoute } from '../http/define-route.ts';
import { Unavailable } from '../http/errors.ts';

const Health = z.object({ status: z.literal('ok') });

const HealthCheck = z.object({
  check: z.string().meta({ description: 'What was checked: database, migrations, clock, signing secret, replicas, …' }),
  status: z.enum(['OK', 'WARN', 'FAIL']).meta({ description: 'OK; WARN: works, but look; FAIL: broken' }),
  message: z.string(),
  fix: z.string().optional().meta({ description: 'What to do, for WARN and FAIL' }),
});
const HealthChecks = z.object({
  checks: z.array(HealthCheck).meta({ description: 'In the order vpctl doctor runs them' }),
});

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

export const healthChecks = defineRoute({
  method: 'GET',
  path: '/api/health/checks',
  tag: 'Operations',
  summary: 'What `vpctl doctor` checks, run now by the answering control plane (owners and admins)',
  description:
    "Workspace owner or admin keys only (other roles: 403). The database (its version, on this process's connection), " +
    'migrations, clock skew against the database, the signing secret, the replicas seen in the last minutes, the blob store ' +
    '(a probe object written, read back and deleted), the GPU hosts and their agent versions, and free disk space under DATA_DIR. ' +
    "The hosts and agent versions checks name only the key's workspace's own hosts and the appliance-wide pool's, never another " +
    "workspace's. A check that fails is a FAIL in the list, not an error answer.",
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'One entry per check', schema: HealthChecks },
  errors: [403],
  handler: async (ctx) => ({ checks: await ctx.state.services.healthChecks.checksFor(ctx.state.actor) }),
});

export const healthRoutes = [liveness, readiness, healthChecks];
