import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/**
 * What a host job needs of a host: a GPU type ('cpu': none); for an export, the format's toolchain; for a deployment,
 * the service and a region (hosts of no region serve every one).
 */
export interface HostOffer {
  /** A GPU type ID, ANY_GPU, or 'cpu'. */
  gpuType: string;
  /** Only a GPU no running job holds now counts (a job would start at once rather than wait). */
  freeGpu?: boolean;
  toolchain?: string;
  service?: string;
  region?: string;
}

/** HostOffer.gpuType: a GPU of any type. */
export const ANY_GPU = '*';

/**
 * Whether a live connected host (heard from within the grace period) the workspace may use (the pool or its own) has a GPU of the type, or, for cpu,
 * whether any such host is connected, and that host reports the toolchain or the service and serves the region when
 * one is asked for. Busy GPUs count (a job for them waits in the queue) unless freeGpu is asked for.
 */
export async function someHostOffers(em: EntityManager, workspaceId: string, offer: HostOffer, graceSeconds: number): Promise<boolean> {
  const [row] = await query<{ found: boolean }>(
    em,
    `select exists (
       select 1 from hosts h where h.state = 'connected' and h.last_heartbeat_at > now() - make_interval(secs => ?)
         and (h.workspace_id is null or h.workspace_id = ?)
         and (? = 'cpu' or exists (select 1 from jsonb_array_elements(coalesce(h.hardware->'gpus', '[]'::jsonb)) g where (? = '${ANY_GPU}' or g->>'typeId' = ?)
           and not (? and exists (select 1 from jobs j where j.host_id = h.id and j.status = 'running' and j.gpu_indexes @> jsonb_build_array(g->'index')))))
         and (?::varchar is null or ? = any(h.exporters))
         and (?::varchar is null or ? = any(h.services))
         and (?::varchar is null or h.region is null or h.region = ?)
     ) as found`,
    [graceSeconds, workspaceId, offer.gpuType, offer.gpuType, offer.gpuType, offer.freeGpu ?? false, offer.toolchain ?? null, offer.toolchain ?? null, offer.service ?? null, offer.service ?? null, offer.region ?? null, offer.region ?? null],
  );
  return row.found;
}
