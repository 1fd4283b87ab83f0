import type { Region } from '@vp/config';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Hardware } from '@vp/protocol';
import type { z } from 'zod';
import { KNOWN_GPU_TYPE_IDS } from '@vp/protocol';
import type { Actor } from '../auth/actor.ts';
import { Unauthorized } from '../http/errors.ts';
import { Host } from '../hosts/host.entity.ts';
import type { GpuAvailability, GpuStock, STOCK_STATUSES } from './gpu-availability.schemas.ts';

type Stock = z.infer<typeof GpuStock>;

const status = (total: number, free: number): (typeof STOCK_STATUSES)[number] =>
  free > 0 ? 'available' : total > 0 ? 'busy' : 'unavailable';
const none = (): Stock => ({ status: 'unavailable', total: 0, free: 0, memoryGb: null });

/** Stock of each GPU type (and of CPU-only hosts) on connected hosts: the pool, plus a workspace's own when managed. */
export class GpuAvailabilityService {
  private readonly em: EntityManager;
  private readonly region: Region;

  constructor(em: EntityManager, region: Region) {
    this.em = em;
    this.region = region;
  }

  async read(actor: Actor, managed: boolean): Promise<z.input<typeof GpuAvailability>> {
    if (managed && actor.kind !== 'key') throw Unauthorized('managed=true needs an API key');
    const scopes = managed && actor.kind === 'key' ? [{ workspace: null }, { workspace: actor.workspaceId }] : [{ workspace: null }];
    const hosts = await this.em.find(Host, { state: 'connected', $or: scopes }, { fields: ['hardware'] });

    const gpus: Record<string, Stock> = {};
    for (const typeId of KNOWN_GPU_TYPE_IDS) gpus[typeId] = none();
    let cpuHosts = 0;
    for (const host of hosts) {
      const hardware = host.hardware as Hardware | null;
      if (!hardware) continue;
      if (hardware.cpuOnly) cpuHosts++;
      for (const gpu of hardware.gpus) {
        const stock = (gpus[gpu.typeId] ??= none());
        stock.total++;
        stock.memoryGb = Math.max(stock.memoryGb ?? 0, Math.round(gpu.memoryMiB / 1024));
      }
    }
    for (const stock of Object.values(gpus)) {
      // No scheduler yet: every GPU counts as free; GPUs that running jobs hold will be subtracted here.
      stock.free = stock.total;
      stock.status = status(stock.total, stock.free);
    }
    return {
      gpus,
      cpu: { status: status(cpuHosts, cpuHosts), hosts: cpuHosts },
      updatedAt: new Date().toISOString(),
      region: this.region,
    };
  }
}
