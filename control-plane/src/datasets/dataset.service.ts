import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { Workspace } from '../account/workspace.entity.ts';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { renamedSlug } from '../db/slugs.ts';
import { DATASET_STARS, setStar, starredAmong } from '../db/stars.ts';
import { queueFaceBlur } from '../faces/face-blur.job.ts';
import { INGEST_JOB } from '../ingest/ingest-payload.ts';
import type { JobProgress } from '../jobs/job.entity.ts';
import { activeJobProgress } from '../jobs/job.store.ts';
import { Conflict, Forbidden, Invalid, NotFound } from '../http/errors.ts';
import { Model } from '../models/model.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { checkClassNames, classColors, colorMap } from './class-names.ts';
import { connectionFields, sourceOf } from './connected-storage.ts';
import { datasetSamples, sampleImagesOf } from './dataset-samples.ts';
import { classStats } from './class-stats.ts';
import type { ClassStats } from './class-stats.schemas.ts';
import { findDataset } from './dataset-access.ts';
import { lockDataset } from './dataset-counters.ts';
import { datasetSlugScope, requireSlugFree } from './dataset-slugs.ts';
import { Dataset } from './dataset.entity.ts';
import { savedVersions } from './version.service.ts';
import type {
  DatasetCreate,
  DatasetCreated,
  DatasetDeleted,
  DatasetDetail,
  DatasetList,
  DatasetListItem,
  DatasetModels,
  DatasetPatch,
  DatasetPatched,
} from './dataset.schemas.ts';

export const TRASH_DAYS = 30;

type ListItem = z.input<typeof DatasetListItem>;

/** Datasets: the records, their access rules and their settings; images and labels are the images domain. */
export class DatasetService {
  private readonly em: EntityManager;
  private readonly region: Region;
  private readonly storage: Storage;

  constructor(em: EntityManager, region: Region, storage: Storage) {
    this.em = em;
    this.region = region;
    this.storage = storage;
  }

  /** The owner's public datasets, plus the private ones when the key belongs to that workspace. */
  async list(
    actor: Actor,
    owner: string,
    query: { limit: number; includeSamples: boolean; includeImageUrls: boolean },
  ): Promise<z.input<typeof DatasetList>> {
    const workspace = await this.em.findOne(Workspace, { handle: owner });
    if (!workspace) throw NotFound(`Workspace "${owner}" not found`);
    const member = actor.kind === 'key' && actor.workspaceId === workspace.id;
    const where = { workspace, deletedAt: null, ...(member ? {} : { visibility: 'public' as const }) };
    const [datasets, total] = await this.em.findAndCount(Dataset, where, {
      limit: query.limit,
      orderBy: { updatedAt: 'desc', id: 'desc' },
    });
    const starred = await starredAmong(
      this.em,
      DATASET_STARS,
      actor,
      datasets.map((d) => d.id),
    );
    const samples = query.includeSamples
      ? await datasetSamples(
          this.em,
          this.storage.urls,
          datasets.map((d) => ({ id: d.id, workspaceId: workspace.id })),
          query.includeImageUrls,
        )
      : undefined;
    const connections = await connectionFields(this.em, datasets);
    return {
      datasets: datasets.map((dataset) => ({
        ...this.listItem(dataset, owner, starred.has(dataset.id)),
        ...connections.get(dataset.id),
        ...(samples
          ? { samples: samples.get(dataset.id) ?? [], sampleImages: sampleImagesOf(samples.get(dataset.id) ?? []) }
          : {}),
      })),
      total,
      region: this.region,
    };
  }

  async read(actor: Actor, owner: string, slug: string): Promise<z.input<typeof DatasetDetail>> {
    const { dataset, role } = await findDataset(this.em, actor, owner, slug, 'view');
    const starred = await starredAmong(this.em, DATASET_STARS, actor, [dataset.id]);
    const canEdit = role === 'editor' || role === 'admin' || role === 'owner';
    const ingest = await activeIngest(this.em, dataset.id);
    const connection = (await connectionFields(this.em, [dataset])).get(dataset.id);
    return {
      ...this.listItem(dataset, owner, starred.has(dataset.id)),
      ...connection,
      ...(ingest ? { status: 'processing' } : {}),
      ...(ingest && canEdit && (ingest.total ?? 0) >= PROGRESS_FROM_IMAGES ? { processingProgress: ingest } : {}),
      classColors: colorMap(classColors(dataset.classNames, dataset.classColors)),
      format: dataset.format,
      blurFaces: dataset.blurFaces,
      kptSkeletonId: dataset.kptSkeletonId ?? null,
      ...(dataset.kptShape ? { kptShape: dataset.kptShape } : {}),
      metadata: dataset.metadata,
      ...(dataset.source ? { source: sourceOf(dataset) } : {}),
      versions: await savedVersions(this.em, dataset.id),
      errorCount: dataset.errorCount,
      region: this.region,
      isOwner: role !== null,
      canEdit,
    };
  }

