// The training run state machine under random sequences of what happens to runs (a trainer starts, fails, completes
// or repeats its completion, is cancelled, goes silent and is swept, its training job ends) against the real database.
// After every step: each run's status is what the lifecycle's rules give (so the moves behave as before), every status
// change is one RUN_TRANSITIONS lists, a repeat keeps completed_at, and a run a move left alone is unchanged, to the byte.
import type { EntityManager } from '@mikro-orm/postgresql';
import t, { type Test } from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { enqueueJob } from '../control-plane/src/jobs/job-queue.ts';
import { expireSilentRuns } from '../control-plane/src/training/run-expiry.ts';
import {
  endJobRuns,
  endReportedRun,
  endRun,
  RUN_TRANSITIONS,
  type RunOutcome,
} from '../control-plane/src/training/run-status.ts';
import type { RunStatus } from '../control-plane/src/training/training-run.entity.ts';
import { requestOwnComputeCancel } from '../control-plane/src/training/training-run.store.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

const STEPS = 150;
const SEEDS = [1, 2, 3];
/** What the test's sweeps and cancels measure silence against; the server's own sweep never fires (its limits are huge). */
const SILENCE_SECONDS = 3600;
const CANCEL_GRACE_SECONDS = 1800;
const OUTCOMES: readonly RunOutcome[] = ['completed', 'failed', 'cancelled'];

const world = await startWorld(t, {
  TRAINING_RUN_SILENCE_SECONDS: '10000000',
  TRAINING_CANCEL_GRACE_SECONDS: '10000000',
  RATE_LIMIT_METRICS: '100000',
});
const { server, alice } = world;
const em = () => server.orm.em.fork() as EntityManager;
const report = (body: Record<string, unknown>) =>
  call<{ modelId: string; runId: number }>(server, 'POST', '/api/webhooks/training/metrics', { key: alice, body });
const [{ workspace_id: workspaceId }] = await query<{ workspace_id: string }>(
  em(),
  `select id as workspace_id from workspaces where handle = 'alice'`,
);

interface RunRow {
  id: number;
  model_id: string;
  job_id: string | null;
  status: RunStatus;
  cancel_requested: boolean;
  completed_at: string | null;
  /** Silent past the test's limits: the sweep ends it. */
  silent: boolean;
  /** Silent past the cancel grace: a cancel ends it at once. */
  silent_for_cancel: boolean;
  row: string;
}

const runsOf = async (seed: number): Promise<Map<number, RunRow>> => {
  const rows = await query<RunRow>(
    em(),
    `select r.id::int as id, r.model_id, r.job_id, r.status, r.cancel_requested, r.completed_at::text as completed_at,
       (r.status = 'running' and r.job_id is null and (r.last_report_at < now() - make_interval(secs => ?)
         or (r.cancel_requested and r.last_report_at < now() - make_interval(secs => ?)))) as silent,
       r.last_report_at < now() - make_interval(secs => ?) as silent_for_cancel,
       to_jsonb(r)::text as row
     from training_runs r join models m on m.id = r.model_id where m.slug like ? order by r.id`,
    [SILENCE_SECONDS, CANCEL_GRACE_SECONDS, CANCEL_GRACE_SECONDS, `s${seed}-%`],
  );
  return new Map(rows.map((row) => [row.id, row]));
};

