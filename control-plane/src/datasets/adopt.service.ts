import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { roleAtLeast } from '../account/roles.ts';
import type { Actor } from '../auth/actor.ts';
import { Conflict, Forbidden, HttpError, Invalid, NotFound } from '../http/errors.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { copyImageBytes, foreignFiles, holdImageBytes, type StoredFile } from '../images/image-bytes-copy.ts';
import { copyImages, type ClassMapEntry } from '../images/image-copy.ts';
import {
  deleteImagesOfDatasets,
  imagesWithWorkspace,
  splitsOfFiles,
  type SelectedImageRow,
} from '../images/image.store.ts';
import { queueFaceBlur } from '../faces/face-blur.job.ts';
import { INGEST_JOB } from '../ingest/ingest-payload.ts';
import { subjectWithActiveJob } from '../jobs/job.store.ts';
import type { Storage } from '../storage/storage.ts';
import type { AdoptBody, Adopted } from './adopt.schemas.ts';
import { classKey } from './class-names.ts';
import { resolveClasses } from './class-resolution.ts';
import { checkDatasetAccess, findDataset } from './dataset-access.ts';
import { addDelta, applyDelta, countDelta, lockDataset } from './dataset-counters.ts';
import { Dataset } from './dataset.entity.ts';
import { refuseConnected, refuseMoveOut } from './connected-storage.ts';

type AdoptRequest = z.output<typeof AdoptBody>;

type SelectedImage = SelectedImageRow;

/** What an adoption will do, worked out from the datasets and images as they are. */
interface Adoption {
  target: Dataset;
  /** The destination and every source dataset of the selection. */
  datasetIds: string[];
  /** The images to copy, in request order: the selection less the ones already in the destination. */
  copies: SelectedImage[];
  /** Source datasets whose images keep their labels and split. */
  preserved: Set<string>;
  classNames: string[];
  classMap: ClassMapEntry[];
}

/**
 * Copies or moves images from other datasets into one (POST …/images/adopt). Everything is decided
 * twice with the same code: before any byte is copied (so a refused request copies nothing), and again
 * under the locks of every dataset involved, where nothing can change before the rows commit.
 */
