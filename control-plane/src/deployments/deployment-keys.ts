import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../auth/api-key.entity.ts';
import { displayPrefix, generateApiKey, hashApiKey } from '../auth/key-format.ts';

/**
 * Mints a deployment's own key (its apiKeyId), for the user who created it: it authenticates only for that
 * deployment's predict and service URL (KeyActor.deploymentId), is listed with the user's keys, and is deleted with the
 * deployment. The key itself is answered once, by create.
 */
export async function mintDeploymentKey(
  em: EntityManager,
  input: { workspaceId: string; userId: string; deploymentId: string; slug: string },
): Promise<{ id: string; key: string }> {
  const key = generateApiKey();
  const record = em.create(ApiKey, {
    workspace: input.workspaceId,
    user: input.userId,
    name: `deployment ${input.slug}`.slice(0, 100),
    keyHash: hashApiKey(key),
    prefix: displayPrefix(key),
    deploymentId: input.deploymentId,
  });
  await em.flush();
  return { id: record.id, key };
}
