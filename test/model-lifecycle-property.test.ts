// The model status machine under random sequences of what happens to models (the owner records a status, a training
// starts with its run, a training job is queued or ends, a run ends while training or the trainer reports its end,
// late or not) against the real database. After every step the database agrees with a plain model of today's rules:
// each lifecycle function moved the model exactly when its move allows it from the model's status, and only while the
// run is the model's newest training; every change is one MODEL_MOVES lists; completed_at stays when a run's end
// repeats the status.
import type { EntityManager } from '@mikro-orm/postgresql';
import t, { type Test } from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import {
  endTrainingOfJob,
  endTrainingOfRun,
  MODEL_MOVES,
  MODEL_STATUSES,
  MODEL_TRANSITIONS,
  recordStatus,
  startTraining,
  TRAINING_OUTCOMES,
  type ModelMove,
  type ModelStatus,
  type TrainingOutcome,
} from '../control-plane/src/models/model-lifecycle.ts';
import { createModel, createProject } from './helpers/models.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { startWorld } from './helpers/world.ts';

const STEPS = 300;
const SEEDS = [1, 2, 3, 4];

const world = await startWorld(t);
const em = () => world.server.orm.em.fork() as EntityManager;
await createProject(world, world.alice, { project: 'lifecycle', name: 'Lifecycle' });
const [{ workspace_id: workspaceId }] = await query<{ workspace_id: string }>(
  em(),
  `select id as workspace_id from workspaces where handle = 'alice'`,
);

interface Known {
  id: string;
  status: ModelStatus;
  /** Its training runs, oldest first. */
  runs: number[];
  /** Its queued training jobs. */
  jobs: string[];
}

async function statusOf(id: string): Promise<{ status: ModelStatus; completed_at: Date | null }> {
  const [row] = await query<{ status: ModelStatus; completed_at: Date | null }>(
    em(),
    'select status, completed_at from models where id = ?',
    [id],
  );
  return row;
}

