// A host's GPUs and load for the hosts view, from its stored hardware report and last heartbeat's load. Both are the
// worker protocol's shapes, stored as JSON: only the fields named here are read, each checked.
import type { z } from 'zod';
import type { HostListItem } from './host.schemas.ts';

type Item = z.input<typeof HostListItem>;

const numberOr = <T>(value: unknown, otherwise: T): number | T =>
  typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
const entries = (value: unknown): Array<Record<string, unknown>> =>
  Array.isArray(value)
    ? value.filter((entry): entry is Record<string, unknown> => !!entry && typeof entry === 'object')
    : [];

/** Each GPU of the hardware report, with its use at the last heartbeat when `load` is current (the host connected). */
export function hostGpus(hardware: Record<string, unknown> | null, load: Record<string, unknown> | null): Item['gpus'] {
  const used = new Map(entries(load?.gpus).map((gpu) => [gpu.index, gpu]));
  return entries(hardware?.gpus).map((gpu, position) => {
    const index = numberOr(gpu.index, position);
    const now = used.get(index);
    return {
      index,
      model: typeof gpu.model === 'string' ? gpu.model : 'unknown',
      memoryMiB: numberOr(gpu.memoryMiB, 0),
      utilizationPercent: numberOr(now?.utilizationPercent, null),
      memoryUsedMiB: numberOr(now?.memoryUsedMiB, null),
    };
  });
}

export function hostLoad(hardware: Record<string, unknown> | null, load: Record<string, unknown> | null): Item['load'] {
  const cpuPercent = numberOr(load?.cpuPercent, null);
  const memoryUsedBytes = numberOr(load?.memoryUsedBytes, null);
  if (cpuPercent === null || memoryUsedBytes === null) return null;
  return { cpuPercent, memoryUsedBytes, memoryBytes: numberOr(hardware?.memoryBytes, null) };
}
