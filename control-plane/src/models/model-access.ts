import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role } from '../account/roles.ts';
import type { Actor } from '../auth/actor.ts';
import { requireAccess, type AccessNeed } from '../auth/resource-access.ts';
import type { SlugScope } from '../db/slugs.ts';
import { NotFound } from '../http/errors.ts';
import { Model } from './model.entity.ts';

export interface ModelAccess {
  model: Model;
  role: Role | null;
}

/** Model URL names are unique per project, trash included. */
export const modelSlugScope = (projectId: string): SlugScope => ({ table: 'models', column: 'project_id', id: projectId, noun: 'model' });

/** A model is as visible as its project; it is gone while it or its project is in trash. */
export async function findModel(em: EntityManager, actor: Actor, owner: string, project: string, slug: string, need: AccessNeed): Promise<ModelAccess> {
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
