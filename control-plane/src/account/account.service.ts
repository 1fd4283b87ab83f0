import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { ApiKey } from '../auth/api-key.entity.ts';
import { announceAuthChange } from '../auth/authenticator.ts';
import { Conflict, Invalid, NotFound } from '../http/errors.ts';
import { STORED_OBJECT_KINDS } from '../storage/stored-object.entity.ts';
import { storedTotalsByKind } from '../storage/stored-object.store.ts';
import type {
  AccountSummary,
  FollowedProfile,
  FollowResult,
  Member,
  StorageUsage,
  UserProfile,
} from './account.schemas.ts';
import { HANDLE_PATTERN } from './handle.ts';
import { largestItems } from './largest-items.store.ts';
import { Membership } from './membership.entity.ts';
import type { Role } from './roles.ts';
import { SummaryFigures } from './summary-figures.ts';
import { User } from './user.entity.ts';
import { addFollow, followerCount, followFigures, removeFollow } from './user-follow.store.ts';
import { Workspace } from './workspace.entity.ts';

function checkHandle(handle: string): void {
  if (!HANDLE_PATTERN.test(handle)) {
    throw Invalid(`"${handle}": handles are 4-32 lowercase letters or digits, with single hyphens between segments`);
  }
}

function checkName(name: string): void {
  if (!name.trim() || name.length > 100) throw Invalid('name: must be 1-100 characters');
}

/** Users, workspaces and memberships: the identity every other domain scopes its data by. */
export class AccountService {
  private readonly getEm: () => EntityManager;
  private readonly region: Region;
  private figures: SummaryFigures | undefined;

  /**
   * `em` is asked for on first use: the summary, the most frequent call, needs none when `figures` is given (the
   * process's, cached and shared by concurrent requests); without, it reads through uncached ones of its own.
   */
  constructor(em: () => EntityManager, region: Region, figures?: SummaryFigures) {
    this.getEm = em;
    this.region = region;
    this.figures = figures;
  }

  private get em(): EntityManager {
    return this.getEm();
  }

  private async requireHandleFree(handle: string): Promise<void> {
    checkHandle(handle);
    if (await this.em.count(Workspace, { handle })) throw Conflict(`Handle "${handle}" is already taken`);
  }

  /** A user and the personal workspace named after them. */
  async createUser(username: string, name = username): Promise<{ user: User; workspace: Workspace }> {
    checkName(name);
    await this.requireHandleFree(username);
    const user = this.em.create(User, { username, name });
    const workspace = this.em.create(Workspace, {
      handle: username,
      name,
      kind: 'personal',
      region: this.region,
      owner: user,
    });
    this.em.create(Membership, { workspace, user, role: 'owner' });
    await this.em.flush();
    return { user, workspace };
  }

  async createTeam(handle: string, ownerUsername: string, name = handle): Promise<Workspace> {
    checkName(name);
    await this.requireHandleFree(handle);
    const owner = await this.findUser(ownerUsername);
    const workspace = this.em.create(Workspace, { handle, name, kind: 'team', region: this.region, owner });
    this.em.create(Membership, { workspace, user: owner, role: 'owner' });
    await this.em.flush();
    await announceAuthChange(this.em); // the owner's keys now list one more team
    return workspace;
  }

  async findUser(username: string): Promise<User> {
    const user = await this.em.findOne(User, { username });
    if (!user) throw NotFound(`User "${username}" not found`);
    return user;
  }

  async findWorkspace(handle: string): Promise<Workspace> {
    const workspace = await this.em.findOne(Workspace, { handle });
    if (!workspace) throw NotFound(`Workspace "${handle}" not found`);
    return workspace;
  }

  /** Adds a member or changes a member's role; the owner is set at creation and never changed here. */
  async setMemberRole(workspaceHandle: string, username: string, role: Exclude<Role, 'owner'>): Promise<Membership> {
    const workspace = await this.findWorkspace(workspaceHandle);
    if (workspace.kind !== 'team')
      throw Invalid(`"${workspaceHandle}" is a personal workspace; only team workspaces have members`);
    const user = await this.findUser(username);
    if (workspace.owner.id === user.id)
      throw Conflict(`"${username}" owns "${workspaceHandle}"; the owner's role cannot change`);
    const membership =
      (await this.em.findOne(Membership, { workspace, user })) ?? this.em.create(Membership, { workspace, user, role });
    membership.role = role;
    await this.em.flush();
    await announceAuthChange(this.em);
    return membership;
  }

  async removeMember(workspaceHandle: string, username: string): Promise<void> {
    const workspace = await this.findWorkspace(workspaceHandle);
    const user = await this.findUser(username);
    if (workspace.owner.id === user.id) throw Conflict(`"${username}" owns "${workspaceHandle}" and cannot be removed`);
    const membership = await this.em.findOne(Membership, { workspace, user });
    if (!membership) throw NotFound(`"${username}" is not a member of "${workspaceHandle}"`);
    await this.em.transactional(async (tx) => {
      // The member's keys go with the membership: added back later, they get new keys rather than the old ones working again.
      await tx.nativeDelete(ApiKey, { workspace, user });
      tx.remove(membership);
      await tx.flush();
      await announceAuthChange(tx);
    });
  }