async function run(t: Test, seed: number, random: SeededRandom): Promise<void> {
  const models: Known[] = [];
  for (let i = 0; i < 4; i++) {
    const { id } = await createModel(world, world.alice, { project: 'lifecycle', model: `s${seed}-m${i}` });
    models.push({ id, status: 'pending', runs: [], jobs: [] });
  }
  const outcome = (): TrainingOutcome => random.pick(TRAINING_OUTCOMES);
  const moved: Record<ModelMove, number> = { record: 0, startTraining: 0, endTraining: 0, reportTrainingEnd: 0 };
  /** Each event: what the lifecycle answered, what the plain model expects, and the move it is. */
  const events: Record<
    string,
    (
      model: Known,
    ) => Promise<{ move: ModelMove; answered: boolean; expected: boolean; to: ModelStatus; keepsCompletedAt?: boolean }>
  > = {
    record: async (model) => {
      const to = random.pick(MODEL_STATUSES);
      return { move: 'record', answered: await recordStatus(em(), model.id, to), expected: model.status !== to, to };
    },
    startTraining: async (model) => {
      const answered = await startTraining(em(), model.id, {
        trainArgs: { epochs: random.int(5) },
        startedAt: new Date(),
        epochs: random.next() < 0.5 ? null : 3,
      });
      const [row] = await query<{ id: string }>(
        em(),
        `insert into training_runs (workspace_id, model_id, status, created_at, updated_at, last_report_at) values (?, ?, 'running', now(), now(), now()) returning id`,
        [workspaceId, model.id],
      );
      model.runs.push(Number(row.id));
      return { move: 'startTraining', answered, expected: true, to: 'training' };
    },
    queueJob: async (model) => {
      const [job] = await query<{ id: string }>(
        em(),
        `insert into jobs (id, workspace_id, kind, subject_id, status, created_at, updated_at) values (substr(md5(random()::text), 1, 24), ?, 'training', ?, 'queued', now(), now()) returning id`,
        [workspaceId, model.id],
      );
      model.jobs.push(job.id);
      return { move: 'record', answered: false, expected: false, to: model.status };
    },
    endJob: async (model) => {
      const end = outcome();
      const job =
        model.jobs.length > 0 && random.next() < 0.7
          ? model.jobs.splice(random.int(model.jobs.length), 1)[0]
          : undefined;
      if (job) await query(em(), `update jobs set status = 'cancelled' where id = ?`, [job]);
      return {
        move: 'endTraining',
        answered: await endTrainingOfJob(em(), model.id, { outcome: end, error: end === 'failed' ? 'boom' : null }),
        expected: model.status === 'training',
        to: end,
      };
    },
    endRun: async (model) => {
      if (model.runs.length === 0) return { move: 'record', answered: false, expected: false, to: model.status };
      const runId = random.next() < 0.7 ? model.runs.at(-1)! : random.pick(model.runs);
      const jobId = model.jobs.length > 0 && random.next() < 0.5 ? random.pick(model.jobs) : null;
      const onRun = runId === model.runs.at(-1) && model.jobs.every((job) => job === jobId);
      const reported = random.next() < 0.4;
      const end: TrainingOutcome = reported ? random.pick(['completed', 'cancelled'] as const) : outcome();
      const answered = await endTrainingOfRun(
        em(),
        { id: runId, modelId: model.id, jobId },
        { outcome: end, error: null },
        !reported,
      );
      return {
        move: reported ? 'reportTrainingEnd' : 'endTraining',
        answered,
        expected: onRun && (reported || model.status === 'training'),
        to: end,
        keepsCompletedAt: model.status === end,
      };
    },
  };
  const names = Object.keys(events);
  for (let step = 0; step < STEPS; step++) {
    const name = random.pick(names);
    const model = random.pick(models);
    const before = await statusOf(model.id);
    const result = await events[name](model);
    const after = await statusOf(model.id);
    const where = `seed ${seed}, step ${step} (${name} on ${model.id}, ${before.status})`;
    if (result.answered !== result.expected)
      t.fail(`${where}: answered ${result.answered}, expected ${result.expected}`);
    const expectedStatus = result.expected ? result.to : before.status;
    if (after.status !== expectedStatus) t.fail(`${where}: is ${after.status}, expected ${expectedStatus}`);
    if (after.status !== before.status) {
      const allowed = MODEL_MOVES[result.move];
      if (
        !(allowed.from as readonly ModelStatus[]).includes(before.status) ||
        !(allowed.to as readonly ModelStatus[]).includes(after.status)
      ) {
        t.fail(`${where}: ${result.move} moved ${before.status} → ${after.status}, which it does not list`);
      }
      if (!MODEL_TRANSITIONS[before.status].includes(after.status))
        t.fail(`${where}: ${before.status} → ${after.status} is not a transition`);
    }
    if (result.answered && result.keepsCompletedAt && String(after.completed_at) !== String(before.completed_at))
      t.fail(`${where}: a repeated end moved completed_at`);
    if (result.answered) moved[result.move] += 1;
    model.status = after.status;
  }
  t.ok(
    Object.values(moved).every((count) => count > 0),
    `seed ${seed}: every move happened: ${JSON.stringify(moved)}`,
  );
}

for (const seed of SEEDS) {
  t.test(`random events, seed ${seed}: each move exactly when allowed, and only those`, async (t) => {
    await run(t, seed, seededRandom(seed));
    t.pass('every step agreed with the moves');
  });
}

t.test('a move to a status it does not list is refused before any statement', async (t) => {
  const { id } = await createModel(world, world.alice, { project: 'lifecycle', model: 'refused' });
  await t.rejects(
    endTrainingOfRun(em(), { id: 1, modelId: id, jobId: null }, { outcome: 'failed', error: 'x' }, false),
    /reportTrainingEnd does not go to failed/,
  );
  await t.rejects(
    endTrainingOfJob(em(), id, { outcome: 'pending' as TrainingOutcome, error: null }),
    /endTraining does not go to pending/,
  );
  t.equal((await statusOf(id)).status, 'pending');
});

t.test('two ends racing for one training model: one wins, the other finds it ended', async (t) => {
  for (let i = 0; i < 5; i++) {
    const { id } = await createModel(world, world.alice, { project: 'lifecycle', model: `race-${i}` });
    await startTraining(em(), id, { trainArgs: null });
    const answers = await Promise.all([
      em().transactional((tx) => endTrainingOfJob(tx, id, { outcome: 'completed', error: null })),
      em().transactional((tx) => endTrainingOfJob(tx, id, { outcome: 'failed', error: 'lost' })),
    ]);
    t.equal(answers.filter(Boolean).length, 1, `race ${i}: exactly one end moved it`);
    t.equal((await statusOf(id)).status, answers[0] ? 'completed' : 'failed');
  }
});
