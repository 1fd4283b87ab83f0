// `vpctl doctor`: checks a running install; one line per check.
import type { AppConfig } from '@vp/config';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { databaseVersion } from '../db/database-health.ts';
import { openDatabase } from '../server.ts';
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

/**
 * Runs every check and returns their results in order. The checks that need the database are left out when it
 * cannot be reached (that one FAIL says what to do).
 */
export async function runDoctor(config: AppConfig, log: Logger): Promise<CheckResult[]> {
  const own = ownSigningSecret(config);
  const database = await reachDatabase(config, log);
  const results: CheckResult[] = [database.result];
  if (database.opened) {
    const { orm, embedded } = database.opened;
    try {
      const em = orm.em.fork() as EntityManager;
      results.push(
        await migrationsCheck(em),
        await clockCheck(em),
        signingSecretCheck(own),
        await replicasCheck(em, own.secret),
        await storageCheck(config),
      );
      results.push(
        await hostsCheck(em, config.hostLostGraceSeconds),
        await agentVersionsCheck(em, config.publicBaseUrl),
      );
    } finally {
      await orm.close();
      await embedded?.stop();
    }
  } else {
    results.push(signingSecretCheck(own), await storageCheck(config));
  }
  results.push(await diskCheck(config.dataDir));
  return results;
}

/** The database as it is (never migrated), and whether it answers; with the embedded one, whether the appliance runs. */
async function reachDatabase(
  config: AppConfig,
  log: Logger,
): Promise<{ result: CheckResult; opened?: Awaited<ReturnType<typeof openDatabase>> }> {
  let opened: Awaited<ReturnType<typeof openDatabase>> | undefined;
  try {
    opened = await openDatabase(config, log, { migrations: 'leave' });
    const version = await databaseVersion(opened.orm.em.fork() as EntityManager);
    const result: CheckResult = opened.embedded?.startedHere
      ? {
          status: 'WARN',
          check: 'database',
          message: `${version}; the appliance is not running (its embedded PostgreSQL was started for this check)`,
          fix: 'start the appliance',
        }
      : { status: 'OK', check: 'database', message: `${version} answers` };
    return { result, opened };
  } catch (error) {
    await opened?.orm.close();
    await opened?.embedded?.stop();
    return {
      result: {
        status: 'FAIL',
        check: 'database',
        message: `cannot reach it (${error instanceof Error ? error.message : String(error)})`,
        fix: config.databaseUrl
          ? 'check DATABASE_URL, and that PostgreSQL runs and accepts this machine'
          : `check DATA_DIR (${config.dataDir}) and the messages above`,
      },
    };
  }
}

/** `OK    database        PostgreSQL 16.4 answers`, and for WARN and FAIL the fix after an arrow. */
export function formatCheck(result: CheckResult): string {
  return `${result.status.padEnd(4)}  ${result.check.padEnd(14)}  ${result.message}${result.fix ? ` -> ${result.fix}` : ''}`;
}
