import type { OutboundPolicy } from '../../net/outbound-policy.ts';
import { S3Credentials } from '../integration.schemas.ts';
import type { ProviderName } from './provider.ts';
import { S3Provider } from './s3.ts';

/**
 * Each provider with the schema of its credentials (what a saved row opens to is parsed with it again). A new
 * provider (GCS, Azure, local folders) is one more entry, its name added to PROVIDERS.
 */
export function storageProviders(outbound: OutboundPolicy) {
  return {
    s3: { credentials: S3Credentials, provider: new S3Provider(outbound) },
  } satisfies Record<ProviderName, unknown>;
}
