// One chaos run: an appliance started fresh, then rounds of random faults while the workload runs, each round healed
// and checked; at the end everything is given the settle time and checked again, leftovers included. Seeded: the
// seed and the number of rounds replay the same schedule of faults and operations.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '../helpers/random.ts';
import { ChaosAppliance } from './appliance.ts';
import { describe, inject, planFaults } from './faults.ts';
import { Invariants } from './invariants.ts';
import { OPERATIONS, Workload } from './workload.ts';

export interface ChaosOptions {
  seed: number;
  rounds: number;
  /** Worker agents (two or three). */
  agents?: number;
  /** How long each round's faults and operations are spread over. */
  roundMs?: number;
  /** How long jobs get to end after the last round. */
  settleMs?: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  rounds: number;
  /** What was found wrong, by round ('settle' for the end). */
  violations: Array<{ round: number | 'settle'; what: string }>;
  /** Faults injected and operations started, in all. */
  faults: number;
  operations: number;
  /** How the run ended the jobs it made: status → count. */
  jobs: Record<string, number>;
  /** Why the failed ones failed (a fault may fail a job; it must say why). */
  failures: Array<{ kind: string; error: string | null }>;
}

const OPERATIONS_PER_ROUND = 4;

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const roundMs = options.roundMs ?? 8000;
  const random = seededRandom(options.seed);
  const report: ChaosReport = {
    seed: options.seed,
    rounds: options.rounds,
    violations: [],
    faults: 0,
    operations: 0,
    jobs: {},
    failures: [],
  };
  const dir = mkdtempSync(join(tmpdir(), 'vp-chaos-'));
  log(`chaos seed ${options.seed}: starting the appliance in ${dir}`);
  const appliance = await ChaosAppliance.start(dir, options.agents ?? 3);
  // Interrupted (Ctrl-C, a test runner's timeout): nothing of the appliance is left running.
  const stopNow = () => void appliance.stop().finally(() => process.exit(130));
  process.once('SIGINT', stopNow).once('SIGTERM', stopNow);
  try {
    const workload = new Workload(appliance);
    await workload.prepare();
    const invariants = new Invariants(appliance, workload.ledger);
    let n = 0;
    for (let round = 1; round <= options.rounds; round++) {
      const faults = planFaults(random, roundMs);
      const operations = Array.from({ length: 1 + random.int(OPERATIONS_PER_ROUND) }, () => ({
        operation: random.pick(OPERATIONS),
        at: random.int(roundMs),
        n: ++n,
        variant: random.int(1000),
      }));
      log(`round ${round}: ${faults.map(describe).join(', ')}; ${operations.map((o) => o.operation).join(', ')}`);
      report.faults += faults.length;
      report.operations += operations.length;
      await Promise.all([
        ...faults.map(async (fault) => {
          await sleep(fault.at);
          // A part that does not come back shows in the checks (every replica answers, every job ends).
          await inject(appliance, fault).catch((error: Error) =>
            log(`round ${round}: ${describe(fault)}: ${error.message}`),
          );
        }),
        ...operations.map(async ({ operation, at, n, variant }) => {
          await sleep(at);
          await workload.run(operation, n, variant);
        }),
      ]);
      const healed = await appliance.heal().then(
        () => [],
        (error: Error) => [`the appliance did not come back: ${error.message}`],
      );
      for (const what of [...healed, ...(await checked(() => invariants.afterRound()))]) {
        report.violations.push({ round, what });
        log(`round ${round}: VIOLATION ${what}`);
      }
      if (report.violations.length > 0) break;
    }
    if (report.violations.length === 0) {
      log('settling');
      for (const what of await settle(() => invariants.settled(), options.settleMs ?? 300_000)) {
        report.violations.push({ round: 'settle', what });
        log(`settle: VIOLATION ${what}`);
      }
    }
    for (const row of (
      await appliance.db.query<{ status: string; count: number }>(
        'select status, count(*)::int as count from jobs group by status',
      )
    ).rows)
      report.jobs[row.status] = row.count;
    report.failures = (
      await appliance.db.query<{ kind: string; error: string | null }>(
        `select kind, error from jobs where status = 'failed' order by created_at`,
      )
    ).rows;
    if (report.violations.length > 0)
      log(`replay: npm run chaos -- --seed ${options.seed} --rounds ${options.rounds}\n${outputs(appliance)}`);
    return report;
  } finally {
    process.off('SIGINT', stopNow).off('SIGTERM', stopNow);
    await appliance.stop();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The checks read the database just after it may have restarted: a read that fails is tried again. */
async function checked(check: () => Promise<string[]>): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await check();
    } catch (error) {
      if (attempt === 5) return [`the checks could not run: ${(error as Error).message}`];
      await sleep(2000);
    }
  }
}

/** The settle-time checks, again until they pass or the settle time is over; what the last ones found. */
async function settle(check: () => Promise<string[]>, settleMs: number): Promise<string[]> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const found = await checked(check);
    if (found.length === 0 || Date.now() > deadline) return found;
    await sleep(5000);
  }
}

function outputs(appliance: ChaosAppliance): string {
  return [...appliance.replicas, ...appliance.agents]
    .map(({ name, process }) => `--- ${name}\n${process.output().slice(-4000)}`)
    .join('\n');
}
