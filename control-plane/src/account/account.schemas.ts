import { REGIONS } from '@vp/config';
import { z } from 'zod';
import { STORED_OBJECT_KINDS } from '../storage/stored-object.entity.ts';
import { Handle } from './handle.ts';
import { ROLES } from './roles.ts';

const Region = z.enum(REGIONS);
const Role = z.enum(ROLES);
const Timestamp = z.iso.datetime();

export const COUNTED_RESOURCES = ['projects', 'datasets', 'models'] as const;

export const AccountSummary = z.object({
  username: Handle.meta({ description: "The key's workspace handle (a username for personal workspaces)" }),
  name: z.string(),
  accountType: z.enum(['personal', 'team']),
  plan: z
    .literal('enterprise')
    .meta({ description: 'On-premise appliances have every feature; there are no plan tiers' }),
  region: Region,
  role: Role.meta({ description: "The key's role in its workspace" }),
  actingUser: z
    .object({ username: Handle, name: z.string() })
    .meta({ description: 'Whose permissions the key carries' }),
  counts: z.object(
    Object.fromEntries(COUNTED_RESOURCES.map((kind) => [kind, z.number().int()])) as Record<
      (typeof COUNTED_RESOURCES)[number],
      z.ZodNumber
    >,
  ),
  teams: z
    .array(
      z.object({
        userId: z.string().meta({ description: "The team workspace's id (the hosted service's field name)" }),
        username: Handle.meta({ description: "The team's handle, as the hosted service names it" }),
        handle: Handle,
        name: z.string(),
        plan: z.literal('enterprise'),
        region: Region,
        role: Role,
      }),
    )
    .meta({ description: 'Team workspaces the acting user belongs to' }),
  creditsCents: z
    .number()
    .int()
    .meta({ description: "The workspace's credit balance in US cents, as GET /api/billing/balance reports it" }),
  createdAt: Timestamp,
});

export const STORAGE_CATEGORIES = ['datasets', 'models', 'exports'] as const;
const UsageFigure = z
  .object({ current: z.number(), limit: z.number(), percent: z.number() })
  .meta({ description: 'limit and percent are 0: an appliance has no storage quota (its disks are the limit)' });
const CategoryBytes = z.object({ bytes: z.number().int(), count: z.number().int() });

export const StorageQuery = z.object({
  details: z.enum(['true', 'false']).optional().meta({
    description:
      'true: also list the ten largest datasets, models and model exports (breakdown.topItems; an export artifact shared by reuse is listed once)',
  }),
});

export const StorageUsage = z.object({
  username: Handle.meta({ description: "The key's workspace" }),
  region: Region,
  tier: z.literal('enterprise'),
  usage: z.object({ storage: UsageFigure.meta({ description: 'Bytes stored; no quota on an appliance' }) }),
  updatedAt: Timestamp.nullable().meta({ description: 'When the latest stored object was written; null when none is' }),
  breakdown: z.object({
    byCategory: z
      .object(
        Object.fromEntries(STORAGE_CATEGORIES.map((category) => [category, CategoryBytes])) as Record<
          (typeof STORAGE_CATEGORIES)[number],
          typeof CategoryBytes
        >,
      )
      .meta({
        description:
          'datasets: image bytes and version archives; models: weights; exports: exported model files. count: resources of that kind (stored objects for exports)',
      }),
    topItems: z
      .array(
        z.object({
          _id: z.string(),
          name: z.string(),
          slug: z.string(),
          sizeBytes: z.number().int(),
          type: z.enum(['dataset', 'model', 'export']),
          parentName: z.string().optional(),
          parentSlug: z.string().optional(),
        }),
      )
      .meta({ description: 'With details=true: the ten largest datasets and models; empty otherwise' }),
  }),
  totalBytes: z.number().int(),
  byKind: z.object(
    Object.fromEntries(STORED_OBJECT_KINDS.map((kind) => [kind, z.number().int()])) as Record<
      (typeof STORED_OBJECT_KINDS)[number],
      z.ZodNumber
    >,
  ),
});

export const UserPath = z.object({ username: Handle });
export const UserProfile = z.object({ username: Handle, name: z.string(), createdAt: Timestamp });

export const ProfileQuery = z.object({ username: Handle });
export const FollowedProfile = z.object({
  user: z.object({
    username: Handle,
    fullName: z.string(),
    accountType: z.literal('personal'),
    followerCount: z.number().int(),
    isFollowed: z
      .boolean()
      .meta({ description: "Whether the calling key's user follows this user (false without a key)" }),
  }),
});
export const FollowBody = z.object({
  username: Handle,
  followed: z.boolean().meta({ description: 'true: follow; false: stop following. Both are idempotent' }),
});
export const FollowResult = z.object({ followed: z.boolean(), followerCount: z.number().int() });

export const WorkspacePath = z.object({ owner: Handle });
export const MemberPath = WorkspacePath.extend({ username: Handle });
export const Member = z.object({ username: Handle, name: z.string(), role: Role, since: Timestamp });
export const MemberList = z.object({ workspace: Handle, members: z.array(Member), total: z.number().int() });
export const MemberRoleBody = z.object({
  role: z.enum(['viewer', 'editor', 'admin'], { error: 'must be one of viewer, editor, admin' }),
});
export const MemberChange = z.object({ success: z.literal(true), username: Handle, role: Role.optional() });
