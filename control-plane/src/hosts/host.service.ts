import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { Workspace } from '../account/workspace.entity.ts';
import { requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { DEPLOYMENT_REGIONS } from '../deployments/deployment-sizes.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { runningJobsOfHosts } from '../jobs/job.store.ts';
import { lockHostRow } from '../workers/host.store.ts';
import { Conflict, HttpError, Invalid, NotFound, Unauthorized } from '../http/errors.ts';
import { agentOutdated } from './agent-version.ts';
import { EnrollmentToken } from './enrollment-token.entity.ts';
import { hardwareSummary } from './hardware-summary.ts';
import { hostGpus, hostLoad } from './host-load.ts';
import { Host } from './host.entity.ts';
import { HOST_NAME_PATTERN, type EnrollResponse, type HostEnrollment, type HostListItem } from './host.schemas.ts';
import {
  ENROLLMENT_TOKEN_PATTERN,
  generateEnrollmentToken,
  generateWorkerKey,
  hashSecret,
  workerKeyPrefix,
} from './worker-key-format.ts';
import { WorkerKey } from './worker-key.entity.ts';
import { announceWorkerKeyChange } from './worker-key-lookup.ts';

export const ENROLLMENT_TTL_MS = 10 * 60_000;

export function hostListItem(host: Host, runningJobs: string[]): z.input<typeof HostListItem> {
  // The load of a host that is not connected now is stale: not shown.
  const load = host.state === 'connected' ? (host.load ?? null) : null;
  return {
    name: host.name,
    pool: host.workspace === null,
    state: host.state,
    runningJobs,
    lastHeartbeatAt: host.lastHeartbeatAt?.toISOString() ?? null,
    hardware: hardwareSummary(host.hardware ?? null),
    agentVersion: host.agentVersion ?? null,
    agentOutdated: agentOutdated(host.agentVersion),
    exporters: host.exporters,
    // Unset on a host created by this process and not read back since: the column's default.
    missingExporters: host.missingExporters ?? {},
    region: host.region ?? null,
    gpus: hostGpus(host.hardware ?? null, load),
    load: hostLoad(host.hardware ?? null, load),
    services: host.services ?? [],
    createdAt: host.createdAt.toISOString(),
  };
}

/**
 * Hosts and their credentials. Connecting (or rotating) issues a one-time enrollment token; the
 * agent exchanges it for the host's worker key. Both secrets are returned once and stored hashed.
 *
 * Rotation issues a new token and leaves the current key working, so the host keeps running until
 * the new token is enrolled; that enrollment revokes every older key of the host. Disconnecting
 * revokes at once. The vpctl methods take a workspace handle (none = appliance-wide pool); the
 * *ForActor methods serve the API: owner or admin, private hosts of the key's workspace only.
 */
export class HostService {
  private readonly em: EntityManager;
  private readonly publicBaseUrl: string;
  private readonly lifecycle: JobLifecycle;

  constructor(em: EntityManager, publicBaseUrl: string, lifecycle: JobLifecycle) {
    this.em = em;
    this.publicBaseUrl = publicBaseUrl;
    this.lifecycle = lifecycle;
  }

  /** `region`: the deployment region the host serves (vpctl's --region); absent: every region. */
  async connect(name: string, workspaceHandle?: string, region?: string): Promise<z.input<typeof HostEnrollment>> {
    const workspace = workspaceHandle ? await this.findWorkspace(workspaceHandle) : null;
    return this.create(
      name,
      workspace,
      region,
      `vpctl hosts rotate ${name}${workspaceHandle ? ` --workspace ${workspaceHandle}` : ''}`,
    );
  }

  async connectForActor(actor: Actor, name: string, region?: string): Promise<z.input<typeof HostEnrollment>> {
    return this.create(
      name,
      this.em.getReference(Workspace, this.adminWorkspace(actor)),
      region,
      `POST /api/hosts/${name}/rotate`,
    );
  }

  async listAll(workspaceHandle?: string): Promise<Host[]> {
    const where = workspaceHandle ? { workspace: await this.findWorkspace(workspaceHandle) } : {};
    return this.em.find(Host, where, { populate: ['workspace'], orderBy: { name: 'asc', createdAt: 'asc' } });
  }

  /** The workspace's private hosts, then the appliance-wide pool's (read-only here: the operator manages them), each with only this workspace's jobs. */
  async listForActor(actor: Actor): Promise<Array<z.input<typeof HostListItem>>> {
    const workspaceId = this.adminWorkspace(actor);
    const hosts = await this.em.find(
      Host,
      { $or: [{ workspace: workspaceId }, { workspace: null }] },
      { orderBy: { name: 'asc', createdAt: 'asc' } },
    );
    const running = await this.runningJobIds(hosts, workspaceId);
    const items = hosts.map((host) => hostListItem(host, running.get(host.id) ?? []));
    return [...items.filter((item) => !item.pool), ...items.filter((item) => item.pool)];
  }

  /** The ids of the jobs each host runs now, oldest first; with `workspaceId`, only that workspace's (a pool host runs everyone's). */
  async runningJobIds(hosts: Host[], workspaceId?: string): Promise<Map<string, string[]>> {
    const rows = await runningJobsOfHosts(
      this.em,
      hosts.map((host) => host.id),
      workspaceId ?? null,
    );
    const byHost = new Map<string, string[]>();
    for (const row of rows) byHost.set(row.host_id, [...(byHost.get(row.host_id) ?? []), row.id]);
    return byHost;
  }

  /** Whatever the state of its agent; a disconnected host was removed, so the answer says to connect it again. */
  /** Also returns the host's workspace (null: the pool), for the audit log. */
  async rotate(
    name: string,
    workspaceHandle?: string,
  ): Promise<z.input<typeof HostEnrollment> & { workspace: string | null }> {
    const again = `vpctl hosts connect ${name}${workspaceHandle ? ` --workspace ${workspaceHandle}` : ' [--workspace W]'}`;
    const host = await this.findForOperator(
      name,
      workspaceHandle,
      `: disconnecting removes a host; to enroll the machine again, connect it again (${again})`,
    );
    return { ...(await this.replaceToken(host)), workspace: host.workspace?.handle ?? null };
  }

  async rotateForActor(actor: Actor, name: string): Promise<z.input<typeof HostEnrollment>> {
    return this.replaceToken(await this.findInWorkspace(actor, name));
  }

  async disconnect(name: string, workspaceHandle?: string): Promise<Host> {
    return this.remove(await this.findForOperator(name, workspaceHandle));
  }

  async disconnectForActor(actor: Actor, name: string): Promise<Host> {
    return this.remove(await this.findInWorkspace(actor, name));
  }

  /**
   * Exchanges an enrollment token for the host's worker key. Unknown token: 401; used or expired:
   * 410. The token row is locked so two concurrent exchanges cannot both succeed. Also returns the host's workspace
   * (null: the pool) for the audit log; the route's schema leaves it out of the answer.
   */
  async enroll(
    token: string,
    hostname?: string,
  ): Promise<z.input<typeof EnrollResponse> & { workspaceId: string | null }> {
    if (!ENROLLMENT_TOKEN_PATTERN.test(token)) throw Unauthorized('Invalid enrollment token');
    const workerKey = generateWorkerKey();
    const { host, revoked } = await this.em.transactional(async (em) => {
      const record = await em.findOne(
        EnrollmentToken,
        { tokenHash: hashSecret(token) },
        { populate: ['host'], lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!record) throw Unauthorized('Invalid enrollment token');
      if (record.usedAt) throw new HttpError(410, 'Enrollment token already used');
      if (record.expiresAt.getTime() <= Date.now()) throw new HttpError(410, 'Enrollment token expired');
      record.usedAt = new Date();
      const host = record.host;
      const revoked = await em.nativeDelete(WorkerKey, { host });
      em.create(WorkerKey, { host, keyHash: hashSecret(workerKey), prefix: workerKeyPrefix(workerKey) });
      if (host.state === 'enrolling') host.state = 'disconnected';
      if (hostname) host.hostname = hostname;
      return { host, revoked };
    });
    if (revoked > 0) await announceWorkerKeyChange(this.em, host.id);
    return { hostId: host.id, name: host.name, workerKey, workspaceId: host.workspace?.id ?? null };
  }

  /** `rotate`: how the caller gets a new token for an existing host, named when the name is taken. */
  private async create(
    name: string,
    workspace: Workspace | null,
    region: string | undefined,
    rotate: string,
  ): Promise<z.input<typeof HostEnrollment>> {
    if (!HOST_NAME_PATTERN.test(name))
      throw Invalid('name: must be 1-63 lowercase letters, digits or hyphens, not starting or ending with a hyphen');
    if (region !== undefined && !(DEPLOYMENT_REGIONS as readonly string[]).includes(region))
      throw Invalid(`region: must be one of the 42 deployment regions, not "${region}"`);
    if (await this.em.count(Host, { workspace, name }))
      throw Conflict(`A host named "${name}" already exists; to enroll it again, get a new token with ${rotate}`);
    const host = this.em.create(Host, {
      workspace,
      name,
      state: 'enrolling',
      hostname: null,
      lastHeartbeatAt: null,
      hardware: null,
      region: region ?? null,
    });
    return this.issueToken(host);
  }

  /** Rotation: earlier unused tokens stop working; the current key stays valid until the new token is enrolled. */
  private async replaceToken(host: Host): Promise<z.input<typeof HostEnrollment>> {
    await this.em.nativeDelete(EnrollmentToken, { host, usedAt: null });
    return this.issueToken(host);
  }

  private async issueToken(host: Host): Promise<z.input<typeof HostEnrollment>> {
    const token = generateEnrollmentToken();
    const expiresAt = new Date(Date.now() + ENROLLMENT_TTL_MS);
    this.em.create(EnrollmentToken, { host, tokenHash: hashSecret(token), expiresAt, usedAt: null });
    await this.em.flush();
    return {
      host: host.name,
      enrollmentToken: token,
      expiresAt: expiresAt.toISOString(),
      command: `vp-worker enroll --server ${this.publicBaseUrl} --token ${token}`,
    };
  }

  /** Removes the host with its keys and tokens (foreign keys cascade) and tells every replica's socket layer. */
  private async remove(host: Host): Promise<Host> {
    await this.em.transactional(async (em) => {
      // The host row first, as a session's writes take it (then its jobs): never the other way round, so no deadlock.
      await lockHostRow(em, host.id);
      // Its jobs end as cancelled now; closing the socket (below, through the key's revocation) makes the agent stop them.
      await this.lifecycle.cancelOnHost(em, host.id);
      await em.nativeDelete(Host, { id: host.id });
    });
    await announceWorkerKeyChange(this.em, host.id);
    return host;
  }

  /** Without a workspace the name must be unambiguous across the pool and every workspace; `missing` ends the 404's message. */
  private async findForOperator(name: string, workspaceHandle?: string, missing = ''): Promise<Host> {
    const where = workspaceHandle ? { name, workspace: await this.findWorkspace(workspaceHandle) } : { name };
    const matches = await this.em.find(Host, where, { populate: ['workspace'] });
    if (matches.length === 0) throw NotFound(`Host "${name}" not found${missing}`);
    if (matches.length > 1) throw Conflict(`${matches.length} hosts are named "${name}"; name the workspace too`);
    return matches[0];
  }

  private async findInWorkspace(actor: Actor, name: string): Promise<Host> {
    const host = await this.em.findOne(Host, { name, workspace: this.adminWorkspace(actor) });
    if (!host) throw NotFound(`Host "${name}" not found`);
    return host;
  }

  /** The key's workspace, when the key carries owner or admin role there. */
  private adminWorkspace(actor: Actor): string {
    return requireRole(actor, actor.kind === 'key' ? actor.workspaceId : '', 'admin').workspaceId;
  }

  private async findWorkspace(handle: string): Promise<Workspace> {
    const workspace = await this.em.findOne(Workspace, { handle });
    if (!workspace) throw NotFound(`Workspace "${handle}" not found`);
    return workspace;
  }
}