export class AdoptService {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async adopt(actor: Actor, owner: string, slug: string, body: AdoptRequest): Promise<z.input<typeof Adopted>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    refuseConnected(dataset, 'its images are the files of its storage; add files there and ingest its reference again');
    const imageIds = [...new Set(body.imageIds)];
    const to = dataset.workspace.id;
    const label = `${owner}/${slug}`;
    const planned = await this.plan(this.em, actor, label, dataset.id, imageIds, body);
    // Images of public datasets of other workspaces need their bytes under this workspace: copied before the transaction.
    await copyImageBytes(this.em, this.storage, to, planned.copies);
    let files: StoredFile[] = planned.copies;
    try {
      const adopted = await this.em.transactional(async (tx) => {
        // Every dataset involved, in id order, so two adoptions between the same datasets cannot deadlock.
        for (const id of [...planned.datasetIds].sort()) await lockDataset(tx, id);
        const adoption = await this.plan(tx, actor, label, dataset.id, imageIds, body);
        files = adoption.copies;
        await holdImageBytes(tx, this.storage, to, files);
        return this.apply(tx, adoption, body.release === true);
      });
      return { adopted, skipped: imageIds.length - adopted };
    } catch (error) {
      // Nothing was adopted: copied bytes no other image uses go again.
      await releaseImageBlobs(this.em, this.storage, to, foreignFiles(to, files));
      throw error;
    }
  }

  /** Checks access, busy datasets, tasks and classes; finds the images to copy and where their classes go. */
  private async plan(
    em: EntityManager,
    actor: Actor,
    label: string,
    targetId: string,
    imageIds: string[],
    body: AdoptRequest,
  ): Promise<Adoption> {
    const selected = await selectedImages(em, imageIds);
    if (selected.length < imageIds.length)
      throw NotFound(`${imageIds.length - selected.length} of the ${imageIds.length} images were not found`);
    const sourceIds = [...new Set(selected.map((image) => image.dataset_id))];
    const datasets = new Map(
      (
        await em.find(Dataset, { id: { $in: [targetId, ...sourceIds] } }, { populate: ['workspace'], refresh: true })
      ).map((dataset) => [dataset.id, dataset]),
    );
    const target = checkDatasetAccess(actor, datasets.get(targetId) ?? null, 'edit', label).dataset;
    // Spec: setting release (true or false) or classMapping preserves labels and splits.
    const preserve = body.release !== undefined || body.classMapping !== undefined;
    const preserved = new Set<string>();
    for (const id of sourceIds) {
      const editable = sourceEditable(
        actor,
        datasets.get(id) ?? null,
        selected.filter((image) => image.dataset_id === id).length,
        body.release === true,
      );
      if (editable && preserve) preserved.add(id);
    }
    await requireIdle(em, [...datasets.values()]);
    if (preserved.size)
      requireCompatible(
        target,
        [...preserved].map((id) => datasets.get(id) as Dataset),
      );
    const copies = await notInTarget(em, target, selected, preserved);
    const classes = mapClasses(target, copies, datasets, preserved, body.classMapping ?? {});
    return { target, datasetIds: [...datasets.keys()], copies, preserved, ...classes };
  }

  /** Inserts the copies, removes the originals of a move, and adjusts every counter. Returns how many were adopted. */
  private async apply(tx: EntityManager, adoption: Adoption, release: boolean): Promise<number> {
    const { target, copies, preserved, classMap } = adoption;
    target.classNames = adoption.classNames;
    await tx.flush();
    const labeled = copies.filter((image) => preserved.has(image.dataset_id)).map((image) => image.id);
    const unlabeled = copies.filter((image) => !preserved.has(image.dataset_id)).map((image) => image.id);
    let delta = countDelta([], 1);
    if (labeled.length) delta = addDelta(delta, await copyImages(tx, target, { imageIds: labeled }, { classMap }));
    if (unlabeled.length)
      delta = addDelta(delta, await copyImages(tx, target, { imageIds: unlabeled }, { classMap: [], split: 'train' }));
    await applyDelta(tx, target.id, delta);
    // Copies keep their faces_blurred; the job blurs those that come from datasets without blurFaces.
    if (target.blurFaces && copies.length) await queueFaceBlur(tx, { id: target.id, workspaceId: target.workspace.id });
    if (release && copies.length) {
      const removed = await deleteImagesOfDatasets(
        tx,
        copies.map((image) => image.id),
      );
      for (const id of new Set(removed.map((row) => row.dataset_id))) {
        const rows = removed.filter((row) => row.dataset_id === id);
        await applyDelta(
          tx,
          id,
          countDelta(
            rows.map((row) => ({ split: row.split, labelCount: row.label_count, hasError: row.error !== null })),
            -1,
          ),
        );
      }
    }
    return copies.length;
  }
}

/** The selected images with their dataset's workspace, in request order. */
async function selectedImages(em: EntityManager, imageIds: string[]): Promise<SelectedImage[]> {
  const rows = await imagesWithWorkspace(em, imageIds);
  const order = new Map(imageIds.map((id, index) => [id, index]));
  return rows.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
}

/**
 * Whether the key may take labels from the source. A source it cannot view hides its images (404); a
 * move needs editor access on every source (else 403).
 */
function sourceEditable(actor: Actor, source: Dataset | null, imageCount: number, release: boolean): boolean {
  let role;
  try {
    role = checkDatasetAccess(actor, source, 'view', '').role;
  } catch (error) {
    if (error instanceof HttpError && error.status === 404)
      throw NotFound(`${imageCount} of the images were not found`);
    throw error;
  }
  const editable = role !== null && roleAtLeast(role, 'editor');
  if (release && source) refuseMoveOut(source);
  if (release && !editable) {
    throw Forbidden(
      `release: moving images out of ${source?.workspace.handle}/${source?.slug} needs editor access there; copy them instead (release false)`,
    );
  }
  return editable;
}

