import { AGENT_ROUTES } from '@vp/protocol';
import { defineRoute } from '../http/define-route.ts';
import {
  EnrollRequest,
  EnrollResponse,
  HostCreate,
  HostDisconnected,
  HostEnrollment,
  HostList,
  HostPath,
} from './host.schemas.ts';

const ADMIN_ONLY =
  'Workspace owner or admin keys only (other roles: 403); only the private hosts of the key’s workspace are reachable (others: 404).';

export const listHosts = defineRoute({
  method: 'GET',
  path: '/api/hosts',
  tag: 'Hosts',
  summary: "The workspace's private GPU hosts, then the pool hosts it can use",
  description: `${ADMIN_ONLY} The appliance-wide pool's hosts follow the workspace's own, marked \`pool: true\`: read-only here (rotate and disconnect answer 404 for them; the operator manages them with vpctl), their runningJobs only this workspace's. Name, state (enrolling, disconnected, connected), last heartbeat, hardware summary, the ids of the jobs it runs now (read them at \`/api/jobs/{id}\`) and creation date. Worker keys are never listed.`,
  auth: 'key',
  limit: 'default',
  response: { status: 200, description: 'Hosts by name', schema: HostList },
  errors: [403],
  handler: async (ctx) => {
    const hosts = await ctx.state.services.hosts.listForActor(ctx.state.actor);
    return { hosts, total: hosts.length };
  },
});

export const connectHost = defineRoute({
  method: 'POST',
  path: '/api/hosts',
  tag: 'Hosts',
  summary: "Connect a host private to the key's workspace and get its one-time enrollment token",
  description:
    `${ADMIN_ONLY} The token is shown only in this response, is single use and expires in 10 minutes; run \`command\` on the host ` +
    '(`vp-worker enroll`), which exchanges it for the worker key through `POST /api/hosts/enroll`. A name already used in the workspace is 409. ' +
    'region (optional, one of the 42 deployment regions): the host runs only deployments of that region; without it, deployments of every region.',
  auth: 'key',
  limit: 'default',
  request: { body: HostCreate },
  response: { status: 201, description: 'Created, waiting for enrollment', schema: HostEnrollment },
  errors: [403, 409],
  handler: async (ctx, { body }) => {
    ctx.state.audit = { resource: `hosts/${encodeURIComponent(body.name)}` };
    return ctx.state.services.hosts.connectForActor(ctx.state.actor, body.name, body.region);
  },
});

export const enrollHost = defineRoute({
  method: 'POST',
  path: AGENT_ROUTES.enroll,
  tag: 'Hosts',
  summary: "Exchange an enrollment token for the host's worker key (called by vp-worker enroll)",
  description:
    'No API key: the token is the credential. The worker key is returned only in this response and stored hashed; it opens the worker ' +
    'socket and is refused by every REST endpoint (401), as API keys are refused on the socket. Enrolling revokes any older key of the ' +
    'host (rotation). An unknown token is 401 Invalid enrollment token; a used or expired one is 410.',
  auth: 'public',
  limit: 'default',
  request: { body: EnrollRequest },
  response: { status: 200, description: 'The worker key', schema: EnrollResponse },
  errors: [401, 410],
  handler: async (ctx, { body }) => {
    const enrolled = await ctx.state.services.hosts.enroll(body.token, body.hostname);
    // The host's workspace (null: the pool), whose owners see it enrolled; the token is the credential, nobody acts.
    ctx.state.audit = { workspaceId: enrolled.workspaceId, resource: `hosts/${encodeURIComponent(enrolled.name)}` };
    return enrolled;
  },
});

export const rotateHostKey = defineRoute({
  method: 'POST',
  path: '/api/hosts/:name/rotate',
  tag: 'Hosts',
  summary: 'Issue a new enrollment token for a host, to rotate its worker key',
  description:
    `${ADMIN_ONLY} Earlier unused tokens stop working. The current worker key keeps working until the new token is enrolled, ` +
    'which revokes it, so the host runs on without a gap.',
  auth: 'key',
  limit: 'default',
  request: { params: HostPath },
  response: { status: 200, description: 'The new one-time token', schema: HostEnrollment },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.hosts.rotateForActor(ctx.state.actor, params.name),
});

export const disconnectHost = defineRoute({
  method: 'DELETE',
  path: '/api/hosts/:name',
  tag: 'Hosts',
  summary: 'Disconnect a host: its worker key is revoked at once and the host removed',
  description: `${ADMIN_ONLY} To bring the machine back, connect it again and enroll a new token.`,
  auth: 'key',
  limit: 'default',
  request: { params: HostPath },
  response: { status: 200, description: 'Disconnected', schema: HostDisconnected },
  errors: [403, 404],
  handler: async (ctx, { params }) => {
    const host = await ctx.state.services.hosts.disconnectForActor(ctx.state.actor, params.name);
    return { name: host.name, disconnected: true as const };
  },
});

export const hostRoutes = [listHosts, connectHost, enrollHost, rotateHostKey, disconnectHost];
