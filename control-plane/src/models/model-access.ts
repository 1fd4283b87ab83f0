import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role } from '../account/roles.ts';
import type { Actor } from '../auth/actor.ts';
import { requireAccess, type AccessNeed } from '../auth/resource-access.ts';
import type { SlugScope } from '../db/slugs.ts';
import { NotFound } from '../http/errors.ts';
import { Model } from './model.entity.ts';
import { modelRefByPath } from './model.store.ts';

export interface ModelAccess {
  model: Model;
  role: Role | null;
}

/** Model URL names are unique per project, trash included. */
export const modelSlugScope = (projectId: string): SlugScope => ({
  table: 'models',
  column: 'project_id',
  id: projectId,
  noun: 'model',
});

/** A model is as visible as its project; it is gone while it or its project is in trash. */
export async function findModel(
  em: EntityManager,
  actor: Actor,
  owner: string,
  project: string,
  slug: string,
  need: AccessNeed,
): Promise<ModelAccess> {
  const missing = `Model ${owner}/${project}/${slug} not found`;
  const model = await em.findOne(
    Model,
    { workspace: { handle: owner }, project: { slug: project, deletedAt: null }, slug, deletedAt: null },
    { populate: ['workspace', 'project'] },
  );
  if (!model) throw NotFound(missing);
  const { role } = requireAccess(actor, model.project, need, missing);
  return { model, role };
}

/** What running a model needs of it; its workspace is whose inference processes run it. */
export type ModelRef = Pick<Model, 'id' | 'fileKey' | 'trainArgs'> & { workspace: { id: string } };

/**
 * findModel's lookup and access rule in one SQL query, for predict's hot path: the entity with its workspace and
 * project cost about 2 ms of ORM work per request (measured), a tenth of predict's whole overhead.
 */
export async function findModelRef(
  em: EntityManager,
  actor: Actor,
  owner: string,
  project: string,
  slug: string,
  need: AccessNeed,
): Promise<ModelRef> {
  const row = await modelRefByPath(em, owner, project, slug);
  const guarded = row && { id: row.project_id, workspace: { id: row.workspace_id }, visibility: row.visibility };
  requireAccess(actor, guarded ?? null, need, `Model ${owner}/${project}/${slug} not found`);
  return { id: row!.id, fileKey: row!.file_key, trainArgs: row!.train_args, workspace: { id: row!.workspace_id } };
}
