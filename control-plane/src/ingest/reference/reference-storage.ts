import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DatasetReference } from '../../datasets/dataset.entity.ts';
import { Invalid, NotFound } from '../../http/errors.ts';
import type { IntegrationAccess } from '../../integrations/integration-access.ts';
import type { StorageProvider, StoredObjectPage } from '../../integrations/providers/provider.ts';

/** A reference opened for reading: the provider, its credentials and where in it the dataset's files are. */
export interface OpenedReference {
  provider: StorageProvider<unknown>;
  credentials: unknown;
  target: string;
  /** Keys of the dataset's files start with this; images keep their key without it. */
  prefix: string;
  /** Said in messages and in the dataset's source (`bucket/prefix`). */
  label: string;
}

/**
 * Resolves a dataset reference to the storage it names, scoped to the workspace: another workspace's integration
 * or worker host is 404 like a missing one, a target the integration was not connected with 404, unreadable
 * credentials 409. A `local` reference is a folder (`root`) shared by a worker host, read through its agent.
 */
export async function openReference(
  em: EntityManager,
  access: IntegrationAccess,
  workspaceId: string,
  reference: DatasetReference,
): Promise<OpenedReference> {
  if (reference.provider === 'local') {
    const { provider, credentials } = await access.openHostFolders(em, workspaceId, reference.keyId);
    return {
      provider,
      credentials,
      target: reference.root,
      prefix: reference.prefix,
      label: `${reference.root.replace(/\/+$/, '')}/${reference.prefix}`,
    };
  }
  const { row, provider, credentials } = await access.open(em, workspaceId, reference.integrationId);
  if (!row.targets.includes(reference.target))
    throw NotFound(`reference.target: ${reference.target} is not a bucket of storage integration ${row.id}`);
  return {
    provider,
    credentials,
    target: reference.target,
    prefix: reference.prefix,
    label: `${reference.target}/${reference.prefix}`,
  };
}

/** A request's prefix as stored: no leading slash, and a folder's trailing one (so `set` never matches `settings/`). */
export function normalizedPrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+/, '');
  if (trimmed.split('/').some((part) => part === '..' || part === '.'))
    throw Invalid('reference.prefix: must not contain . or .. segments');
  return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

/** One page of every object beneath the reference's prefix. */
export const listPage = (ref: OpenedReference, cursor?: string): Promise<StoredObjectPage> =>
  ref.provider.list(ref.credentials, { target: ref.target, prefix: ref.prefix, cursor });

/** One file of the dataset, by its key beneath the prefix, streamed and capped at `maxBytes`; with `ifVersion`, only at that version. */
export const readFile = (
  ref: OpenedReference,
  key: string,
  maxBytes: number,
  signal?: AbortSignal,
  ifVersion?: string,
): Promise<Readable> =>
  ref.provider.read(ref.credentials, { target: ref.target, key: ref.prefix + key, maxBytes, signal, ifVersion });
