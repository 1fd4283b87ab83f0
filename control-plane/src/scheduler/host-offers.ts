import type { EntityManager } from '@mikro-orm/postgresql';
import { someHostOffersNow, type HostOffer } from '../workers/host.store.ts';

export { ANY_GPU, type HostOffer } from '../workers/host.store.ts';

/**
 * Whether a live connected host (heard from within the grace period) the workspace may use (the pool or its own) has a GPU of the type, or, for cpu,
 * whether any such host is connected, and that host reports the toolchain or the service and serves the region when
 * one is asked for. Busy GPUs count (a job for them waits in the queue) unless freeGpu is asked for.
 */
export async function someHostOffers(
  em: EntityManager,
  workspaceId: string,
  offer: HostOffer,
  graceSeconds: number,
): Promise<boolean> {
  return someHostOffersNow(em, workspaceId, offer, graceSeconds);
}
