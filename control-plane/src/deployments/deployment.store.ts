// The deployments table's SQL, but for its status: status changes are deployment-lifecycle.ts's alone (its guarded
// UPDATEs enforce the allowed moves and log each change).
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';
import { announceDeploymentChange } from './deployment-changes.ts';
import type { DeploymentStatus } from './deployment.schemas.ts';
import type { DeploymentSize } from './deployment-sizes.ts';

/** A deployment with what its views show of its model, project and workspace. */
export interface DeploymentRecord {
  id: string;
  workspaceId: string;
  owner: string;
  modelId: string;
  modelSlug: string;
  projectSlug: string;
  projectId: string;
  projectPublic: boolean;
  task: string;
  slug: string;
  name: string;
  region: string;
  cpu: number;
  memoryGi: number;
  metadata: Record<string, unknown>;
  status: DeploymentStatus;
  statusMessage: string | null;
  desired: 'running' | 'stopped';
  scaledToZero: boolean;
  apiKeyId: string | null;
  cameraUrl: string | null;
  cameraFps: number;
  cameraApplying: boolean;
  deployedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const SELECT = `
  select d.id, d.workspace_id as "workspaceId", w.handle as owner, d.model_id as "modelId", m.slug as "modelSlug",
         p.slug as "projectSlug", p.id as "projectId", p.visibility = 'public' as "projectPublic", m.task, d.slug, d.name, d.region,
         d.cpu, d.memory_gi as "memoryGi", d.metadata, d.status, d.status_message as "statusMessage", d.desired,
         d.scaled_to_zero as "scaledToZero", d.api_key_id as "apiKeyId", d.camera_url as "cameraUrl",
         d.camera_fps as "cameraFps", d.camera_applying as "cameraApplying", d.deployed_at as "deployedAt", d.created_at as "createdAt", d.updated_at as "updatedAt"
  from deployments d join workspaces w on w.id = d.workspace_id join models m on m.id = d.model_id join projects p on p.id = m.project_id`;

export interface NewDeployment extends DeploymentSize {
  workspaceId: string;
  modelId: string;
  slug: string;
  name: string;
  region: string;
}

export async function insertDeployment(em: EntityManager, created: NewDeployment): Promise<string> {
  const id = newId();
  await query(
    em,
    `insert into deployments (id, workspace_id, model_id, slug, name, region, cpu, memory_gi) values (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      id,
      created.workspaceId,
      created.modelId,
      created.slug,
      created.name,
      created.region,
      created.cpu,
      created.memoryGi,
    ],
  );
  return id;
}

export async function findDeployment(
  em: EntityManager,
  owner: string,
  slug: string,
): Promise<DeploymentRecord | undefined> {
  const [row] = await query<DeploymentRecord>(em, `${SELECT} where w.handle = ? and d.slug = ?`, [owner, slug]);
  return row;
}

export async function deploymentById(
  em: EntityManager,
  id: string,
  lock = false,
): Promise<DeploymentRecord | undefined> {
  const [row] = await query<DeploymentRecord>(em, `${SELECT} where d.id = ?${lock ? ' for update of d' : ''}`, [id]);
  return row;
}

export interface DeploymentFilter {
  workspaceId: string;
  status?: DeploymentStatus;
  modelId?: string;
  limit: number;
}

export async function listDeployments(
  em: EntityManager,
  filter: DeploymentFilter,
): Promise<{ rows: DeploymentRecord[]; total: number }> {
  const where = `where d.workspace_id = ? and (?::varchar is null or d.status = ?) and (?::varchar is null or d.model_id = ?)`;
  const params = [
    filter.workspaceId,
    filter.status ?? null,
    filter.status ?? null,
    filter.modelId ?? null,
    filter.modelId ?? null,
  ];
  const rows = await query<DeploymentRecord>(em, `${SELECT} ${where} order by d.created_at desc, d.id desc limit ?`, [
    ...params,
    filter.limit,
  ]);
  const [count] = await query<{ total: number }>(
    em,
    `select count(*)::int as total from deployments d ${where}`,
    params,
  );
  return { rows, total: count.total };
}

export async function slugTaken(em: EntityManager, workspaceId: string, slug: string): Promise<boolean> {
  const rows = await query(em, 'select 1 from deployments where workspace_id = ? and slug = ?', [workspaceId, slug]);
  return rows.length > 0;
}

/** Any of the deployment's columns by name but its status (the rollout's and the service's writes); bumps updated_at. */
export async function updateDeployment(
  em: EntityManager,
  id: string,
  changes: Partial<DeploymentColumns>,
): Promise<void> {
  const entries = Object.entries(changes);
  if (entries.length === 0) return;
  const sets = entries.map(([column]) => `${column} = ?${column === 'metadata' ? '::jsonb' : ''}`).join(', ');
  await query(em, `update deployments set ${sets}, updated_at = now() where id = ?`, [
    ...entries.map(([column, value]) => (column === 'metadata' ? JSON.stringify(value) : value)),
    id,
  ]);
  if ('scaled_to_zero' in changes) await announceDeploymentChange(em);
}

/** The writable columns, as updateDeployment takes them (not status: deployment-lifecycle.ts changes it). */
export interface DeploymentColumns {
  model_id: string;
  slug: string;
  name: string;
  cpu: number;
  memory_gi: number;
  metadata: Record<string, unknown>;
  status_message: string | null;
  desired: 'running' | 'stopped';
  scaled_to_zero: boolean;
  api_key_id: string | null;
  camera_url: string | null;
  camera_fps: number;
  camera_applying: boolean;
  deployed_at: Date | null;
}

/** Deployments of these models, or with a revision of them still starting (a pending replacement). */
export async function deploymentsUsingModels(em: EntityManager, modelIds: string[]): Promise<string[]> {
  if (modelIds.length === 0) return [];
  const rows = await query<{ id: string }>(
    em,
    `select d.id from deployments d where d.model_id = any(?::text[])
     union select r.deployment_id from deployment_revisions r where r.model_id = any(?::text[]) and r.state = 'starting'`,
    [pgArray(modelIds), pgArray(modelIds)],
  );
  return rows.map((row) => row.id);
}

export async function deleteDeploymentRows(em: EntityManager, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await query(em, 'delete from deployments where id = any(?::text[])', [pgArray(ids)]);
  await announceDeploymentChange(em);
}

/** Default-size deployments serving with no request for `idleSeconds` (since their last request or their revision going live). */
export async function idleDeployments(em: EntityManager, idleSeconds: number): Promise<string[]> {
  const rows = await query<{ id: string }>(
    em,
    `select d.id from deployments d join deployment_revisions r on r.deployment_id = d.id and r.state = 'live'
     where d.status = 'ready' and d.desired = 'running' and not d.scaled_to_zero and d.cpu = 1 and d.memory_gi = 2
       and greatest(d.last_request_at, r.live_at) < now() - make_interval(secs => ?)`,
    [idleSeconds],
  );
  return rows.map((row) => row.id);
}

/** What the router needs of a deployment to reach its live server (the revision's columns null: no live revision). */
export interface UpstreamRow {
  workspace_id: string;
  status: string;
  status_message: string | null;
  scaled_to_zero: boolean;
  revision_id: string | null;
  service_url: string | null;
  token_key_id: string | null;
  token_sealed: Buffer | null;
}

export async function upstreamOf(em: EntityManager, deploymentId: string): Promise<UpstreamRow | undefined> {
  const [row] = await query<UpstreamRow>(
    em,
    `select d.workspace_id, d.status, d.status_message, d.scaled_to_zero, r.id as revision_id, r.service_url, r.token_key_id, r.token_sealed
         from deployments d left join deployment_revisions r on r.deployment_id = d.id and r.state = 'live'
         where d.id = ?`,
    [deploymentId],
  );
  return row;
}

export async function touchDeployments(em: EntityManager, ids: string[]): Promise<void> {
  if (ids.length > 0)
    await query(em, 'update deployments set last_request_at = now() where id = any(?::text[])', [pgArray(ids)]);
}

/** Deployments by status, every workspace (the metrics). */
export function deploymentStatusCounts(em: EntityManager): Promise<Array<{ status: string; n: number }>> {
  return query(em, 'select status, count(*)::int as n from deployments group by status');
}
