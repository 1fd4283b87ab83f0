import type { EntityManager } from '@mikro-orm/postgresql';
import {
  addDelta,
  applyDelta,
  changeDelta,
  countDelta,
  type CountDelta,
  type CountedImage,
} from '../../datasets/dataset-counters.ts';
import type { DatasetReference, Split } from '../../datasets/dataset.entity.ts';
import { keepImageBytes } from '../../images/image-blobs.ts';
import { replaceLabels, type CheckedLabels } from '../../images/image-labels.ts';
import { insertImages, type ImageRowInput } from '../../images/image-intake.ts';
import { searchTextOf } from '../../images/image-search.ts';
import { referencedImages, updateReferencedImages, type IndexedImageRow } from '../../images/image-references.store.ts';
import { deleteImages } from '../../images/image.store.ts';
import { JobFailure, type JobContext } from '../../jobs/job-runner.ts';
import type { IngestPlan } from '../formats/plan.ts';
import { fileOf, openCommit, type CommitOutcome, type StagedRow } from '../ingest-commit.ts';
import type { IngestPayload } from '../ingest-payload.ts';
import { clearStagedImages, stagedImagesPage, stagedWithoutThumbnail } from '../staged-image.store.ts';
import { checkConnectable } from './reference-request.ts';

const STAGED_PER_READ = 500;

type IndexedImage = IndexedImageRow;

export interface ReferenceOutcome extends CommitOutcome {
  imagesUpdated: number;
  imagesRemoved: number;
}

const counted = (image: { split: Split; label_count: number; error: string | null }): CountedImage => ({
  split: image.split,
  labelCount: image.label_count,
  hasError: image.error !== null,
});

/**
 * Makes the dataset mirror its storage, in one transaction under the dataset lock: a staged file already indexed
 * (same key) updates its image in place (same id; new hash, size and labels where the file or its labels changed),
 * a new key adds an image, and an indexed image whose file is gone (or was skipped this time) is deleted. Every image
 * is its own file: nothing is skipped as a duplicate. Until this commits the dataset is as it was.
 */
export async function commitReference(
  job: Pick<JobContext, 'em' | 'id' | 'confirmHeld'>,
  plan: IngestPlan,
  payload: IngestPayload,
  reference: DatasetReference,
): Promise<ReferenceOutcome> {
  return job.em.transactional(async (tx) => {
    const { dataset, outcome, labelsOf } = await openCommit(tx, job, plan, payload);
    checkConnectable(dataset, reference, (message) => new JobFailure(message));
    const workspaceId = dataset.workspace.id;
    await keepImageBytes(tx, workspaceId);
    // Staged rows keep their thumbnails from a release; one could have run between storing and staging (see commitIngest).
    const lost = await stagedWithoutThumbnail(tx, job.id, workspaceId);
    if (lost)
      throw new JobFailure(
        `The thumbnail of ${lost.path} was deleted while the ingest ran (an image with the same file was deleted); run the ingest again`,
      );
    const indexed = new Map((await referencedImages(tx, dataset.id)).map((image) => [image.reference_key, image]));
    const result: ReferenceOutcome = Object.assign(outcome, { imagesUpdated: 0, imagesRemoved: 0 });
    let delta: CountDelta = countDelta([], 1);
    for (let offset = 0; ; offset += STAGED_PER_READ) {
      const staged = await stagedImagesPage(tx, job.id, STAGED_PER_READ, offset);
      if (staged.length === 0) break;
      const added: ImageRowInput[] = [];
      const updated: Array<{ before: IndexedImage; row: StagedRow; split: Split; checked: CheckedLabels }> = [];
      for (const row of staged) {
        const split = payload.targetSplit ?? row.split;
        const checked = labelsOf(row);
        const before = indexed.get(row.entry_path);
        if (before) {
          indexed.delete(row.entry_path);
          updated.push({ before, row, split, checked });
          if (before.hash !== row.hash) result.replaced.push(before);
        } else {
          const metadata = { ...payload.imageMetadata[row.entry_path], ...row.metadata };
          added.push({
            file: fileOf(row),
            name: row.name,
            split,
            metadata,
            checked,
            facesBlurred: false,
            reference: { key: row.entry_path, version: row.reference_version },
          });
        }
      }
      await updateImages(tx, dataset.id, updated);
      delta = addDelta(
        delta,
        changeDelta(
          updated.map(({ before }) => counted(before)),
          updated.map(({ row, split, checked }) =>
            counted({ split, label_count: checked.labels.length, error: row.error }),
          ),
        ),
      );
      result.imagesUpdated += updated.length;
      const inserted = await insertImages(tx, dataset, added);
      result.imagesAdded += added.length;
      delta = addDelta(delta, inserted.delta);
    }
    const removed = [...indexed.values()];
    if (removed.length) {
      await deleteImages(
        tx,
        removed.map((image) => image.id),
      );
      delta = countDelta(removed.map(counted), -1, delta);
      result.imagesRemoved = removed.length;
      result.replaced.push(...removed);
    }
    await applyDelta(tx, dataset.id, delta);
    dataset.reference = reference;
    dataset.source = {
      format: plan.format,
      filename: payload.source.filename,
      jobId: job.id,
      ingestedAt: new Date().toISOString(),
    };
    await tx.flush();
    await clearStagedImages(tx, job.id);
    return result;
  });
}

/** Indexed images whose file was staged again: the file's facts, version, split and labels as they are now. */
async function updateImages(
  tx: EntityManager,
  datasetId: string,
  updated: Array<{ before: IndexedImage; row: StagedRow; split: Split; checked: CheckedLabels }>,
): Promise<void> {
  if (updated.length === 0) return;
  const values = updated.map(({ before, row, split }) => ({
    id: before.id,
    hash: row.hash,
    ext: row.ext,
    width: row.width,
    height: row.height,
    channels: row.channels,
    bytes: Number(row.bytes),
    error: row.error,
    split,
    version: row.reference_version,
    name: row.name,
    search: searchTextOf(row.name, row.metadata),
  }));
  await updateReferencedImages(tx, values);
  await replaceLabels(
    tx,
    datasetId,
    updated.map(({ before, checked }) => ({ imageId: before.id, ...checked })),
  );
}