  /**
   * The most frequent authenticated call: the identity part comes cached with the key (see KeyActor.profile), the
   * counts and credit from kept counters (see SummaryFigures).
   */
  async summary(actor: Actor): Promise<z.input<typeof AccountSummary>> {
    const key = requireKey(actor);
    const { counts, creditsCents } = await (this.figures ??= new SummaryFigures(this.em)).read(key.workspaceId);
    return {
      username: key.workspaceHandle,
      name: key.profile.workspaceName,
      accountType: key.workspaceKind,
      plan: 'enterprise',
      region: key.profile.region,
      role: key.role,
      actingUser: { username: key.username, name: key.profile.userName },
      counts,
      creditsCents,
      teams: key.profile.teams.map(({ id, ...team }) => ({
        userId: id,
        username: team.handle,
        plan: 'enterprise' as const,
        ...team,
      })),
      createdAt: key.profile.workspaceCreatedAt,
    };
  }

  /** Bytes stored for the key's workspace, summed from the recorded size of each stored object. */
  async storage(actor: Actor, details: boolean): Promise<z.input<typeof StorageUsage>> {
    const key = requireKey(actor);
    const rows = await storedTotalsByKind(this.em, key.workspaceId);
    const stored = (kind: string) => rows.find((row) => row.kind === kind);
    const byKind = Object.fromEntries(
      STORED_OBJECT_KINDS.map((kind) => [kind, Number(stored(kind)?.bytes ?? 0)]),
    ) as z.input<typeof StorageUsage>['byKind'];
    const totalBytes = Object.values(byKind).reduce((a, b) => a + b, 0);
    const latest = rows.length ? Math.max(...rows.map((row) => new Date(row.latest).getTime())) : undefined;
    const { counts } = await (this.figures ??= new SummaryFigures(this.em)).read(key.workspaceId);
    return {
      username: key.workspaceHandle,
      region: key.profile.region,
      tier: 'enterprise',
      usage: { storage: { current: totalBytes, limit: 0, percent: 0 } },
      updatedAt: latest === undefined ? null : new Date(latest).toISOString(),
      breakdown: {
        byCategory: {
          datasets: { bytes: byKind.datasetImages + byKind.datasetArchives, count: counts.datasets },
          models: { bytes: byKind.modelFiles, count: counts.models },
          exports: { bytes: byKind.exports, count: Number(stored('exports')?.objects ?? 0) },
        },
        topItems: details ? await this.largestItems(key.workspaceId) : [],
      },
      totalBytes,
      byKind,
    };
  }

  /** The ten largest live datasets (their images' bytes), models (their weights) and export artifacts (each file once) of a workspace. */
  private async largestItems(workspaceId: string): Promise<z.input<typeof StorageUsage>['breakdown']['topItems']> {
    const rows = await largestItems(this.em, workspaceId);
    return rows.map((row) => ({
      _id: row.id,
      name: row.name,
      slug: row.slug,
      sizeBytes: Number(row.bytes),
      type: row.type,
      ...(row.parent_name === null ? {} : { parentName: row.parent_name, parentSlug: row.parent_slug ?? '' }),
    }));
  }

  async profile(username: string): Promise<z.input<typeof UserProfile>> {
    const user = await this.findUser(username);
    return { username: user.username, name: user.name, createdAt: user.createdAt.toISOString() };
  }

  async followedProfile(actor: Actor, username: string): Promise<z.input<typeof FollowedProfile>> {
    const user = await this.findUser(username);
    const figures = await followFigures(this.em, user.id, actor.kind === 'key' ? actor.userId : null);
    return {
      user: {
        username: user.username,
        fullName: user.name,
        accountType: 'personal',
        followerCount: Number(figures.followers),
        isFollowed: figures.followed,
      },
    };
  }

  async follow(actor: Actor, username: string, followed: boolean): Promise<z.input<typeof FollowResult>> {
    const key = requireKey(actor);
    const user = await this.findUser(username);
    if (user.id === key.userId) throw Invalid('You cannot follow yourself');
    if (followed) await addFollow(this.em, key.userId, user.id);
    else await removeFollow(this.em, key.userId, user.id);
    const followers = await followerCount(this.em, user.id);
    return { followed, followerCount: Number(followers) };
  }

  async listMembers(actor: Actor, handle: string): Promise<Array<z.input<typeof Member>>> {
    const workspace = await this.findWorkspace(handle);
    requireRole(actor, workspace.id, 'viewer');
    const memberships = await this.em.find(
      Membership,
      { workspace },
      { populate: ['user'], orderBy: { user: { username: 'asc' } } },
    );
    return memberships.map((m) => ({
      username: m.user.username,
      name: m.user.name,
      role: m.role,
      since: m.createdAt.toISOString(),
    }));
  }

  async changeMember(
    actor: Actor,
    handle: string,
    username: string,
    role: Exclude<Role, 'owner'>,
  ): Promise<Membership> {
    requireRole(actor, (await this.findWorkspace(handle)).id, 'admin');
    return this.setMemberRole(handle, username, role);
  }

  async dropMember(actor: Actor, handle: string, username: string): Promise<void> {
    requireRole(actor, (await this.findWorkspace(handle)).id, 'admin');
    await this.removeMember(handle, username);
  }
}
