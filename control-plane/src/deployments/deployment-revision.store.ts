// The deployment_revisions table's SQL: one inference server of a deployment, run by one service host job. State
// changes are revision-lifecycle.ts's alone (its guarded UPDATEs enforce the allowed moves).
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { query } from '../db/sql.ts';
import { announceDeploymentChange } from './deployment-changes.ts';
import type { DeploymentSize } from './deployment-sizes.ts';

export type RevisionState = 'starting' | 'live' | 'retired' | 'failed';

export interface RevisionRecord {
  id: string;
  deploymentId: string;
  number: number;
  modelId: string;
  exportId: string | null;
  cpu: number;
  memoryGi: number;
  jobId: string | null;
  serviceUrl: string | null;
  state: RevisionState;
}

/** The columns of a RevisionRecord, of the table under alias `r`. */
const COLUMNS = `r.id, r.deployment_id as "deploymentId", r.number, r.model_id as "modelId", r.export_id as "exportId", r.cpu, r.memory_gi as "memoryGi",
  r.job_id as "jobId", r.service_url as "serviceUrl", r.state`;

/** A token as its row keeps it: which key sealed it, and iv ‖ tag ‖ ciphertext (deployment-tokens.ts seals and opens it). */
export interface SealedToken {
  workspaceId: string;
  tokenKeyId: string;
  tokenSealed: Buffer;
}

/** The columns of a SealedToken, of the table under alias `r` and its deployment under alias `d`. */
const TOKEN_COLUMNS = `d.workspace_id as "workspaceId", r.token_key_id as "tokenKeyId", r.token_sealed as "tokenSealed"`;

/** A new starting revision, numbered after the deployment's last, with its own bearer token for its server (sealed). */
export async function insertRevision(
  em: EntityManager,
  deploymentId: string,
  modelId: string,
  size: DeploymentSize,
  exportId: string,
  { tokenKeyId, tokenSealed }: Omit<SealedToken, 'workspaceId'>,
): Promise<RevisionRecord> {
  const [row] = await query<RevisionRecord>(
    em,
    `insert into deployment_revisions as r (id, deployment_id, number, model_id, export_id, cpu, memory_gi, token_key_id, token_sealed)
     values (?, ?, (select coalesce(max(number), 0) + 1 from deployment_revisions where deployment_id = ?), ?, ?, ?, ?, ?, ?)
     returning ${COLUMNS}`,
    [newId(), deploymentId, deploymentId, modelId, exportId, size.cpu, size.memoryGi, tokenKeyId, tokenSealed],
  );
  return row;
}

/** Revisions whose token was sealed under another key than `keyId` (an earlier appliance secret's). */
export async function tokensUnderOtherKeys(
  em: EntityManager,
  keyId: string,
): Promise<Array<SealedToken & { id: string }>> {
  return query(
    em,
    `select r.id, ${TOKEN_COLUMNS} from deployment_revisions r join deployments d on d.id = r.deployment_id where r.token_key_id <> ?`,
    [keyId],
  );
}

export async function setSealedToken(
  em: EntityManager,
  id: string,
  sealed: Omit<SealedToken, 'workspaceId'>,
): Promise<void> {
  await query(em, 'update deployment_revisions set token_key_id = ?, token_sealed = ? where id = ?', [
    sealed.tokenKeyId,
    sealed.tokenSealed,
    id,
  ]);
}

/** A revision's sealed token (deployment-tokens.ts opens it). */
export async function sealedTokenOf(em: EntityManager, revisionId: string): Promise<SealedToken | undefined> {
  const [row] = await query<SealedToken>(
    em,
    `select ${TOKEN_COLUMNS} from deployment_revisions r join deployments d on d.id = r.deployment_id where r.id = ?`,
    [revisionId],
  );
  return row;
}

export async function revisionById(em: EntityManager, id: string): Promise<RevisionRecord | undefined> {
  const [row] = await query<RevisionRecord>(em, `select ${COLUMNS} from deployment_revisions r where id = ?`, [id]);
  return row;
}

export async function revisionOfJob(em: EntityManager, jobId: string): Promise<RevisionRecord | undefined> {
  const [row] = await query<RevisionRecord>(em, `select ${COLUMNS} from deployment_revisions r where job_id = ?`, [
    jobId,
  ]);
  return row;
}

/** The deployment's revisions in these states, newest first. */
export async function revisionsIn(
  em: EntityManager,
  deploymentId: string,
  states: RevisionState[],
): Promise<RevisionRecord[]> {
  return query<RevisionRecord>(
    em,
    `select ${COLUMNS} from deployment_revisions r where deployment_id = ? and state = any(?::text[]) order by number desc`,
    [deploymentId, `{${states.join(',')}}`],
  );
}

export async function setRevisionJob(em: EntityManager, id: string, jobId: string): Promise<void> {
  await query(em, 'update deployment_revisions set job_id = ? where id = ?', [jobId, id]);
}

