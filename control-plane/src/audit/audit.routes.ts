import { defineRoute } from '../http/define-route.ts';
import { LOGIN_FAILED, NAMED_ACTIONS, UNRECORDED } from './audit-actions.ts';
import { AuditPage, AuditQuery } from './audit.schemas.ts';

const named = Object.entries(NAMED_ACTIONS)
  .map(([template, action]) => `\`${action}\` (${template})`)
  .join(', ');
const unrecorded = Object.entries(UNRECORDED)
  .map(([template, why]) => `${template}: ${why}`)
  .join('; ');

export const listAudit = defineRoute({
  method: 'GET',
  path: '/api/audit',
  tag: 'Audit',
  summary: "The workspace's audit log: changes and sign-ins, newest first (owner or admin)",
  description:
    "Owners and admins of the key's or session's workspace see that workspace's entries only; other roles: 403. " +
    'Recorded: every POST, PUT, PATCH and DELETE an API route answered for a key or a console session of this workspace, ' +
    'refused ones (4xx, 5xx) included, with its outcome; every sign-in of this workspace (password or OIDC), and each failed one of ' +
    `a known user in their personal workspace (\`${LOGIN_FAILED}\`; failed sign-ins of unknown users are the appliance's, ` +
    'in `vpctl audit export` only); the operator’s `vpctl` changes (users, workspaces, members, keys, hosts, credits) with actor and via `vpctl`. ' +
    `Named actions: ${named}; every other change is \`METHOD /api/route/template\`. ` +
    "resource: the route's path without /api/, up to its last parameter, filled in (`datasets/alice/shapes`); " +
    'a key created is `api-keys/{keyId}`, a trash item erased `trash/{type}/{id}` (or `trash/all`), a sign-in `users/{username}`. ' +
    'Not recorded: GET and HEAD requests; requests without a valid key or session, or a session’s without its X-CSRF-Token (the access log has them); ' +
    `and these, which change nothing or are a job's or a host's traffic: ${unrecorded}. ` +
    'Never recorded: a key, a token, a password or any other header, a request body, a query string. ' +
    'Entries are written within a second (named actions before their answer, and a read first writes what this ' +
    'replica has queued) and purged after AUDIT_RETENTION_DAYS (default 400). ' +
    'Filters combine; keyset pages (nextCursor) return every entry once.',
  auth: 'key',
  limit: 'default',
  request: { query: AuditQuery },
  response: { status: 200, description: 'A page of entries', schema: AuditPage },
  errors: [400, 403],
  handler: (ctx, { query }) => ctx.state.services.audit.list(ctx.state.actor, query),
});

export const auditRoutes = [listAudit];
