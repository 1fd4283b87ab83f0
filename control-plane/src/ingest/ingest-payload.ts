import type { Split } from '../datasets/dataset.entity.ts';
import type { ConflictPolicy } from './ingest.schemas.ts';
import type { IngestSource } from './ingest-source.ts';

/** The job kind of ingests. */
export const INGEST_JOB = 'ingest';

/** What an ingest job is asked to do, as stored on the job. */
export interface IngestPayload {
  datasetId: string;
  source: IngestSource;
  targetSplit: Split | null;
  conflictPolicy: ConflictPolicy;
  classMapping: Record<string, number | string | null>;
  imageMetadata: Record<string, Record<string, unknown>>;
}
