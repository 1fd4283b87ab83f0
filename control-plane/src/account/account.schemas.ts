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
  plan: z.literal('enterprise').meta({ description: 'On-premise appliances have every feature; there are no plan tiers' }),
  region: Region,
  role: Role.meta({ description: "The key's role in its workspace" }),
  actingUser: z.object({ username: Handle, name: z.string() }).meta({ description: 'Whose permissions the key carries' }),
  counts: z.object(Object.fromEntries(COUNTED_RESOURCES.map((kind) => [kind, z.number().int()])) as Record<(typeof COUNTED_RESOURCES)[number], z.ZodNumber>),
  teams: z.array(z.object({ handle: Handle, name: z.string(), role: Role })).meta({ description: 'Team workspaces the acting user belongs to' }),
  creditsCents: z.number().int().meta({ description: "The workspace's credit balance in US cents, as GET /api/billing/balance reports it" }),
  createdAt: Timestamp,
});

export const StorageUsage = z.object({
  region: Region,
  totalBytes: z.number().int(),
  byKind: z.object(Object.fromEntries(STORED_OBJECT_KINDS.map((kind) => [kind, z.number().int()])) as Record<(typeof STORED_OBJECT_KINDS)[number], z.ZodNumber>),
});

export const UserPath = z.object({ username: Handle });
export const UserProfile = z.object({ username: Handle, name: z.string(), createdAt: Timestamp });

export const WorkspacePath = z.object({ owner: Handle });
export const MemberPath = WorkspacePath.extend({ username: Handle });
export const Member = z.object({ username: Handle, name: z.string(), role: Role, since: Timestamp });
export const MemberList = z.object({ workspace: Handle, members: z.array(Member), total: z.number().int() });
export const MemberRoleBody = z.object({
  role: z.enum(['viewer', 'editor', 'admin'], { error: 'must be one of viewer, editor, admin' }),
});
export const MemberChange = z.object({ success: z.literal(true), username: Handle, role: Role.optional() });
