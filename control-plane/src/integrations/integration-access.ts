import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict } from '../http/errors.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import { CredentialCipher, CredentialsUnreadable } from './credential-cipher.ts';
import type { StorageIntegration } from './integration.entity.ts';
import { IntegrationStore } from './integration.store.ts';
import type { ProviderName, StorageProvider } from './providers/provider.ts';
import { storageProviders, type ProviderEntry } from './providers/index.ts';
import { usableHost } from '../hosts/usable-host.ts';
import type { HostFolders } from '../workers/host-folders.ts';

export interface IntegrationDeps {
  /** The appliance's secret, which the credentials' key is derived from. */
  secret: string;
  outbound: OutboundPolicy;
  /** The worker sockets of this process (local folders); absent outside the server. */
  hostFolders?: HostFolders;
}

/** An integration row opened for use: its provider and its credentials in the clear (never logged, never returned). */
export interface OpenedIntegration {
  row: StorageIntegration;
  provider: StorageProvider<unknown>;
  credentials: unknown;
}

/** Opens saved integrations: the one place their sealed credentials are read. */
export class IntegrationAccess {
  private readonly cipher: CredentialCipher;
  private readonly providers: Record<ProviderName, ProviderEntry>;

  constructor(deps: IntegrationDeps) {
    this.cipher = new CredentialCipher(deps.secret);
    this.providers = storageProviders(deps.outbound, deps.hostFolders);
  }

  /** The workspace's integration `id` (404 when it has none such), opened; 409 when its credentials cannot be read. */
  async open(em: EntityManager, workspaceId: string, id: string): Promise<OpenedIntegration> {
    const row = await new IntegrationStore(em).get(workspaceId, id);
    return { row, provider: this.providers[row.provider].provider, credentials: this.credentialsOf(row) };
  }

  /**
   * Folders on a worker host the workspace may use (its own or the pool's; another workspace's is 404 like a missing
   * one), read through its agent: what a `local` reference names by its host id.
   */
  async openHostFolders(
    em: EntityManager,
    workspaceId: string,
    hostId: string,
  ): Promise<{ provider: StorageProvider<unknown>; credentials: unknown }> {
    await usableHost(em, workspaceId, hostId, 'reference.keyId');
    return { provider: this.providers.local.provider, credentials: { keyId: hostId } };
  }

  credentialsOf(row: StorageIntegration): unknown {
    try {
      return this.providers[row.provider].credentials.parse(
        this.cipher.open({ keyId: row.credentialsKeyId, ciphertext: Buffer.from(row.credentials) }, row.workspace.id),
      );
    } catch (error) {
      if (!(error instanceof CredentialsUnreadable)) throw error;
      throw Conflict(
        `The saved credentials of storage integration ${row.id} cannot be read (the appliance secret changed and they were not re-sealed: vpctl integrations reseal); or connect the storage again`,
      );
    }
  }
}