/** Its server's URL, as reported when it (re)started: that server reads no camera yet. */
export async function setServiceUrl(em: EntityManager, id: string, url: string | null): Promise<void> {
  await query(em, 'update deployment_revisions set service_url = ?, camera_url = null where id = ?', [url, id]);
  await announceDeploymentChange(em);
}

/**
 * Starting revisions still waiting for their model's ONNX export (no job yet), with the export's state: exportFound
 * false when its row is gone, exportStatus null while it is queued or running (only final statuses are stored).
 */
export async function revisionsAwaitingExport(
  em: EntityManager,
): Promise<Array<RevisionRecord & { exportFound: boolean; exportStatus: string | null; exportError: string | null }>> {
  return query(
    em,
    `select ${COLUMNS}, e.id is not null as "exportFound", e.status as "exportStatus", e.error as "exportError"
     from deployment_revisions r left join model_exports e on e.id = r.export_id
     where r.state = 'starting' and r.job_id is null`,
  );
}

/**
 * Starting revisions whose server ran longer than `seconds` on its host without answering its health check (an agent
 * fails such a job itself; this catches one that never said).
 */
export async function revisionsPastStart(em: EntityManager, seconds: number): Promise<RevisionRecord[]> {
  return query<RevisionRecord>(
    em,
    `select ${COLUMNS} from deployment_revisions r join jobs j on j.id = r.job_id
     where r.state = 'starting' and j.status = 'running' and j.accepted_at < now() - make_interval(secs => ?)`,
    [seconds],
  );
}

/**
 * Live revisions still showing a URL whose job was restarted since it reported its server (its host was lost: requeued,
 * maybe assigned or accepted elsewhere already): they serve nothing until the new attempt reports its own.
 */
export async function liveRevisionsRestarted(em: EntityManager): Promise<RevisionRecord[]> {
  return query<RevisionRecord>(
    em,
    `select ${COLUMNS} from deployment_revisions r join jobs j on j.id = r.job_id
     where r.state = 'live' and r.service_url is not null and (j.status <> 'running' or j.accepted_at is null or j.accepted_at > r.live_at)`,
  );
}

/**
 * Jobs of retired revisions still serving (a replaced revision draining its last requests): those of one deployment,
 * or with `drainedSeconds`, every deployment's retired at least that long ago. Their cancel was not requested yet.
 */
export async function drainingJobs(
  em: EntityManager,
  scope: { deploymentId: string } | { drainedSeconds: number },
): Promise<string[]> {
  const rows = await query<{ id: string }>(
    em,
    `select j.id from deployment_revisions r join jobs j on j.id = r.job_id
     where r.state = 'retired' and j.status in ('queued', 'running') and not j.cancel_requested
       and ${'deploymentId' in scope ? 'r.deployment_id = ?' : 'r.retired_at < now() - make_interval(secs => ?)'}`,
    ['deploymentId' in scope ? scope.deploymentId : scope.drainedSeconds],
  );
  return rows.map((row) => row.id);
}

/** Whether a revision of the deployment still has a queued or running job (a server not stopped yet). */
export async function hasActiveJobs(em: EntityManager, deploymentId: string): Promise<boolean> {
  const rows = await query(
    em,
    `select 1 from deployment_revisions r join jobs j on j.id = r.job_id where r.deployment_id = ? and j.status in ('queued', 'running') limit 1`,
    [deploymentId],
  );
  return rows.length > 0;
}

/** A live server (its token sealed), with its deployment's camera. */
export interface LiveServer extends SealedToken {
  deploymentId: string;
  revisionId: string;
  number: number;
  serviceUrl: string;
  url: string | null;
  fps: number;
}

/**
 * The live server of a deployment, or 'untold': every live server whose camera differs from its deployment's (none
 * while a PATCH applies one).
 */
export function liveServers(em: EntityManager, scope: { deploymentId: string } | 'untold'): Promise<LiveServer[]> {
  return query<LiveServer>(
    em,
    `select d.id as "deploymentId", r.id as "revisionId", r.number, r.service_url as "serviceUrl", ${TOKEN_COLUMNS}, d.camera_url as url, d.camera_fps as fps
     from deployments d join deployment_revisions r on r.deployment_id = d.id and r.state = 'live' and r.service_url is not null
     where ${scope === 'untold' ? 'r.camera_url is distinct from d.camera_url and not d.camera_applying' : 'd.id = ?'}`,
    scope === 'untold' ? [] : [scope.deploymentId],
  );
}

/** The camera the revision's server reads now, unless the server was replaced since (another service URL). */
export async function setServerCamera(
  em: EntityManager,
  revisionId: string,
  serviceUrl: string,
  url: string | null,
): Promise<void> {
  await query(em, 'update deployment_revisions set camera_url = ? where id = ? and service_url = ?', [
    url,
    revisionId,
    serviceUrl,
  ]);
}
