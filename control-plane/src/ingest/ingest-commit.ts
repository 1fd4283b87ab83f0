import type { EntityManager } from '@mikro-orm/postgresql';
import { addDelta, applyDelta, countDelta, lockDataset, type CountDelta } from '../datasets/dataset-counters.ts';
import { resolveClasses } from '../datasets/class-resolution.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { queueFaceBlur } from '../faces/face-blur.job.ts';
import { HttpError } from '../http/errors.ts';
import { keepImageBytes } from '../images/image-blobs.ts';
import { checkLabels, type CheckedLabels } from '../images/image-labels.ts';
import { insertImages, type ImageRowInput } from '../images/image-intake.ts';
import { deleteImages, imagesWithFiles } from '../images/image.store.ts';
import { JobFailure, type JobContext } from '../jobs/job-runner.ts';
import type { IngestPlan } from './formats/plan.ts';
import type { IngestPayload } from './ingest-payload.ts';
import { clearStagedImages, stagedImagesPage, stagedWithoutImageBytes, type StagedRow } from './staged-image.store.ts';

const STAGED_PER_READ = 500;
/** Per-image problems kept on the job's result; the counts cover all of them. */
export const MAX_REPORTED_ERRORS = 100;

export type { StagedRow } from './staged-image.store.ts';

export interface CommitOutcome {
  imagesAdded: number;
  imagesSkipped: number;
  imagesReplaced: number;
  imagesWithErrors: number;
  labelsAdded: number;
  labelErrors: number;
  classesAdded: string[];
  errors: string[];
  /** Images the replace policy deleted: their bytes may now be unused. */
  replaced: Array<{ hash: string; ext: string }>;
}

/**
 * Moves the staged images into the dataset in one transaction under the dataset lock: classes are
 * resolved, duplicates (same hash in the same split) handled by the conflict policy, labels mapped and
 * checked, counters adjusted and the staging rows removed. Until this commits the dataset is unchanged; it
 * commits only while the job is still this attempt's and not cancelled.
 */
export async function commitIngest(
  job: Pick<JobContext, 'em' | 'id' | 'confirmHeld'>,
  plan: IngestPlan,
  payload: IngestPayload,
): Promise<CommitOutcome> {
  const jobId = job.id;
  return job.em.transactional(async (tx) => {
    const { dataset, outcome, labelsOf } = await openCommit(tx, job, plan, payload);
    // Staged bytes count as used, but a release between storing them and staging their row could have
    // taken them: under the bytes lock, make sure every staged image still has its bytes (keys as imageKey makes them).
    await keepImageBytes(tx, dataset.workspace.id);
    const lost = await stagedWithoutImageBytes(tx, jobId, dataset.workspace.id);
    if (lost)
      throw new JobFailure(
        `The stored bytes of ${lost.path} were deleted while the ingest ran (an image with the same file was deleted); run the ingest again`,
      );
    const added = new Set<string>();
    let unblurred = false;
    let delta: CountDelta = countDelta([], 1);
    for (let offset = 0; ; offset += STAGED_PER_READ) {
      const staged = await stagedImagesPage(tx, jobId, STAGED_PER_READ, offset);
      if (staged.length === 0) break;
      const existing = await imagesWithFiles(tx, dataset.id, [...new Set(staged.map((row) => row.hash))]);
      const rows: ImageRowInput[] = [];
      const doomed: typeof existing = [];
      for (const row of staged) {
        const split = payload.targetSplit ?? row.split;
        const key = `${row.hash}:${split}`;
        const copies = existing.filter((image) => `${image.hash}:${image.split}` === key);
        // A second copy within this ingest is always skipped; one already in the dataset follows the policy.
        if (added.has(key) || (copies.length && payload.conflictPolicy === 'skip')) {
          outcome.imagesSkipped += 1;
          continue;
        }
        if (payload.conflictPolicy === 'replace') doomed.push(...copies);
        added.add(key);
        const checked = labelsOf(row);
        const metadata = { ...payload.imageMetadata[row.entry_path], ...row.metadata };
        rows.push({ file: fileOf(row), name: row.name, split, metadata, checked, facesBlurred: row.faces_blurred });
        unblurred ||= !row.faces_blurred;
      }
      if (doomed.length) {
        await deleteImages(
          tx,
          doomed.map((image) => image.id),
        );
        delta = countDelta(
          doomed.map((image) => ({
            split: image.split,
            labelCount: image.label_count,
            hasError: image.error !== null,
          })),
          -1,
          delta,
        );
        outcome.imagesReplaced += doomed.length;
        outcome.replaced.push(...doomed);
      }
      const inserted = await insertImages(tx, dataset, rows);
      outcome.imagesAdded += rows.length;
      delta = addDelta(delta, inserted.delta);
    }
    await applyDelta(tx, dataset.id, delta);
    // blurFaces was turned on while the images were staged: the face blur job takes them.
    if (dataset.blurFaces && unblurred) await queueFaceBlur(tx, { id: dataset.id, workspaceId: dataset.workspace.id });
    dataset.source = {
      format: plan.format,
      filename: payload.source.filename,
      jobId,
      ingestedAt: new Date().toISOString(),
    };
    await tx.flush();
    await clearStagedImages(tx, jobId);
    return outcome;
  });
}

