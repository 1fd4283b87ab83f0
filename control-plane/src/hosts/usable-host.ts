import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFound } from '../http/errors.ts';
import { Host } from './host.entity.ts';

/**
 * A host a workspace may read folders through: one of its own, or of the appliance-wide pool (whose operator chose
 * what it shares). Another workspace's host is not found, like one that does not exist.
 */
export async function usableHost(
  em: EntityManager,
  workspaceId: string,
  hostId: string,
  field = 'credentials.keyId',
): Promise<Host> {
  const host = await em.findOne(Host, { id: hostId, $or: [{ workspace: workspaceId }, { workspace: null }] });
  if (!host) throw NotFound(`${field}: worker host ${hostId} not found`);
  return host;
}