/** 409 while an ingest of any dataset involved is queued or running: it would commit over the adoption's view of the dataset. */
async function requireIdle(em: EntityManager, datasets: Dataset[]): Promise<void> {
  const busy = await subjectWithActiveJob(
    em,
    INGEST_JOB,
    datasets.map((dataset) => dataset.id),
  );
  const dataset = datasets.find((candidate) => candidate.id === busy?.subject_id);
  if (dataset)
    throw Conflict(
      `Dataset ${dataset.workspace.handle}/${dataset.slug} is busy: an ingest is queued or running; try again when it has finished`,
    );
}

/**
 * Kept labels must mean the same in the destination: the same task, and for pose the same keypoint
 * shape. (Image channels and depth scales are not dataset settings here, so they cannot differ.)
 */
function requireCompatible(target: Dataset, sources: Dataset[]): void {
  for (const source of sources) {
    const name = `${source.workspace.handle}/${source.slug}`;
    if (source.task !== target.task)
      throw Conflict(
        `Labels of ${name} are for ${source.task}, this dataset's task is ${target.task}; omit release and classMapping to adopt the images unlabeled`,
      );
    if (target.task === 'pose' && JSON.stringify(source.kptShape ?? null) !== JSON.stringify(target.kptShape ?? null)) {
      throw Conflict(
        `Keypoints of ${name} have shape ${JSON.stringify(source.kptShape ?? null)}, this dataset's are ${JSON.stringify(target.kptShape ?? null)}`,
      );
    }
  }
}

/** The selection less images whose file (same hash) is already in the split it would go to, or earlier in the selection. */
async function notInTarget(
  em: EntityManager,
  target: Dataset,
  selected: SelectedImage[],
  preserved: Set<string>,
): Promise<SelectedImage[]> {
  const existing = await splitsOfFiles(em, target.id, [...new Set(selected.map((image) => image.hash))]);
  const taken = new Set(existing.map((image) => `${image.hash}:${image.split}`));
  return selected.filter((image) => {
    const key = `${image.hash}:${preserved.has(image.dataset_id) ? image.split : 'train'}`;
    if (taken.has(key)) return false;
    taken.add(key);
    return true;
  });
}

/**
 * Where the classes of the copied labels go. The classes the copies use are matched by name across all
 * sources (case ignored beyond 2 characters); classMapping wins. Adopt adds a class only where the mapping
 * names a new one: a class neither mapped nor matching a destination class is 422 with unmatchedClasses.
 */
function mapClasses(
  target: Dataset,
  copies: SelectedImage[],
  datasets: Map<string, Dataset>,
  preserved: Set<string>,
  classMapping: Record<string, number | string | null>,
) {
  const used = new Map<string, Set<number>>();
  for (const image of copies) {
    if (!preserved.has(image.dataset_id)) continue;
    const ids = used.get(image.dataset_id) ?? new Set<number>();
    for (const classId of image.class_ids) ids.add(classId);
    used.set(image.dataset_id, ids);
  }
  const byKey = new Map<string, string>();
  for (const [datasetId, ids] of used) {
    const names = (datasets.get(datasetId) as Dataset).classNames;
    for (const classId of [...ids].sort((a, b) => a - b))
      if (!byKey.has(classKey(names[classId]))) byKey.set(classKey(names[classId]), names[classId]);
  }
  const sourceNames = [...byKey.values()];
  const resolution = resolveClasses(target, sourceNames, classMapping, { unmatched: 'report', fail: Invalid });
  if (resolution.unmatched.length) {
    throw new HttpError(
      422,
      `${resolution.unmatched.length} class${resolution.unmatched.length === 1 ? '' : 'es'} of the images match no class of this dataset; map them in classMapping (to a class index, a new class name, or null to drop their labels)`,
      { unmatchedClasses: resolution.unmatched },
    );
  }
  const targetOf = new Map(sourceNames.map((name, index) => [classKey(name), resolution.target[index]]));
  const classMap: ClassMapEntry[] = [];
  for (const [datasetId, ids] of used) {
    const names = (datasets.get(datasetId) as Dataset).classNames;
    for (const from of ids) {
      const to = targetOf.get(classKey(names[from]));
      if (to !== null && to !== undefined) classMap.push({ datasetId, from, to });
    }
  }
  return { classNames: resolution.classNames, classMap };
}
