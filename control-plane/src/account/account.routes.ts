import { defineRoute } from '../http/define-route.ts';
import {
  AccountSummary,
  MemberChange,
  MemberList,
  MemberPath,
  MemberRoleBody,
  StorageQuery,
  StorageUsage,
  UserPath,
  UserProfile,
  ProfileQuery,
  FollowedProfile,
  FollowBody,
  FollowResult,
  WorkspacePath,
} from './account.schemas.ts';

export const accountSummary = defineRoute({
  method: 'GET',
  path: '/api/account/summary',
  tag: 'Account',
  summary: "The calling key's workspace: plan, region, role, resource counts and teams",
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'Account summary', schema: AccountSummary },
  handler: (ctx) => ctx.state.services.account.summary(ctx.state.actor),
});

export const storageUsage = defineRoute({
  method: 'GET',
  path: '/api/storage',
  tag: 'Account',
  summary: "Bytes stored by the calling key's workspace, by kind",
  auth: 'key',
  limit: 'default',
  request: { query: StorageQuery },
  response: { status: 200, description: 'Storage use', schema: StorageUsage },
  handler: (ctx, { query }) => ctx.state.services.account.storage(ctx.state.actor, query.details === 'true'),
});

export const userLookup = defineRoute({
  method: 'GET',
  path: '/api/users/:username',
  tag: 'Account',
  summary: "A user's public profile",
  auth: 'optional',
  limit: 'default',
  request: { params: UserPath },
  response: { status: 200, description: 'Public profile', schema: UserProfile },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.account.profile(params.username),
});

export const profileByQuery = defineRoute({
  method: 'GET',
  path: '/api/users',
  tag: 'Account',
  summary: "A user's profile with follower count, as the hosted service's client reads it",
  auth: 'optional',
  limit: 'default',
  request: { query: ProfileQuery },
  response: { status: 200, description: 'Profile', schema: FollowedProfile },
  errors: [404],
  handler: (ctx, { query }) => ctx.state.services.account.followedProfile(ctx.state.actor, query.username),
});

export const follow = defineRoute({
  method: 'PATCH',
  path: '/api/users',
  tag: 'Account',
  summary: "Follow or stop following a user, as the calling key's user",
  auth: 'key',
  limit: 'mutation',
  request: { body: FollowBody },
  response: { status: 200, description: 'Whether followed now, and the follower count', schema: FollowResult },
  errors: [400, 404],
  handler: (ctx, { body }) => ctx.state.services.account.follow(ctx.state.actor, body.username, body.followed),
});

export const listMembers = defineRoute({
  method: 'GET',
  path: '/api/workspaces/:owner/members',
  tag: 'Account',
  summary: 'Members of a workspace and their roles (viewer or above, with a key of that workspace)',
  auth: 'key',
  limit: 'default',
  request: { params: WorkspacePath },
  response: { status: 200, description: 'Members', schema: MemberList },
  errors: [403, 404],
  handler: async (ctx, { params }) => {
    const members = await ctx.state.services.account.listMembers(ctx.state.actor, params.owner);
    return { workspace: params.owner, members, total: members.length };
  },
});

export const setMemberRole = defineRoute({
  method: 'PUT',
  path: '/api/workspaces/:owner/members/:username',
  tag: 'Account',
  summary: "Add a user to a team workspace or change a member's role (admin or owner)",
  description: 'The owner is set when the workspace is created and never changes here.',
  auth: 'key',
  limit: 'mutation',
  request: { params: MemberPath, body: MemberRoleBody },
  response: { status: 200, description: 'The member and role now in force', schema: MemberChange },
  errors: [403, 404, 409],
  handler: async (ctx, { params, body }) => {
    await ctx.state.services.account.changeMember(ctx.state.actor, params.owner, params.username, body.role);
    return { success: true as const, username: params.username, role: body.role };
  },
});

export const removeMember = defineRoute({
  method: 'DELETE',
  path: '/api/workspaces/:owner/members/:username',
  tag: 'Account',
  summary: 'Remove a member from a team workspace (admin or owner); keys issued for that member stop working',
  auth: 'key',
  limit: 'mutation',
  request: { params: MemberPath },
  response: { status: 200, description: 'Removed', schema: MemberChange },
  errors: [403, 404, 409],
  handler: async (ctx, { params }) => {
    await ctx.state.services.account.dropMember(ctx.state.actor, params.owner, params.username);
    return { success: true as const, username: params.username };
  },
});

export const accountRoutes = [
  accountSummary,
  storageUsage,
  userLookup,
  profileByQuery,
  follow,
  listMembers,
  setMemberRole,
  removeMember,
];
