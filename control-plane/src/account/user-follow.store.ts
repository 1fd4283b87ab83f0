// The user_follows table: who follows whom (a follower's user id, the followed user's id).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** How many follow the user, and whether this user (null: no one) is one of them. */
export async function followFigures(
  em: EntityManager,
  followedId: string,
  followerId: string | null,
): Promise<{ followers: string; followed: boolean }> {
  const [figures] = await query<{ followers: string; followed: boolean }>(
    em,
    'select count(*) as followers, coalesce(bool_or(follower_id = ?), false) as followed from user_follows where followed_id = ?',
    [followerId, followedId],
  );
  return figures!;
}

/** The follower follows the user (again: no change). */
export async function addFollow(em: EntityManager, followerId: string, followedId: string): Promise<void> {
  await query(em, 'insert into user_follows (follower_id, followed_id) values (?, ?) on conflict do nothing', [
    followerId,
    followedId,
  ]);
}

/** The follower no longer follows the user. */
export async function removeFollow(em: EntityManager, followerId: string, followedId: string): Promise<void> {
  await query(em, 'delete from user_follows where follower_id = ? and followed_id = ?', [followerId, followedId]);
}

/** How many follow the user. */
export async function followerCount(em: EntityManager, followedId: string): Promise<string> {
  const [count] = await query<{ followers: string }>(
    em,
    'select count(*) as followers from user_follows where followed_id = ?',
    [followedId],
  );
  return count!.followers;
}
