// Which model (and run) a webhook call is about: a training job's key names its model; a user's key names it
// by modelId, or by project and name before training_started has answered.
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Slug } from '../account/handle.ts';
import { requireRole } from '../auth/access.ts';
import type { KeyActor } from '../auth/actor.ts';
import { firstFreeSlug, numberedSlug, slugify } from '../db/slugs.ts';
import { Forbidden, Invalid, NotFound } from '../http/errors.ts';
import { modelSlugScope } from '../models/model-access.ts';
import { Model } from '../models/model.entity.ts';
import { Project } from '../projects/project.entity.ts';
import { TrainingRun } from '../training/training-run.entity.ts';

export interface Identity {
  modelId?: string | null;
  project?: string | null;
  name?: string | null;
}

/** `owner/project` → the project slug in the key's workspace; another workspace's prefix is 403. */
function projectSlug(key: KeyActor, project: string): string {
  const [owner, slug] = project.includes('/')
    ? (project.split('/', 2) as [string, string])
    : [key.workspaceHandle, project];
  if (owner !== key.workspaceHandle)
    throw Forbidden(`This key belongs to "${key.workspaceHandle}"; use a key created in "${owner}" to train there`);
  const parsed = Slug.safeParse(slugify(slug));
  if (!parsed.success) throw Invalid(`project "${project.slice(0, 200)}" is not a valid project name`);
  return parsed.data;
}

/** The model an event or upload is about, for writing; null identity fields are ignored. */
export async function modelFor(em: EntityManager, key: KeyActor, identity: Identity): Promise<Model> {
  requireRole(key, key.workspaceId, 'editor');
  const modelId = key.jobScope?.modelId ?? identity.modelId;
  if (key.jobScope && identity.modelId && identity.modelId !== key.jobScope.modelId)
    throw NotFound(`Model ${identity.modelId} not found`);
  if (modelId) {
    const model = await em.findOne(
      Model,
      { id: modelId, workspace: key.workspaceId, deletedAt: null },
      { populate: ['project', 'workspace'] },
    );
    if (!model) throw NotFound(`Model ${modelId} not found`);
    return model;
  }
  if (!identity.project) throw Invalid('Send modelId, or project (and name) to identify the model');
  const slug = projectSlug(key, identity.project);
  const model = await em.findOne(
    Model,
    {
      workspace: key.workspaceId,
      project: { slug, deletedAt: null },
      slug: slugify(identity.name || 'train'),
      deletedAt: null,
    },
    { populate: ['project', 'workspace'] },
  );
  if (!model) throw NotFound(`Model ${key.workspaceHandle}/${slug}/${slugify(identity.name || 'train')} not found`);
  return model;
}

/**
 * training_started from a user's own machine: the project is created when missing, and the model too; a
 * model of that name that already trained is not overwritten: the new one gets the next free name (train-2).
 */
export async function modelForNewRun(em: EntityManager, key: KeyActor, identity: Identity): Promise<Model> {
  if (key.jobScope || identity.modelId) return modelFor(em, key, identity);
  requireRole(key, key.workspaceId, 'editor');
  if (!identity.project) throw Invalid('Send project (owner/project) to start tracking a run');
  const slug = projectSlug(key, identity.project);
  const project =
    (await em.findOne(
      Project,
      { workspace: key.workspaceId, slug, deletedAt: null },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    )) ??
    em.create(Project, {
      workspace: key.workspaceId,
      slug,
      name: slug,
      description: '',
      visibility: 'private',
      tags: [],
      license: null,
      metadata: {},
      viewPreferences: {},
    });
  await em.flush();
  const wanted = Slug.safeParse(slugify(identity.name || 'train'));
  if (!wanted.success) throw Invalid(`name "${String(identity.name).slice(0, 200)}" is not a valid model name`);
  const existing = await em.findOne(
    Model,
    { project, slug: wanted.data, deletedAt: null },
    { populate: ['project', 'workspace'] },
  );
  if (
    existing &&
    existing.status === 'pending' &&
    !existing.fileKey &&
    !(await em.count(TrainingRun, { model: existing }))
  )
    return existing;
  const modelSlug = await firstFreeSlug(em, modelSlugScope(project.id), numberedSlug(wanted.data));
  const model = em.create(Model, {
    workspace: key.workspaceId,
    project,
    slug: modelSlug,
    name: modelSlug,
    description: '',
    metadata: {},
  });
  await em.flush();
  await em.populate(model, ['workspace', 'project']);
  return model;
}
