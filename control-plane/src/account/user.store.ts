// The users table: the statements the User entity does not make (the first start's check for any user).
import type { EntityManager } from '@mikro-orm/postgresql';

/** Takes the first-start lock until the transaction ends: replicas starting together create the first user once. */
export async function lockFirstStart(em: EntityManager): Promise<void> {
  await em.getConnection().execute('select pg_advisory_xact_lock(7311002)', [], 'all', em.getTransactionContext());
}

/** How many users there are, in the caller's transaction. */
export async function countUsers(em: EntityManager): Promise<number> {
  const [{ count }] = await em
    .getConnection()
    .execute<[{ count: string }]>('select count(*) from users', [], 'all', em.getTransactionContext());
  return Number(count);
}
