import { defineRoute } from '../http/define-route.ts';
import { GpuAvailability, GpuAvailabilityQuery } from './gpu-availability.schemas.ts';

export const gpuAvailability = defineRoute({
  method: 'GET',
  path: '/api/training/gpu-availability',
  tag: 'Training',
  summary: 'Stock status of each GPU type on connected hosts, keyed by GPU type ID',
  description:
    'Counts GPUs of connected hosts in the appliance-wide pool; `managed=true` (needs a key, else 401) adds the hosts ' +
    "private to the key's workspace. Every known GPU type ID is listed, unavailable when none is connected, plus any " +
    'other type a host reports. status: available when free > 0, busy when GPUs exist but none is free, unavailable ' +
    'otherwise. `cpu` counts connected CPU-only hosts, which run jobs with gpuType `cpu`.',
  auth: 'optional',
  limit: 'default',
  request: { query: GpuAvailabilityQuery },
  response: { status: 200, description: 'Stock by GPU type', schema: GpuAvailability },
  errors: [401],
  handler: (ctx, { query }) => ctx.state.services.gpuAvailability.read(ctx.state.actor, query.managed),
});

export const trainingRoutes = [gpuAvailability];