async function run(t: Test, seed: number, random: SeededRandom): Promise<void> {
  const names = Array.from({ length: 4 }, (_, i) => `s${seed}-m${i}`);
  const jobs: string[] = [];
  for (let i = 0; i < 2; i++) {
    jobs.push(
      (await em().transactional((tx) => enqueueJob(tx, { kind: 'run-lifecycle-test', workspaceId, payload: {} }))).id,
    );
  }
  const moved = new Map<string, number>();
  let refused = 0;

  for (let step = 0; step < STEPS; step++) {
    let before = await runsOf(seed);
    const runs = [...before.values()];
    /** The status each run should have after the step; runs whose non-status columns the step may change. */
    const expected = new Map([...before].map(([id, row]) => [id, row.status]));
    const touched = new Set<number>();
    let event: string;
    const choice = runs.length === 0 ? 0 : random.int(7);
    if (choice === 0) {
      event = 'start';
      const started = await report({
        event: 'training_started',
        project: 'alice/prop',
        name: random.pick(names),
        data: { epochs: 5 },
      });
      t.equal(started.status, 200, JSON.stringify(started.body));
      // Some runs belong to a training job (their job ends them); the others run on the user's own machine.
      if (random.next() < 0.4)
        await query(em(), 'update training_runs set job_id = ? where id = ?', [random.pick(jobs), started.body.runId]);
    } else if (choice === 1) {
      const target = random.pick(runs);
      const outcome = random.pick(OUTCOMES);
      event = `endRun ${target.id} ${outcome}`;
      if (target.status === 'running') expected.set(target.id, outcome);
      const ended = await em().transactional((tx) =>
        endRun(tx, target.id, { outcome, error: outcome === 'failed' ? 'boom' : null }),
      );
      t.equal(ended, target.status === 'running', `${event}: answers whether it moved`);
    } else if (choice === 2) {
      const target = random.pick(runs);
      const outcome = random.pick(['completed', 'cancelled'] as const);
      event = `endReportedRun ${target.id} ${outcome}`;
      const from: RunStatus[] =
        outcome === 'completed' ? ['running', 'failed', 'completed'] : ['running', 'failed', 'cancelled'];
      if (from.includes(target.status)) expected.set(target.id, outcome);
      await em().transactional((tx) => endReportedRun(tx, target.id, outcome));
    } else if (choice === 3) {
      const jobId = random.pick(jobs);
      const outcome = random.pick(OUTCOMES);
      event = `endJobRuns ${jobId} ${outcome}`;
      for (const row of runs) if (row.job_id === jobId && row.status === 'running') expected.set(row.id, outcome);
      await em().transactional((tx) => endJobRuns(tx, jobId, outcome));
    } else if (choice === 4) {
      // A trainer goes quiet: past the cancel grace only, or past the silence limit too.
      const target = random.pick(runs);
      event = `silence ${target.id}`;
      const seconds = random.pick([CANCEL_GRACE_SECONDS + 60, SILENCE_SECONDS + 60]);
      await query(em(), 'update training_runs set last_report_at = now() - make_interval(secs => ?) where id = ?', [
        seconds,
        target.id,
      ]);
      before = await runsOf(seed);
    } else if (choice === 5) {
      event = 'sweep';
      for (const row of runs) if (row.silent) expected.set(row.id, row.cancel_requested ? 'cancelled' : 'failed');
      await expireSilentRuns(em(), { silenceSeconds: SILENCE_SECONDS, cancelGraceSeconds: CANCEL_GRACE_SECONDS });
    } else {
      // A user cancels the model's own-machine training (TrainingService.cancelOwnCompute): silent runs end at once.
      const target = random.pick(runs);
      event = `cancel model of ${target.id}`;
      for (const row of runs) {
        if (row.model_id !== target.model_id || row.status !== 'running' || row.job_id !== null) continue;
        touched.add(row.id);
        if (row.silent_for_cancel) expected.set(row.id, 'cancelled');
      }
      await em().transactional(async (tx) => {
        for (const asked of await requestOwnComputeCancel(tx, target.model_id, CANCEL_GRACE_SECONDS)) {
          if (asked.silent) await endRun(tx, asked.id, { outcome: 'cancelled', error: null });
        }
      });
    }

    const after = await runsOf(seed);
    const where = `seed ${seed}, step ${step} (${event})`;
    for (const [id, was] of before) {
      const now = after.get(id);
      if (!now) {
        t.fail(`${where}: run ${id} is gone`);
        continue;
      }
      const status = expected.get(id)!;
      if (now.status !== status) t.fail(`${where}: run ${id} went ${was.status} → ${now.status}, expected ${status}`);
      const repeated = event === `endReportedRun ${id} ${was.status}` && status === was.status;
      if (now.status !== was.status || repeated) {
        if (!RUN_TRANSITIONS[was.status].includes(now.status))
          t.fail(`${where}: run ${id} made a move the table does not list: ${was.status} → ${now.status}`);
        moved.set(`${was.status}→${now.status}`, (moved.get(`${was.status}→${now.status}`) ?? 0) + 1);
      }
      if (repeated && now.completed_at !== was.completed_at)
        t.fail(`${where}: run ${id} repeated ${was.status} but its completed_at moved`);
      // A run the step left alone (a refused move, or not its target) is unchanged: no status, no error, no timestamps.
      if (status === was.status && !repeated && !touched.has(id)) {
        if (now.row !== was.row)
          t.fail(`${where}: run ${id} was left ${was.status} but changed: ${was.row} → ${now.row}`);
        if (event.startsWith('end') && event.includes(` ${id} `)) refused++;
      }
    }
  }
  t.ok(refused > 0, `seed ${seed}: some moves were refused (${refused})`);
  t.ok(moved.size >= 4, `seed ${seed}: several kinds of move were made: ${JSON.stringify(Object.fromEntries(moved))}`);
}

for (const seed of SEEDS) {
  t.test(`random run events, seed ${seed}: only listed moves, refused moves change nothing`, async (t) => {
    await run(t, seed, seededRandom(seed));
    t.pass('every step kept the invariants');
  });
}

t.test('the table: a run once ended is never running again, and only a failed run changes its end', async (t) => {
  for (const [from, to] of Object.entries(RUN_TRANSITIONS) as Array<[RunStatus, readonly RunStatus[]]>) {
    t.notOk(to.includes('running'), `${from} never goes back to running`);
    if (from === 'completed' || from === 'cancelled') t.same(to, [from], `${from} only repeats`);
  }
});
