import { migrations } from './migrations/index.ts';

/** This version's migrations, in the order they apply. */
export const MIGRATION_NAMES = migrations.map((migration) => migration.name);

/**
 * A database's (or a backup's) executed migrations against this version's: those it lacks, and those this
 * version does not know (a newer version migrated it).
 */
export function migrationState(executed: string[]): { pending: string[]; unknown: string[] } {
  const known = new Set(MIGRATION_NAMES);
  const done = new Set(executed);
  return {
    pending: MIGRATION_NAMES.filter((name) => !done.has(name)),
    unknown: executed.filter((name) => !known.has(name)),
  };
}
