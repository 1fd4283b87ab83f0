import type { EntityManager } from '@mikro-orm/postgresql';
import { copySlug, firstFreeSlug, requireSlugFree as requireFree, type SlugScope } from '../db/slugs.ts';

export const datasetSlugScope = (workspaceId: string): SlugScope => ({
  table: 'datasets',
  column: 'workspace_id',
  id: workspaceId,
  noun: 'dataset',
});

/** Trashed datasets keep their slug: it is freed only when the trash is emptied. */
export function requireSlugFree(em: EntityManager, workspaceId: string, slug: string): Promise<void> {
  return requireFree(em, datasetSlugScope(workspaceId), slug);
}

/** `<slug>-copy`, else `<slug>-copy-2`, `-3`…: the first not taken in the workspace (trash included), shortened to fit 128. */
export function freeCopySlug(em: EntityManager, workspaceId: string, slug: string): Promise<string> {
  return firstFreeSlug(em, datasetSlugScope(workspaceId), copySlug(slug));
}
