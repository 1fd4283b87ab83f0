import type { EntityManager } from '@mikro-orm/postgresql';
import type { Hardware } from '@vp/protocol';
import { Host } from '../hosts/host.entity.ts';

// The host row's view of its socket: state, last heartbeat and hardware. Native updates, so a socket
// handler never loads the entity or competes with a request's unit of work.

export async function markConnected(em: EntityManager, hostId: string, hardware: Hardware, at: Date): Promise<boolean> {
  return (await em.nativeUpdate(Host, { id: hostId }, { state: 'connected', hardware, lastHeartbeatAt: at })) > 0;
}

export async function recordHeartbeat(em: EntityManager, hostId: string, at: Date): Promise<void> {
  await em.nativeUpdate(Host, { id: hostId }, { lastHeartbeatAt: at });
}

export async function markDisconnected(em: EntityManager, hostId: string): Promise<void> {
  await em.nativeUpdate(Host, { id: hostId, state: 'connected' }, { state: 'disconnected' });
}
