import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role } from '../account/roles.ts';
import type { Actor } from '../auth/actor.ts';
import { requireAccess, type AccessNeed } from '../auth/resource-access.ts';
import type { SlugScope } from '../db/slugs.ts';
import { NotFound } from '../http/errors.ts';
import { Project } from './project.entity.ts';

export interface ProjectAccess {
  project: Project;
  role: Role | null;
}

export const projectSlugScope = (workspaceId: string): SlugScope => ({
  table: 'projects',
  column: 'workspace_id',
  id: workspaceId,
  noun: 'project',
});

/** The dataset access rule applied to projects: invisible or trashed is 404, visible but not editable 403. */
export async function findProject(
  em: EntityManager,
  actor: Actor,
  owner: string,
  slug: string,
  need: AccessNeed,
): Promise<ProjectAccess> {
  const project = await em.findOne(
    Project,
    { workspace: { handle: owner }, slug, deletedAt: null },
    { populate: ['workspace'] },
  );
  const { resource, role } = requireAccess(actor, project, need, `Project ${owner}/${slug} not found`);
  return { project: resource, role };
}

/**
 * A project of the workspace that models are about to be put in (create, clone, move). Call inside a
 * transaction: the share lock keeps the project from going to trash until the model is in, so no
 * model ends up live in a trashed project.
 */
export async function holdProject(
  em: EntityManager,
  workspaceId: string,
  where: { slug: string } | { id: string },
  label: string,
): Promise<Project> {
  const project = await em.findOne(
    Project,
    { ...where, workspace: workspaceId, deletedAt: null },
    { lockMode: LockMode.PESSIMISTIC_READ },
  );
  if (!project) throw NotFound(`Project ${label} not found`);
  return project;
}
