import type { ZodType } from 'zod';
import type { OutboundPolicy } from '../../net/outbound-policy.ts';
import type { HostFolders } from '../../workers/host-folders.ts';
import { AzureCredentials, GcsCredentials, LocalCredentials, S3Credentials } from '../integration.schemas.ts';
import { AzureProvider } from './azure.ts';
import { GcsProvider } from './gcs.ts';
import { LocalFolderProvider } from './local.ts';
import type { ProviderName, StorageProvider } from './provider.ts';
import { S3Provider } from './s3.ts';

/** A provider with the schema of its credentials; it is handed only credentials that schema passed. */
export interface ProviderEntry {
  credentials: ZodType;
  provider: StorageProvider<unknown>;
}

/**
 * Each provider with the schema of its credentials (what a saved row opens to is parsed with it again). A new
 * provider is one more entry, its name added to PROVIDERS. `hostFolders`: the worker sockets of this process, which
 * local folders are read through.
 */
export function storageProviders(
  outbound: OutboundPolicy,
  hostFolders?: HostFolders,
): Record<ProviderName, ProviderEntry> {
  return {
    s3: { credentials: S3Credentials, provider: new S3Provider(outbound) },
    gcs: { credentials: GcsCredentials, provider: new GcsProvider(outbound) },
    azure: { credentials: AzureCredentials, provider: new AzureProvider(outbound) },
    local: { credentials: LocalCredentials, provider: new LocalFolderProvider(hostFolders) },
  };
}
