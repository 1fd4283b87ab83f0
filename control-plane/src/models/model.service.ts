import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { requireKey } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { requireEditorOfOwn } from '../auth/resource-access.ts';
import { TRASH_DAYS } from '../datasets/dataset.service.ts';
import { copySlug, firstFreeSlug, numberedSlug, renamedSlug, requireSlugFree } from '../db/slugs.ts';
import { MODEL_STARS, setStar, starredAmong } from '../db/stars.ts';
import { deleteDeploymentsOf } from '../deployments/deployment-rollout.ts';
import { cancelExportsOf } from '../exports/export.service.ts';
import { Conflict, Invalid } from '../http/errors.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { findProject, holdProject } from '../projects/project-access.ts';
import type { Storage } from '../storage/storage.ts';
import { findModel, modelSlugScope } from './model-access.ts';
import { recordStatus, type ModelStatus } from './model-lifecycle.ts';
import { copyModel } from './model-copy.ts';
import { modelAnalysis } from './model-analysis.ts';
import { modelDetail, modelListItem, weightsName } from './model-view.ts';
import { Model } from './model.entity.ts';
import type {
  ModelClone,
  ModelCreate,
  ModelCreated,
  ModelDeleted,
  ModelFiles,
  ModelList,
  ModelPatch,
  ModelPatched,
  ModelRead,
} from './model.schemas.ts';
import { readableSlug } from './readable-slug.ts';
import type { WeightsArrived } from '../predict/weights-arrived.ts';

/** PATCH fields as the record keeps them (the status apart: it changes through the model lifecycle). */
function recordFields(
  patch: Omit<z.output<typeof ModelPatch>, 'starred' | 'projectId' | 'name' | 'status'>,
): Partial<Model> {
  const { trainingError, ...rest } = patch;
  return {
    ...rest,
    ...(trainingError !== undefined && {
      trainingError:
        typeof trainingError === 'object' && trainingError !== null ? trainingError.message : trainingError,
    }),
  };
}

/** A status as clients send it, as the record keeps it: starting or running is the record's training, untrained its pending. */
function recordStatusOf(status: z.output<typeof ModelPatch>['status'] & string): ModelStatus {
  return status === 'starting' || status === 'running' ? 'training' : status === 'untrained' ? 'pending' : status;
}

/** Download URLs of weights are short-lived. */
const DOWNLOAD_URL_SECONDS = 15 * 60;

type Address = { owner: string; project: string; model: string };

/** Models: records in a project, their weights file and their settings; a model is as visible as its project. */
export class ModelService {
  private readonly em: EntityManager;
  private readonly region: Region;
  private readonly storage: Storage;
  /** Trashing a model cancels its active exports through it. */
  private readonly lifecycle: JobLifecycle;
  private readonly weightsArrived: WeightsArrived | undefined;

  /** `weightsArrived`: told of a clone with weights (its automatic ONNX export reuses the source's artifact). */
  constructor(
    em: EntityManager,
    region: Region,
    storage: Storage,
    lifecycle: JobLifecycle,
    weightsArrived?: WeightsArrived,
  ) {
    this.em = em;
    this.region = region;
    this.storage = storage;
    this.lifecycle = lifecycle;
    this.weightsArrived = weightsArrived;
  }

  async list(
    actor: Actor,
    owner: string,
    projectSlug: string,
    options: { limit: number },
  ): Promise<z.input<typeof ModelList>> {
    const { project } = await findProject(this.em, actor, owner, projectSlug, 'view');
    const [models, total] = await this.em.findAndCount(
      Model,
      { project, deletedAt: null },
      { limit: options.limit, orderBy: { createdAt: 'desc', id: 'desc' } },
    );
    const starred = await starredAmong(
      this.em,
      MODEL_STARS,
      actor,
      models.map((model) => model.id),
    );
    return {
      models: models.map((model) => modelListItem(model, owner, starred.has(model.id))),
      total,
      region: this.region,
    };
  }

  async read(actor: Actor, at: Address, options: { analysis?: number }): Promise<z.input<typeof ModelRead>> {
    const { model, role } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    if (options.analysis === 1) {
      await this.em.populate(model, ['analysis', 'validationExtremes']);
      return { analysis: modelAnalysis(model.analysis, model.validationExtremes) };
    }
    const starred = await starredAmong(this.em, MODEL_STARS, actor, [model.id]);
    if (model.dataset) await this.em.populate(model, ['dataset.workspace']);
    const dataset =
      model.dataset && !model.dataset.deletedAt
        ? { owner: model.dataset.workspace.handle, dataset: model.dataset.slug }
        : null;
    return { model: modelDetail(model, at.owner, starred.has(model.id), dataset), isOwner: role !== null };
  }

  /** An untrained record in a project of the key's workspace; weights arrive later through the upload API. */
  async create(actor: Actor, body: z.output<typeof ModelCreate>): Promise<z.input<typeof ModelCreated>> {
    const key = requireEditorOfOwn(actor, body.owner, 'create models');
    return this.em.transactional(async (em) => {
      const project = await holdProject(
        em,
        key.workspaceId,
        { slug: body.project },
        `${key.workspaceHandle}/${body.project}`,
      );
      const scope = modelSlugScope(project.id);
      if (body.model) await requireSlugFree(em, scope, body.model);
      const slug = body.model ?? (await firstFreeSlug(em, scope, numberedSlug(readableSlug())));
      const model = em.create(Model, {
        workspace: key.workspaceId,
        project,
        slug,
        name: body.name ?? slug,
        description: body.description ?? '',
        task: body.task,
        metadata: body.metadata ?? {},
        trainArgs: body.trainArgs ?? null,
        metrics: body.metrics ?? null,
        epochs: body.epochs ?? null,
        version: body.version ?? null,
      });
      await em.flush();
      return {
        id: model.id,
        owner: key.workspaceHandle,
        project: project.slug,
        model: model.slug,
        name: model.name,
        region: this.region,
      };
    });
  }