  async create(actor: Actor, body: z.output<typeof DatasetCreate>): Promise<z.input<typeof DatasetCreated>> {
    const key = requireKey(actor);
    if (body.owner && body.owner !== key.workspaceHandle) {
      throw Forbidden(
        `This key belongs to "${key.workspaceHandle}"; use a key created in "${body.owner}" to create datasets there`,
      );
    }
    requireRole(actor, key.workspaceId, 'editor');
    const classNames = body.task === 'depth' ? [] : (body.classNames ?? []);
    if (body.task === 'depth' && body.classNames?.length) throw Invalid('classNames: depth datasets have no classes');
    checkClassNames(classNames, 'classNames');
    await requireSlugFree(this.em, key.workspaceId, body.dataset);
    const dataset = this.em.create(Dataset, {
      workspace: key.workspaceId,
      slug: body.dataset,
      name: body.name,
      description: body.description ?? '',
      task: body.task,
      format: body.format,
      visibility: body.visibility,
      blurFaces: body.blurFaces,
      tags: body.tags ?? [],
      license: body.license ?? null,
      metadata: body.metadata ?? {},
      classNames,
      classColors: [],
    });
    await this.em.flush();
    return { id: dataset.id, owner: key.workspaceHandle, dataset: dataset.slug, region: this.region };
  }

  async update(
    actor: Actor,
    owner: string,
    slug: string,
    patch: z.output<typeof DatasetPatch>,
  ): Promise<z.input<typeof DatasetPatched>> {
    const { starred, ...changes } = patch;
    const needsEdit = Object.keys(changes).length > 0;
    if (!needsEdit && starred === undefined) throw Invalid('Send at least one field to change');
    const { dataset } = await findDataset(this.em, actor, owner, slug, needsEdit ? 'edit' : 'view');
    if (starred !== undefined)
      dataset.starCount = await setStar(this.em, DATASET_STARS, dataset.id, requireKey(actor).userId, starred);
    const faceBlurJobId = needsEdit ? await this.applyChanges(dataset, changes) : undefined;
    const star = starred === undefined ? {} : { starred, starCount: dataset.starCount };
    return { success: true, dataset: dataset.slug, ...(faceBlurJobId ? { faceBlurJobId } : {}), ...star };
  }

  /** Returns the face blur job's id when blurFaces was turned on for a dataset with images. */
  private async applyChanges(
    dataset: Dataset,
    changes: Omit<z.output<typeof DatasetPatch>, 'starred'>,
  ): Promise<string | undefined> {
    const { name, classNames, classColors: colors, initializeClassNames, task, ...plain } = changes;
    return this.em.transactional(async (em) => {
      // Class lists are checked against annotations under the dataset's row lock, like every label write.
      await lockDataset(em, dataset.id);
      await em.refresh(dataset);
      if (name !== undefined && name !== dataset.name) await this.rename(dataset, name);
      const nextTask = task ?? dataset.task;
      if (initializeClassNames !== undefined) {
        if (dataset.classNames.length > 0 || dataset.annotationCount > 0) {
          throw Conflict(
            'initializeClassNames: the dataset already has classes or annotations; rename classes with classNames',
          );
        }
        checkClassNames(initializeClassNames, 'initializeClassNames');
        dataset.classNames = initializeClassNames;
      }
      if (classNames !== undefined) {
        if (classNames.length < dataset.classNames.length) {
          throw Invalid(
            `classNames: send all ${dataset.classNames.length} current names in index order (renamed as needed), then any new ones; remove classes with classes/delete or classes/merge`,
          );
        }
        if (nextTask === 'depth' && classNames.length) throw Invalid('classNames: depth datasets have no classes');
        checkClassNames(classNames, 'classNames');
        dataset.classNames = classNames;
      }
      if (colors !== undefined) dataset.classColors = changedColors(dataset, colors);
      if (task !== undefined && task !== dataset.task) {
        if (dataset.annotationCount > 0)
          throw Conflict(
            `task: the dataset has ${dataset.annotationCount} annotations made for ${dataset.task}; change the task of an unlabeled dataset only`,
          );
        if (nextTask === 'depth' && dataset.classNames.length)
          throw Conflict('task: depth datasets have no classes; delete the classes first');
        dataset.task = task;
      }
      const blurOn = plain.blurFaces === true && !dataset.blurFaces;
      Object.assign(dataset, plain);
      if (classNames || initializeClassNames || task) dataset.revision += 1;
      await em.flush();
      // Under the dataset lock, so an ingest committing now either sees the setting or has its images taken by the job.
      return blurOn && dataset.imageCount > 0
        ? queueFaceBlur(em, { id: dataset.id, workspaceId: dataset.workspace.id })
        : undefined;
    });
  }