/** What every ingest commit starts with, in its transaction. */
export interface OpenedCommit {
  dataset: Dataset;
  outcome: CommitOutcome;
  /** Keeps a per-image problem on the job's result (the first MAX_REPORTED_ERRORS). */
  report: (message: string) => void;
  /** A staged image's labels in the dataset's classes, checked; a problem is counted, reported, and its labels dropped. */
  labelsOf: (row: StagedRow) => CheckedLabels;
}

/**
 * Confirms the job still holds its attempt, locks the dataset, sets its task (first ingest) and resolves the
 * plan's classes to the dataset's (adding new ones). Label problems the plan found are counted and reported.
 */
export async function openCommit(
  tx: EntityManager,
  job: Pick<JobContext, 'confirmHeld'>,
  plan: IngestPlan,
  payload: IngestPayload,
): Promise<OpenedCommit> {
  await job.confirmHeld(tx);
  await lockDataset(tx, payload.datasetId);
  const dataset = await tx.findOneOrFail(Dataset, payload.datasetId, { refresh: true, populate: ['workspace'] });
  if (dataset.deletedAt) throw new JobFailure('The dataset was deleted while the ingest ran');
  const firstIngest = dataset.imageCount === 0 && dataset.annotationCount === 0;
  if (firstIngest && plan.task && plan.task !== dataset.task) dataset.task = plan.task;
  if (plan.kptShape && !dataset.kptShape && dataset.task === 'pose') dataset.kptShape = plan.kptShape;
  const classes =
    dataset.task === 'depth'
      ? { target: plan.classNames.map(() => null), classNames: [], added: [] }
      : resolveClasses(dataset, plan.classNames, payload.classMapping, {
          unmatched: 'add',
          fail: (message) => new JobFailure(message),
        });
  dataset.classNames = classes.classNames;
  await tx.flush();

  const outcome: CommitOutcome = {
    imagesAdded: 0,
    imagesSkipped: 0,
    imagesReplaced: 0,
    imagesWithErrors: 0,
    labelsAdded: 0,
    labelErrors: 0,
    classesAdded: classes.added,
    errors: [],
    replaced: [],
  };
  const report = (message: string) => {
    if (outcome.errors.length < MAX_REPORTED_ERRORS) outcome.errors.push(message);
  };
  for (const item of plan.items) {
    if (!item.labelError) continue;
    outcome.labelErrors += 1;
    report(`${item.path}: ${item.labelError}`);
  }
  const labelsOf = (row: StagedRow): CheckedLabels => {
    const labels = row.labels.flatMap((label) => {
      const classId = classes.target[label.classId];
      return classId === null || classId === undefined ? [] : [{ ...label, classId }];
    });
    let checked: CheckedLabels = { labels: [], shapes: [] };
    try {
      checked = checkLabels(dataset, labels);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      outcome.labelErrors += 1;
      report(`${row.entry_path}: ${error.message}`);
    }
    if (row.error) {
      outcome.imagesWithErrors += 1;
      report(`${row.entry_path}: ${row.error}`);
    }
    outcome.labelsAdded += checked.labels.length;
    return checked;
  };
  return { dataset, outcome, report, labelsOf };
}

/** The decoded file a staged row describes. */
export const fileOf = (row: StagedRow) => ({
  hash: row.hash,
  ext: row.ext,
  width: row.width,
  height: row.height,
  channels: row.channels,
  bytes: Number(row.bytes),
  error: row.error,
});
