import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Dataset, DatasetReference } from '../../datasets/dataset.entity.ts';
import { Conflict } from '../../http/errors.ts';
import type { IntegrationAccess } from '../../integrations/integration-access.ts';
import { normalizedFolder } from '../../integrations/providers/local.ts';
import type { IngestRequest } from '../ingest.schemas.ts';
import type { IngestSource } from '../ingest-source.ts';
import { normalizedPrefix, openReference } from './reference-storage.ts';

/** The reference as a dataset keeps it: the prefix (and a host's folder) normalized, so a re-sync names the same reference however it is spelled. */
export function datasetReference(reference: NonNullable<IngestRequest['reference']>): DatasetReference {
  const prefix = normalizedPrefix(reference.prefix);
  return reference.provider === 'cloud'
    ? { provider: 'cloud', integrationId: reference.integrationId, target: reference.target, prefix }
    : { provider: 'local', keyId: reference.keyId, root: normalizedFolder(reference.root), prefix };
}

/**
 * Checks an ingest by reference: the storage resolves (404 for another workspace's integration or an unknown
 * target, 409 for unreadable credentials), and the dataset is either empty and unconnected (a first index) or already
 * connected to this same reference (a re-sync). A dataset with images of its own, or connected elsewhere, is 409:
 * a connected dataset's images are exactly its storage's files. So is one that blurs faces: files read in place cannot be blurred.
 */
export async function referenceSource(
  em: EntityManager,
  access: IntegrationAccess,
  dataset: Dataset,
  requested: NonNullable<IngestRequest['reference']>,
): Promise<IngestSource> {
  const reference = datasetReference(requested);
  const opened = await openReference(em, access, dataset.workspace.id, reference);
  checkConnectable(dataset, reference);
  // A host's folder was named by no integration: whether the host shares it (and is up) is asked now, a 400 if not.
  if (reference.provider === 'local') await opened.provider.checkTarget(opened.credentials, opened.target);
  return { kind: 'reference', reference, filename: opened.label };
}

/** Throws the 409 (or, in the job, what `fail` makes of it) when the dataset cannot be indexed from `reference`. */
export function checkConnectable(
  dataset: Dataset,
  reference: DatasetReference,
  fail: (message: string) => Error = Conflict,
): void {
  const name = `${dataset.workspace.handle}/${dataset.slug}`;
  if (dataset.blurFaces)
    throw fail(
      `Dataset ${name} blurs faces, which files read in place cannot have; turn blurFaces off or upload the files instead`,
    );
  if (dataset.reference) {
    if (!isDeepStrictEqual(dataset.reference, reference)) {
      throw fail(`Dataset ${name} is connected to another storage location; create a new dataset for this one`);
    }
    return;
  }
  if (dataset.imageCount > 0)
    throw fail(`Dataset ${name} has images of its own; connected storage is indexed into a new, empty dataset`);
}
