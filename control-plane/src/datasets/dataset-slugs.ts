import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { Conflict } from '../http/errors.ts';
import { Dataset } from './dataset.entity.ts';

const MAX_SLUG = 128;
/** Candidate copy names looked up per query. */
const CANDIDATES_PER_QUERY = 20;

/** Trashed datasets keep their slug: it is freed only when the trash is emptied. */
export async function requireSlugFree(em: EntityManager, workspaceId: string, slug: string): Promise<void> {
  const taken = await em.findOne(Dataset, { workspace: workspaceId, slug }, { fields: ['deletedAt'] });
  if (taken) throw Conflict(`A dataset named "${slug}" already exists in this workspace${taken.deletedAt ? ' (in trash)' : ''}`);
}

/** `<slug>-copy`, else `<slug>-copy-2`, `-3`…: the first not taken in the workspace (trash included), shortened to fit 128. */
export async function freeCopySlug(em: EntityManager, workspaceId: string, slug: string): Promise<string> {
  for (let first = 1; ; first += CANDIDATES_PER_QUERY) {
    const candidates = Array.from({ length: CANDIDATES_PER_QUERY }, (_, i) => copySlug(slug, first + i));
    const taken = new Set(
      (await query<{ slug: string }>(em, 'select slug from datasets where workspace_id = ? and slug = any(?::text[])', [workspaceId, pgArray(candidates)])).map((row) => row.slug),
    );
    const free = candidates.find((candidate) => !taken.has(candidate));
    if (free) return free;
  }
}

function copySlug(slug: string, n: number): string {
  const suffix = n === 1 ? '-copy' : `-copy-${n}`;
  return slug.slice(0, MAX_SLUG - suffix.length).replace(/-+$/, '') + suffix;
}
