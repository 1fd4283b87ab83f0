import { REGIONS } from '@vp/config';
import { z } from 'zod';

export const STOCK_STATUSES = ['available', 'busy', 'unavailable'] as const;
const StockStatus = z
  .enum(STOCK_STATUSES)
  .meta({ description: 'available: at least one free; busy: some exist, none free; unavailable: none connected' });

export const GpuAvailabilityQuery = z.object({
  managed: z.stringbool().default(false).meta({ description: "true adds the key's workspace's private hosts; needs a key" }),
});

export const GpuStock = z.object({
  status: StockStatus,
  total: z.number().int().meta({ description: 'GPUs of this type on connected hosts' }),
  free: z.number().int().meta({ description: 'Of those, GPUs not running a job' }),
  memoryGb: z.number().int().nullable().meta({ description: 'Memory of one GPU in GiB (the largest reported), null when none is connected' }),
});

export const GpuAvailability = z.object({
  gpus: z.record(z.string(), GpuStock).meta({ description: 'Keyed by GPU type ID (the gpuType of a training job): every known type, plus any other type a host reports' }),
  cpu: z.object({
    status: StockStatus,
    hosts: z.number().int().meta({ description: 'Connected CPU-only hosts (gpuType cpu)' }),
  }),
  updatedAt: z.iso.datetime(),
  region: z.enum(REGIONS),
});
