import { REGIONS } from '@vp/config';
import { z } from 'zod';

export const STOCK_STATUSES = ['available', 'busy', 'unavailable'] as const;
const StockStatus = z
  .enum(STOCK_STATUSES)
  .meta({ description: 'available: at least one free; busy: some exist, none free; unavailable: none connected' });

export const GpuAvailabilityQuery = z.object({
  managed: z
    .stringbool()
    .default(false)
    .meta({ description: "true adds the key's workspace's private hosts; needs a key" }),
  detail: z
    .stringbool()
    .default(false)
    .meta({ description: 'true answers the counts behind the levels (GpuStockDetail) instead' }),
});

export const STOCK_LEVELS = ['High', 'Medium', 'Low'] as const;
export const GpuLevels = z.record(z.string(), z.enum(STOCK_LEVELS).nullable()).meta({
  description:
    'Keyed by GPU type ID (the gpuType of a training job; every known type, plus any other type a host reports) and cpu (CPU-only hosts): ' +
    'High when at least half of those connected are free, Medium when fewer are, Low when all are busy (a job waits), null when none is connected',
});

export const GpuStock = z.object({
  status: StockStatus,
  total: z.number().int().meta({ description: 'GPUs of this type on connected hosts' }),
  free: z.number().int().meta({ description: 'Of those, GPUs not running a job' }),
  memoryGb: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'Memory of one GPU in GiB (the largest reported), null when none is connected' }),
});

export const GpuStockDetail = z.object({
  gpus: z.record(z.string(), GpuStock).meta({
    description:
      'Keyed by GPU type ID (the gpuType of a training job): every known type, plus any other type a host reports',
  }),
  cpu: z.object({
    status: StockStatus,
    hosts: z.number().int().meta({ description: 'Connected CPU-only hosts (gpuType cpu)' }),
    free: z.number().int().meta({ description: 'Of those, hosts not running a CPU job' }),
  }),
  updatedAt: z.iso.datetime(),
  region: z.enum(REGIONS),
});

export const GpuAvailability = z.union([GpuLevels, GpuStockDetail]);
