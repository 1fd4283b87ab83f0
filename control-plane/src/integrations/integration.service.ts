import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/actor.ts';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Role } from '../account/roles.ts';
import { NotFound } from '../http/errors.ts';
import { CredentialCipher, CredentialsUnreadable } from './credential-cipher.ts';
import { IntegrationAccess, type IntegrationDeps } from './integration-access.ts';
import { StorageIntegration } from './integration.entity.ts';
import { type ConnectBody, type DiscoverBody, type IntegrationView, type ObjectsQuery } from './integration.schemas.ts';
import { IntegrationStore } from './integration.store.ts';
import type { ObjectPage, ProviderName } from './providers/provider.ts';
import { storageProviders, type ProviderEntry } from './providers/index.ts';
import { normalizedFolder } from './providers/local.ts';
import { usableHost } from '../hosts/usable-host.ts';

export type { IntegrationDeps };

/**
 * Storage integrations of the calling key's workspace. Discover and connect need admin (an appliance has one plan,
 * with every feature, so the spec's paid-plan condition always holds); listing and browsing need editor.
 */
export class IntegrationService {
  private readonly em: EntityManager;
  private readonly cipher: CredentialCipher;
  private readonly secret: string;
  private readonly store: IntegrationStore;
  private readonly providers: Record<ProviderName, ProviderEntry>;
  private readonly access: IntegrationAccess;

  constructor(em: EntityManager, deps: IntegrationDeps) {
    this.em = em;
    this.cipher = new CredentialCipher(deps.secret);
    this.secret = deps.secret;
    this.store = new IntegrationStore(em);
    this.providers = storageProviders(deps.outbound, deps.hostFolders);
    this.access = new IntegrationAccess(deps);
  }

  async list(actor: Actor): Promise<IntegrationView[]> {
    const key = member(actor, 'editor');
    return (await this.store.list(key.workspaceId)).map(view);
  }

  /** The buckets the credentials can read; nothing is saved. */
  async discover(actor: Actor, body: DiscoverBody): Promise<{ targets: string[] }> {
    const key = member(actor, 'admin');
    await this.mayUse(key.workspaceId, body);
    return { targets: await this.providers[body.provider].provider.discover(body.credentials) };
  }

  /** Saves the integration once every target is readable with its credentials; those are sealed, never kept plain. */
  async connect(actor: Actor, body: ConnectBody): Promise<IntegrationView> {
    const key = member(actor, 'admin');
    await this.mayUse(key.workspaceId, body);
    const { provider } = this.providers[body.provider];
    const targets = [...new Set(body.provider === 'local' ? body.targets.map(normalizedFolder) : body.targets)];
    for (const target of targets) await provider.checkTarget(body.credentials, target);
    const sealed = this.cipher.seal(body.credentials, key.workspaceId);
    const row = this.em.create(StorageIntegration, {
      workspace: key.workspaceId,
      provider: body.provider,
      credentialIdentity: provider.identity(body.credentials),
      targets,
      processing: true,
      credentialsKeyId: sealed.keyId,
      credentials: sealed.ciphertext,
    });
    await this.em.flush();
    return view(row);
  }

  async update(actor: Actor, id: string, patch: { processing: boolean }): Promise<IntegrationView> {
    const key = member(actor, 'admin');
    const row = await this.store.get(key.workspaceId, id);
    row.processing = patch.processing;
    await this.em.flush();
    return view(row);
  }

  /** Removes the saved credentials; nothing in the bucket is touched. */
  async disconnect(actor: Actor, id: string): Promise<{ success: true }> {
    const key = member(actor, 'admin');
    this.em.remove(await this.store.get(key.workspaceId, id));
    await this.em.flush();
    return { success: true };
  }

  async browse(actor: Actor, id: string, query: ObjectsQuery): Promise<ObjectPage> {
    const key = member(actor, 'editor');
    const row = await this.store.get(key.workspaceId, id);
    const target = row.provider === 'local' ? normalizedFolder(query.target) : query.target;
    if (!row.targets.includes(target))
      throw NotFound(`target: ${query.target} is not a bucket of storage integration ${id}`);
    return this.providers[row.provider].provider.browse(this.credentialsOf(row), {
      target,
      prefix: query.prefix,
      cursor: query.cursor,
      limit: query.limit,
    });
  }

  /** A local folder's host must be one of the workspace's or of the shared pool (else 404, like one that does not exist). */
  private async mayUse(workspaceId: string, body: DiscoverBody): Promise<void> {
    if (body.provider === 'local') await usableHost(this.em, workspaceId, body.credentials.keyId);
  }

  /**
   * After the appliance secret changed (key rotation): credentials sealed under an earlier secret's key are opened
   * with `previousSecrets` and sealed again under the current one. Rows no given secret opens are named, untouched.
   */
  async reseal(previousSecrets: string[]): Promise<{ resealed: number; unreadable: string[] }> {
    const cipher = new CredentialCipher(this.secret, previousSecrets);
    const unreadable: string[] = [];
    let resealed = 0;
    for (const row of await this.store.sealedUnderOtherKeys(cipher.keyId)) {
      try {
        const sealed = cipher.seal(
          cipher.open(
            { keyId: row.credentialsKeyId, ciphertext: Buffer.from(row.credentials) },
            row.workspace.id,
          ) as object,
          row.workspace.id,
        );
        row.credentialsKeyId = sealed.keyId;
        row.credentials = sealed.ciphertext;
        resealed += 1;
      } catch (error) {
        if (!(error instanceof CredentialsUnreadable)) throw error;
        unreadable.push(row.id);
      }
    }
    await this.em.flush();
    return { resealed, unreadable };
  }

  private credentialsOf(row: StorageIntegration) {
    return this.access.credentialsOf(row);
  }
}

/** Integrations are account-scoped: the key's own workspace, where it needs at least `role`. */
function member(actor: Actor, role: Role) {
  const key = requireKey(actor);
  return requireRole(key, key.workspaceId, role);
}

function view(row: StorageIntegration): IntegrationView {
  return {
    id: row.id,
    provider: row.provider,
    credentialIdentity: row.credentialIdentity,
    targets: row.targets,
    processing: row.processing,
    createdAt: row.createdAt.toISOString(),
  };
}