  async update(actor: Actor, at: Address, patch: z.output<typeof ModelPatch>): Promise<z.input<typeof ModelPatched>> {
    const { starred, projectId, name, ...plain } = patch;
    if (projectId !== undefined) {
      if (Object.keys(patch).length > 1) throw Invalid('projectId: moves the model and is sent alone');
      return this.move(actor, at, projectId);
    }
    const needsEdit = name !== undefined || Object.keys(plain).length > 0;
    if (!needsEdit && starred === undefined) throw Invalid('Send at least one field to change');
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, needsEdit ? 'edit' : 'view');
    const star =
      starred === undefined
        ? {}
        : { starred, starCount: await setStar(this.em, MODEL_STARS, model.id, requireKey(actor).userId, starred) };
    if (needsEdit) {
      if (name !== undefined && name !== model.name) {
        model.slug = await renamedSlug(this.em, modelSlugScope(model.project.id), name, model.slug);
        model.name = name;
      }
      const { status, ...fields } = plain;
      Object.assign(model, recordFields(fields));
      // The status with the other fields, in one transaction (the ORM's flush writes those).
      await this.em.transactional(async (em) => {
        await em.flush();
        if (status !== undefined) await recordStatus(em, model.id, recordStatusOf(status));
      });
    }
    return { success: true, model: model.slug, ...star };
  }

  /** To another project of the same owner, under a numbered URL name when its own is taken there. */
  private async move(actor: Actor, at: Address, projectId: string): Promise<z.input<typeof ModelPatched>> {
    const { model: found } = await findModel(this.em, actor, at.owner, at.project, at.model, 'edit');
    return this.em.transactional(async (em) => {
      // Locked, so a training start cannot slip in between the status check and the move.
      const model = await em.findOneOrFail(Model, found.id, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (model.status === 'training')
        throw Conflict('The model is training; move it once training has finished or been cancelled');
      const target = await holdProject(em, model.workspace.id, { id: projectId }, `${projectId} of ${at.owner}`);
      const moved = { name: model.name, projectSlug: target.slug, projectId: target.id };
      if (target.id === model.project.id)
        return { success: true, model: model.slug, slug: model.slug, ...moved, renamed: false };
      const slug = await firstFreeSlug(em, modelSlugScope(target.id), numberedSlug(model.slug));
      const renamed = slug !== model.slug;
      Object.assign(model, { project: target, slug });
      await em.flush();
      return { success: true, model: slug, slug, ...moved, renamed };
    });
  }

  async remove(actor: Actor, at: Address): Promise<z.input<typeof ModelDeleted>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'edit');
    // Deployments using this model (pending replacements included) go for good, before the model goes to trash.
    await deleteDeploymentsOf(this.em, this.lifecycle, [model.id]);
    const deletedAt = new Date();
    Object.assign(model, { deletedAt, trashedWithProject: false });
    await this.em.flush();
    await cancelExportsOf(this.em, this.lifecycle, [model.id]);
    return { success: true, model: model.slug, deletedAt: deletedAt.toISOString(), daysRemaining: TRASH_DAYS };
  }

  /** The weights file with a short-lived download URL; empty until weights are uploaded. */
  async files(actor: Actor, at: Address): Promise<z.input<typeof ModelFiles>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    if (!model.fileKey) return { files: [] };
    const name = weightsName(model);
    const downloadUrl = await this.storage.urls.download(model.fileKey, {
      expiresInSeconds: DOWNLOAD_URL_SECONDS,
      filename: name,
    });
    return { files: [{ name, size: model.fileBytes ?? 0, downloadUrl }] };
  }

  /** Copies a model the key can view into an existing project of the key's workspace, sharing its weights. */
  async clone(actor: Actor, at: Address, body: z.output<typeof ModelClone>): Promise<z.input<typeof ModelCreated>> {
    const { model: source } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    const key = requireEditorOfOwn(actor, body.owner, 'clone into that workspace');
    const cloned = await this.em.transactional(async (em) => {
      const project = await holdProject(
        em,
        key.workspaceId,
        { slug: body.project },
        `${key.workspaceHandle}/${body.project}`,
      );
      const scope = modelSlugScope(project.id);
      if (body.model) await requireSlugFree(em, scope, body.model);
      const copies = copySlug(source.slug);
      const slug = body.model ?? (await firstFreeSlug(em, scope, (n) => (n === 1 ? source.slug : copies(n - 1))));
      const clone = copyModel(em, source, project, { slug, name: body.name, description: body.description });
      await em.flush();
      return {
        id: clone.id,
        owner: key.workspaceHandle,
        project: project.slug,
        model: clone.slug,
        name: clone.name,
        region: this.region,
      };
    });
    await this.weightsArrived?.([cloned.id]);
    return cloned;
  }
}
