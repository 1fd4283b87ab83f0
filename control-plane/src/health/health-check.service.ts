import type { AppConfig } from '@vp/config';
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { databaseVersion } from '../db/database-health.ts';
import type { BlobStore } from '../storage/blob-store.ts';
import {
  agentVersionsCheck,
  clockCheck,
  diskCheck,
  hostsCheck,
  migrationsCheck,
  ownSigningSecret,
  replicasCheck,
  signingSecretCheck,
  storageCheck,
  type CheckResult,
} from './doctor-checks.ts';

export interface HealthCheckDeps {
  config: AppConfig;
  /** The process's blob store: the storage check probes the store requests use. */
  store: BlobStore;
  /** Where agents reach this control plane (the agent-version check's upgrade command). */
  baseUrl: string;
}

/**
 * `GET /api/health/checks`: the checks of `vpctl doctor`, run by the answering control plane on its own database
 * connection and blob store. Owners and admins of the key's workspace; the hosts and agent-version checks name only
 * that workspace's hosts and the appliance-wide pool's, never another workspace's.
 */
export class HealthCheckService {
  private readonly em: EntityManager;
  private readonly deps: HealthCheckDeps;

  constructor(em: EntityManager, deps: HealthCheckDeps) {
    this.em = em;
    this.deps = deps;
  }

  async checksFor(actor: Actor): Promise<CheckResult[]> {
    const { workspaceId } = requireRole(actor, actor.kind === 'key' ? actor.workspaceId : '', 'admin');
    const { config, store, baseUrl } = this.deps;
    let own: ReturnType<typeof ownSigningSecret> | undefined;
    const signingSecret = () =>
      settle('signing secret', async () => signingSecretCheck((own = ownSigningSecret(config))), READ_LOG);
    const database = await this.databaseCheck();
    const results: CheckResult[] = [database];
    if (database.status === 'OK') {
      results.push(
        await settle('migrations', () => migrationsCheck(this.em)),
        await settle('clock', () => clockCheck(this.em)),
        await signingSecret(),
        await settle('replicas', () => replicasCheck(this.em, own?.secret)),
        await storageCheck(config, store),
        await settle('hosts', () => hostsCheck(this.em, config.hostLostGraceSeconds, workspaceId)),
        await settle('agent versions', () => agentVersionsCheck(this.em, baseUrl, workspaceId)),
      );
    } else {
      results.push(await signingSecret(), await storageCheck(config, store));
    }
    results.push(await diskCheck(config.dataDir));
    return results;
  }

  /** The live connection's database, as `vpctl doctor` reports it (this process runs: no embedded-start warning). */
  private async databaseCheck(): Promise<CheckResult> {
    return settle('database', async () => ({
      status: 'OK',
      check: 'database',
      message: `${await databaseVersion(this.em)} answers`,
    }));
  }
}

const DATABASE_DOWN = 'check that PostgreSQL runs and accepts the control plane, and read its log';
const READ_LOG = "read the control plane's log for the cause";

/** A check that could not run (the database went away between two) is a FAIL saying why, never an error answer. */
async function settle(check: string, run: () => Promise<CheckResult>, fix = DATABASE_DOWN): Promise<CheckResult> {
  try {
    return await run();
  } catch (error) {
    return {
      status: 'FAIL',
      check,
      message: `could not run (${error instanceof Error ? error.message : String(error)})`,
      fix,
    };
  }
}