  /** Spec: a rename changes the display name and the URL name together. */
  private async rename(dataset: Dataset, name: string): Promise<void> {
    dataset.slug = await renamedSlug(this.em, datasetSlugScope(dataset.workspace.id), name, dataset.slug);
    dataset.name = name;
  }

  async remove(actor: Actor, owner: string, slug: string): Promise<z.input<typeof DatasetDeleted>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    dataset.deletedAt = new Date();
    await this.em.flush();
    return {
      success: true,
      dataset: dataset.slug,
      deletedAt: dataset.deletedAt.toISOString(),
      daysRemaining: TRASH_DAYS,
    };
  }

  async models(actor: Actor, owner: string, slug: string): Promise<z.input<typeof DatasetModels>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const models = await this.em.find(
      Model,
      { dataset, workspace: dataset.workspace, deletedAt: null },
      { populate: ['project'], orderBy: { createdAt: 'desc' } },
    );
    return {
      models: models.map((model) => ({
        id: model.id,
        owner,
        project: model.project.slug,
        model: model.slug,
        name: model.name,
        status: model.status,
        task: model.task,
        epochs: model.epochs ?? null,
        bestEpoch: model.bestEpoch ?? null,
        metrics: model.metrics ?? null,
        startedAt: model.startedAt?.toISOString() ?? null,
        completedAt: model.completedAt?.toISOString() ?? null,
        createdAt: model.createdAt.toISOString(),
      })),
      count: models.length,
    };
  }

  async classStats(actor: Actor, owner: string, slug: string): Promise<z.input<typeof ClassStats>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    return classStats(this.em, dataset);
  }

  private listItem(dataset: Dataset, owner: string, isStarred: boolean): ListItem {
    return {
      id: dataset.id,
      owner,
      dataset: dataset.slug,
      name: dataset.name,
      description: dataset.description,
      task: dataset.task,
      visibility: dataset.visibility,
      imageCount: dataset.imageCount,
      classCount: dataset.classNames.length,
      classNames: dataset.classNames,
      splits: {
        train: dataset.trainCount,
        val: dataset.valCount,
        test: dataset.testCount,
        labeled: dataset.labeledCount,
      },
      annotationCount: dataset.annotationCount,
      starCount: dataset.starCount,
      isStarred,
      status: dataset.status,
      tags: dataset.tags,
      ...(dataset.license ? { license: dataset.license } : {}),
      ...(dataset.iconColor ? { iconColor: dataset.iconColor } : {}),
      ...(dataset.iconLetter ? { iconLetter: dataset.iconLetter } : {}),
      createdAt: dataset.createdAt.toISOString(),
      updatedAt: dataset.updatedAt.toISOString(),
    };
  }
}

/** New class colours from a full list in class order, or from index → colour for the classes to change. */
function changedColors(dataset: Dataset, colors: string[] | Record<string, string>): string[] {
  const count = dataset.classNames.length;
  if (Array.isArray(colors)) {
    if (colors.length > count) throw Invalid(`classColors: the dataset has ${count} classes`);
    return colors;
  }
  const next = classColors(dataset.classNames, dataset.classColors);
  for (const [index, color] of Object.entries(colors)) {
    if (Number(index) >= count) throw Invalid(`classColors.${index}: the dataset has ${count} classes`);
    next[Number(index)] = color;
  }
  return next;
}

/** Spec: editors see processingProgress while an import of 10,000 or more images runs. */
const PROGRESS_FROM_IMAGES = 10_000;

/** The progress of the dataset's queued or running ingest, if any. */
async function activeIngest(em: EntityManager, datasetId: string): Promise<JobProgress | null> {
  const job = await activeJobProgress(em, datasetId, INGEST_JOB);
  return job ? (job.progress ?? { stage: 'queued', percent: 0 }) : null;
}
