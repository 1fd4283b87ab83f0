import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { Workspace } from '../account/workspace.entity.ts';
import { requireKey, roleIn } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { requireEditorOfOwn } from '../auth/resource-access.ts';
import { TRASH_DAYS } from '../datasets/dataset.service.ts';
import { copySlug, firstFreeSlug, renamedSlug, requireSlugFree } from '../db/slugs.ts';
import { PROJECT_STARS, setStar, starredAmong } from '../db/stars.ts';
import { deleteDeploymentsOf } from '../deployments/deployment-rollout.ts';
import { cancelExportsOf } from '../exports/export.service.ts';
import { Invalid, NotFound } from '../http/errors.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { containsPattern } from '../images/image-search.ts';
import { copyModel } from '../models/model-copy.ts';
import { modelEntry } from '../models/model-view.ts';
import { Model } from '../models/model.entity.ts';
import { liveModelCounts, searchProjectModels, trashModelsWithProject } from '../models/model.store.ts';
import { findProject, projectSlugScope } from './project-access.ts';
import { Project } from './project.entity.ts';
import { trashProject } from './project.store.ts';
import type { WeightsArrived } from '../predict/weights-arrived.ts';
import { reportedEpochCounts } from '../training/training-run.store.ts';
import type {
  ProjectClone,
  ProjectCloned,
  ProjectCreate,
  ProjectCreated,
  ProjectDeleted,
  ProjectList,
  ProjectListItem,
  ProjectPatch,
  ProjectPatched,
  ProjectRead,
} from './project.schemas.ts';

const MAX_NAME = 100;
const COPY_SUFFIX = ' (copy)';

/** Projects: containers of models, with the dataset access rules; the models themselves are the models domain. */
export class ProjectService {
  private readonly em: EntityManager;
  private readonly region: Region;
  /** Trashing a project cancels its models' active exports through it. */
  private readonly lifecycle: JobLifecycle;
  private readonly weightsArrived: WeightsArrived | undefined;

  /** `weightsArrived`: told of cloned models with weights (their automatic ONNX exports reuse the sources' artifacts). */
  constructor(em: EntityManager, region: Region, lifecycle: JobLifecycle, weightsArrived?: WeightsArrived) {
    this.em = em;
    this.region = region;
    this.lifecycle = lifecycle;
    this.weightsArrived = weightsArrived;
  }

  /** The owner's public projects, plus the private ones when the key belongs to that workspace. */
  async list(actor: Actor, owner: string, options: { limit: number }): Promise<z.input<typeof ProjectList>> {
    const workspace = await this.em.findOne(Workspace, { handle: owner });
    if (!workspace) throw NotFound(`Workspace "${owner}" not found`);
    const member = roleIn(actor, workspace.id) !== null;
    const where = { workspace, deletedAt: null, ...(member ? {} : { visibility: 'public' as const }) };
    const [projects, total] = await this.em.findAndCount(Project, where, {
      limit: options.limit,
      orderBy: { updatedAt: 'desc', id: 'desc' },
    });
    const ids = projects.map((project) => project.id);
    const starred = await starredAmong(this.em, PROJECT_STARS, actor, ids);
    const counts = await this.modelCounts(ids);
    return {
      projects: projects.map((project) =>
        this.listItem(project, owner, starred.has(project.id), counts.get(project.id) ?? 0),
      ),
      total,
      region: this.region,
    };
  }

  async read(
    actor: Actor,
    owner: string,
    slug: string,
    search: string | undefined,
  ): Promise<z.input<typeof ProjectRead>> {
    const { project, role } = await findProject(this.em, actor, owner, slug, 'view');
    const starred = await starredAmong(this.em, PROJECT_STARS, actor, [project.id]);
    const counts = await this.modelCounts([project.id]);
    const models = await this.models(project.id, search);
    return {
      project: {
        ...this.listItem(project, owner, starred.has(project.id), counts.get(project.id) ?? 0),
        metadata: project.metadata,
        viewPreferences: project.viewPreferences,
        region: this.region,
      },
      models: await this.modelEntries(models),
      isOwner: role !== null,
    };
  }

