import type { EntityManager } from '@mikro-orm/postgresql';
import { BadGateway, Conflict, HttpError, NotFound } from '../../http/errors.ts';
import type { ReferencedBytes, ReferencedRead } from '../../images/image-bytes.ts';
import { findReferencedImage } from '../../images/image-references.store.ts';
import type { IntegrationAccess } from '../../integrations/integration-access.ts';
import { ProviderError } from '../../integrations/providers/provider.ts';
import { openReference, readFile, type OpenedReference } from './reference-storage.ts';

const SYNC = 'sync the dataset again (ingest its reference) to index it as it is now';

/**
 * Images of connected datasets, read from their storage on demand, in one conditional request (at the version
 * indexed): one gone since it was indexed is 404, one whose version changed 409 (its hash, size and labels describe
 * other bytes), and a disconnected integration 409; the storage's own refusals are 409 (credentials) or 502, never a 500.
 */
export class ReferencedImages implements ReferencedBytes {
  private readonly fork: () => EntityManager;
  private readonly access: IntegrationAccess;

  constructor(fork: () => EntityManager, access: IntegrationAccess) {
    this.fork = fork;
    this.access = access;
  }

  async open(image: { id: string; workspaceId: string }, signal?: AbortSignal): Promise<ReferencedRead> {
    const em = this.fork();
    const row = await findReferencedImage(em, image.id, image.workspaceId);
    if (!row?.reference_key || !row.reference) throw NotFound('Image not found');
    const ref = await openReference(em, this.access, image.workspaceId, row.reference).catch((error: unknown) => {
      if (error instanceof HttpError && error.status === 404)
        throw Conflict(
          `The storage of this image's dataset was disconnected (${error.message}); connect it again to read its files`,
        );
      throw error;
    });
    const bytes = Number(row.bytes);
    try {
      return {
        stream: await readFile(ref, row.reference_key, bytes, signal, row.reference_version || undefined),
        bytes,
        ext: row.ext,
        name: row.name,
      };
    } catch (error) {
      throw error instanceof ProviderError ? asHttpError(error, row.reference_key, ref) : error;
    }
  }
}

function asHttpError(error: ProviderError, key: string, ref: OpenedReference): HttpError {
  if (error.kind === 'missing') return NotFound(`${key} is no longer in ${ref.label}; ${SYNC}`);
  if (error.kind === 'changed') return Conflict(`${key} changed in ${ref.label} since it was indexed; ${SYNC}`);
  return error.kind === 'rejected' || error.kind === 'refused' ? Conflict(error.message) : BadGateway(error.message);
}
