import type { EntityManager } from '@mikro-orm/postgresql';
import { someHostOffersNow } from '../workers/host.store.ts';

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
  return someHostOffersNow(em, workspaceId, offer, graceSeconds);
}
