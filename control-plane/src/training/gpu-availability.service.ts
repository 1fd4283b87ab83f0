import type { Region } from '@vp/config';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Hardware } from '@vp/protocol';
import type { z } from 'zod';
import { KNOWN_GPU_TYPE_IDS } from '@vp/protocol';
import type { Actor } from '../auth/actor.ts';
import { Unauthorized } from '../http/errors.ts';
import { runningJobsOnHosts } from '../jobs/job.store.ts';
import { Host } from '../hosts/host.entity.ts';
import type { GpuLevels, GpuStock, GpuStockDetail, STOCK_LEVELS, STOCK_STATUSES } from './gpu-availability.schemas.ts';

type Stock = z.infer<typeof GpuStock>;

const status = (total: number, free: number): (typeof STOCK_STATUSES)[number] =>
  free > 0 ? 'available' : total > 0 ? 'busy' : 'unavailable';
/** High: at least half free; Medium: some free; Low: all busy; null: none connected. */
const level = (total: number, free: number): (typeof STOCK_LEVELS)[number] | null =>
  total === 0 ? null : free === 0 ? 'Low' : free * 2 >= total ? 'High' : 'Medium';
const none = (): Stock => ({ status: 'unavailable', total: 0, free: 0, memoryGb: null });

/** Stock of each GPU type (and of CPU-only hosts) on live connected hosts: the pool, plus a workspace's own when managed. */
export class GpuAvailabilityService {
  private readonly em: EntityManager;
  private readonly region: Region;
  private readonly graceSeconds: number;

  constructor(em: EntityManager, region: Region, graceSeconds: number) {
    this.em = em;
    this.region = region;
    this.graceSeconds = graceSeconds;
  }

  /** The stock level of each GPU type and of cpu, as the spec keys it by GPU ID. */
  async levels(actor: Actor, managed: boolean): Promise<z.input<typeof GpuLevels>> {
    const { gpus, cpu } = await this.read(actor, managed);
    const levels: Record<string, (typeof STOCK_LEVELS)[number] | null> = {};
    for (const [typeId, stock] of Object.entries(gpus)) levels[typeId] = level(stock.total, stock.free);
    levels.cpu = level(cpu.hosts, cpu.free);
    return levels;
  }

  async read(actor: Actor, managed: boolean): Promise<z.input<typeof GpuStockDetail>> {
    if (managed && actor.kind !== 'key') throw Unauthorized('managed=true needs an API key');
    const scopes =
      managed && actor.kind === 'key' ? [{ workspace: null }, { workspace: actor.workspaceId }] : [{ workspace: null }];
    // A host whose replica died stays marked connected: one silent past the grace period is not counted.
    const alive = new Date(Date.now() - this.graceSeconds * 1000);
    const hosts = await this.em.find(
      Host,
      { state: 'connected', lastHeartbeatAt: { $gt: alive }, $or: scopes },
      { fields: ['id', 'hardware'] },
    );
    const held = await this.heldSlots(hosts.map((host) => host.id));

    const gpus: Record<string, Stock> = {};
    for (const typeId of KNOWN_GPU_TYPE_IDS) gpus[typeId] = none();
    let cpuHosts = 0;
    let cpuFree = 0;
    for (const host of hosts) {
      const hardware = host.hardware as Hardware | null;
      if (!hardware) continue;
      const busy = held.get(host.id);
      if (hardware.cpuOnly) {
        cpuHosts++;
        if (!busy?.cpu) cpuFree++;
      }
      for (const gpu of hardware.gpus) {
        const stock = (gpus[gpu.typeId] ??= none());
        stock.total++;
        if (!busy?.gpus.has(gpu.index)) stock.free++;
        stock.memoryGb = Math.max(stock.memoryGb ?? 0, Math.round(gpu.memoryMiB / 1024));
      }
    }
    for (const stock of Object.values(gpus)) stock.status = status(stock.total, stock.free);
    return {
      gpus,
      cpu: { status: status(cpuHosts, cpuFree), hosts: cpuHosts, free: cpuFree },
      updatedAt: new Date().toISOString(),
      region: this.region,
    };
  }

  /** Per host: the GPU indexes its running jobs hold, and whether a CPU job holds its CPU slot. */
  private async heldSlots(hostIds: string[]): Promise<Map<string, { gpus: Set<number>; cpu: boolean }>> {
    const rows = await runningJobsOnHosts(this.em, hostIds);
    const held = new Map<string, { gpus: Set<number>; cpu: boolean }>();
    for (const row of rows) {
      const slots = held.get(row.host_id) ?? { gpus: new Set<number>(), cpu: false };
      for (const index of row.gpu_indexes ?? []) slots.gpus.add(index);
      if (row.gpu_count === 0) slots.cpu = true;
      held.set(row.host_id, slots);
    }
    return held;
  }
}
