import type { EntityManager } from '@mikro-orm/postgresql';
import { Conflict, Invalid } from '../http/errors.ts';
import { pgArray, query } from './sql.ts';

const MAX_SLUG = 128;
/** Candidate names looked up per query. */
const CANDIDATES_PER_QUERY = 20;

/** Where a URL name must be unique: datasets and projects per workspace, models per project. */
export interface SlugScope {
  table: 'datasets' | 'projects' | 'models';
  column: 'workspace_id' | 'project_id';
  id: string;
  /** For messages: "dataset", "project", "model". */
  noun: string;
}

/** A display name as a URL name: lowercase letters and digits joined by single hyphens, at most 128. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG)
    .replace(/-+$/, '');
}

/** `slug` followed by `suffix`, the slug shortened so the whole fits 128. */
export function withSuffix(slug: string, suffix: string): string {
  return slug.slice(0, MAX_SLUG - suffix.length).replace(/-+$/, '') + suffix;
}

/** The names a copy tries in turn: `<slug>-copy`, `<slug>-copy-2`, `-3`… */
export const copySlug = (slug: string) => (n: number) => withSuffix(slug, n === 1 ? '-copy' : `-copy-${n}`);

/** The names a moved resource tries in turn: `<slug>`, `<slug>-2`, `-3`… */
export const numberedSlug = (slug: string) => (n: number) => (n === 1 ? slug : withSuffix(slug, `-${n}`));

/** Resources in trash keep their slug: it is freed only when the trash is emptied. */
export async function requireSlugFree(em: EntityManager, scope: SlugScope, slug: string): Promise<void> {
  const [taken] = await query<{ trashed: boolean }>(
    em,
    `select deleted_at is not null as trashed from ${scope.table} where ${scope.column} = ? and slug = ?`,
    [scope.id, slug],
  );
  const where = scope.column === 'workspace_id' ? 'workspace' : 'project';
  if (taken)
    throw Conflict(
      `A ${scope.noun} named "${slug}" already exists in this ${where}${taken.trashed ? ' (in trash)' : ''}`,
    );
}

/** The first of `candidate(1)`, `candidate(2)`… not taken in the scope (trash included). */
export async function firstFreeSlug(
  em: EntityManager,
  scope: SlugScope,
  candidate: (n: number) => string,
): Promise<string> {
  for (let first = 1; ; first += CANDIDATES_PER_QUERY) {
    const candidates = Array.from({ length: CANDIDATES_PER_QUERY }, (_, i) => candidate(first + i));
    const rows = await query<{ slug: string }>(
      em,
      `select slug from ${scope.table} where ${scope.column} = ? and slug = any(?::text[])`,
      [scope.id, pgArray(candidates)],
    );
    const taken = new Set(rows.map((row) => row.slug));
    const free = candidates.find((name) => !taken.has(name));
    if (free) return free;
  }
}

/** Spec: a rename changes the display name and the URL name together; the new URL name must be free. */
export async function renamedSlug(em: EntityManager, scope: SlugScope, name: string, current: string): Promise<string> {
  const slug = slugify(name);
  if (!slug) throw Invalid('name: must contain a letter or digit to make a URL name from');
  if (slug !== current) await requireSlugFree(em, scope, slug);
  return slug;
}