  /** The project's models, newest first; `search` keeps those whose name or metadata contains the text. */
  private async models(projectId: string, search: string | undefined): Promise<Model[]> {
    const where = { project: projectId, deletedAt: null };
    if (!search) return this.em.find(Model, where, { orderBy: { createdAt: 'desc', id: 'desc' } });
    const pattern = containsPattern(search);
    const matching = await searchProjectModels(this.em, projectId, pattern);
    return this.em.find(Model, { ...where, id: { $in: matching } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  }

  async create(actor: Actor, body: z.output<typeof ProjectCreate>): Promise<z.input<typeof ProjectCreated>> {
    const key = requireEditorOfOwn(actor, body.owner, 'create projects');
    await requireSlugFree(this.em, projectSlugScope(key.workspaceId), body.project);
    const project = this.em.create(Project, {
      workspace: key.workspaceId,
      slug: body.project,
      name: body.name,
      description: body.description ?? '',
      visibility: body.visibility,
      tags: body.tags ?? [],
      license: body.license ?? null,
      metadata: body.metadata ?? {},
      viewPreferences: {},
    });
    await this.em.flush();
    return { id: project.id, owner: key.workspaceHandle, project: project.slug, region: this.region };
  }

  async update(
    actor: Actor,
    owner: string,
    slug: string,
    patch: z.output<typeof ProjectPatch>,
  ): Promise<z.input<typeof ProjectPatched>> {
    const { starred, name, ...plain } = patch;
    const needsEdit = name !== undefined || Object.keys(plain).length > 0;
    if (!needsEdit && starred === undefined) throw Invalid('Send at least one field to change');
    const { project } = await findProject(this.em, actor, owner, slug, needsEdit ? 'edit' : 'view');
    const star =
      starred === undefined
        ? {}
        : { starred, starCount: await setStar(this.em, PROJECT_STARS, project.id, requireKey(actor).userId, starred) };
    if (needsEdit) {
      if (name !== undefined && name !== project.name) {
        project.slug = await renamedSlug(this.em, projectSlugScope(project.workspace.id), name, project.slug);
        project.name = name;
      }
      Object.assign(project, plain);
      await this.em.flush();
    }
    return { success: true, project: project.slug, ...star };
  }

  /** Moves the project and its models to trash; the models remember they went with it, so restoring the project brings them back. */
  async remove(actor: Actor, owner: string, slug: string): Promise<z.input<typeof ProjectDeleted>> {
    const { project } = await findProject(this.em, actor, owner, slug, 'edit');
    const deletedAt = new Date();
    const cascaded = await this.em.transactional(async (em) => {
      // The project row first: its lock waits for models being put in it (holdProject) to be committed.
      if (!(await trashProject(em, project.id, deletedAt))) throw NotFound(`Project ${owner}/${slug} not found`);
      const models = await trashModelsWithProject(em, project.id, deletedAt);
      // Their deployments go for good with the move to trash, or neither happens.
      await deleteDeploymentsOf(
        em,
        this.lifecycle,
        models.map((model) => model.id),
      );
      return models;
    });
    await cancelExportsOf(
      this.em,
      this.lifecycle,
      cascaded.map((model) => model.id),
    );
    return {
      success: true,
      project: project.slug,
      deletedAt: deletedAt.toISOString(),
      cascadedModels: cascaded.length,
      trashedModels: cascaded,
      daysRemaining: TRASH_DAYS,
    };
  }

  /** Copies a project the key can view, with its completed models, into the key's workspace; weights are shared, not copied. */
  async clone(
    actor: Actor,
    owner: string,
    slug: string,
    body: z.output<typeof ProjectClone>,
  ): Promise<z.input<typeof ProjectCloned>> {
    const { project: source } = await findProject(this.em, actor, owner, slug, 'view');
    const key = requireEditorOfOwn(actor, body.owner, 'clone into that workspace');
    const scope = projectSlugScope(key.workspaceId);
    if (body.project) await requireSlugFree(this.em, scope, body.project);
    const cloneSlug = body.project ?? (await firstFreeSlug(this.em, scope, copySlug(source.slug)));
    const { answer, modelIds } = await this.em.transactional(async (em) => {
      const clone = em.create(Project, {
        workspace: key.workspaceId,
        slug: cloneSlug,
        name: body.name ?? source.name.slice(0, MAX_NAME - COPY_SUFFIX.length) + COPY_SUFFIX,
        description: body.description ?? source.description,
        visibility: body.visibility,
        tags: source.tags,
        license: body.license ?? source.license ?? null,
        metadata: source.metadata,
        iconColor: source.iconColor ?? null,
        iconLetter: source.iconLetter ?? null,
        viewPreferences: source.viewPreferences,
      });
      const models = await em.find(Model, { project: source, status: 'completed', deletedAt: null });
      const copies = models.map((model) => copyModel(em, model, clone, { slug: model.slug }));
      await em.flush();
      const answer = {
        id: clone.id,
        owner: key.workspaceHandle,
        project: clone.slug,
        name: clone.name,
        modelCount: models.length,
        region: this.region,
      };
      return { answer, modelIds: copies.filter((copy) => copy.fileKey).map((copy) => copy.id) };
    });
    await this.weightsArrived?.(modelIds);
    return answer;
  }

  /** Models not in trash, per project. */
  private async modelCounts(projectIds: string[]): Promise<Map<string, number>> {
    if (projectIds.length === 0) return new Map();
    return liveModelCounts(this.em, projectIds);
  }

  /** The project's models as its read lists them, with the epochs their trainings reported. */
  private async modelEntries(models: Model[]): Promise<z.input<typeof ProjectRead>['models']> {
    const reported = await reportedEpochCounts(
      this.em,
      models.map((model) => model.id),
    );
    const epochCounts = new Map(reported.map((row) => [row.model_id, Number(row.epochs)]));
    return models.map((model) => ({ ...modelEntry(model), epochCount: epochCounts.get(model.id) ?? 0 }));
  }

  private listItem(
    project: Project,
    owner: string,
    starred: boolean,
    modelCount: number,
  ): z.input<typeof ProjectListItem> {
    return {
      id: project.id,
      owner,
      project: project.slug,
      name: project.name,
      description: project.description,
      visibility: project.visibility,
      tags: project.tags,
      ...(project.license ? { license: project.license } : {}),
      archived: project.archived,
      ...(project.iconColor ? { iconColor: project.iconColor } : {}),
      ...(project.iconLetter ? { iconLetter: project.iconLetter } : {}),
      modelCount,
      starCount: project.starCount,
      starred,
      isStarred: starred,
      createdAt: project.createdAt.toISOString(),
      updatedAt: project.updatedAt.toISOString(),
    };
  }
}
