// The job state machine under random sequences of what happens to host jobs (start, assign, accept, heartbeat, host
// lost, reconnect, cancel, complete, fail, the trainer's own completion report, replica restart, a process that cannot
// settle) against the real database and its transition trigger. After every step, once owed bookkeeping has been
// retried: no job is ended and unsettled, no completed job runs again, no subject is active without an active job.
import type { EntityManager } from '@mikro-orm/postgresql';
import t, { type Test } from 'tap';
import { Workspace } from '../control-plane/src/account/workspace.entity.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { JobLifecycle } from '../control-plane/src/jobs/job-lifecycle.ts';
import { ActiveJobExists, enqueueJob } from '../control-plane/src/jobs/job-queue.ts';
import type { HostJobKind } from '../control-plane/src/scheduler/host-job-kinds.ts';
import { markAccepted, renewHostLeases } from '../control-plane/src/jobs/job.store.ts';
import { reconcileHost } from '../control-plane/src/scheduler/reconcile.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { startTestServer } from './helpers/server.ts';
import { enrollHost } from './helpers/worker-client.ts';

const KIND = 'lifecycle-test';
const GRACE_SECONDS = 3600;
const STEPS = 250;
const SEEDS = [1, 2, 3, 4];

const server = await startTestServer(t);
await server.services().account.createUser('alice');
const em = () => server.orm.em.fork() as EntityManager;
const workspaceId = (await em().findOneOrFail(Workspace, { handle: 'alice' })).id;
const hosts = [(await enrollHost(server, 'prop-a')).hostId, (await enrollHost(server, 'prop-b')).hostId];
await query(
  em(),
  `create table lifecycle_subjects (id varchar(24) primary key, status text not null, reported boolean not null default false, seed int not null)`,
);

/** Like a training: its subject is active while it has a job, and takes the job's outcome when it ends. */
const kind: HostJobKind = {
  spec: async () => {
    throw new Error('not dispatched here');
  },
  completedWhen: `exists (select 1 from lifecycle_subjects s where s.id = j.subject_id and s.reported)`,
  ended: async (tx, attempt, outcome) => {
    await query(tx, `update lifecycle_subjects set status = ? where id = ? and status = 'active'`, [
      outcome,
      attempt.subjectId,
    ]);
  },
};

interface JobRow {
  id: string;
  subject_id: string;
  status: string;
  host_id: string | null;
  accepted_at: Date | null;
  settle_pending: boolean;
  attempts: number;
}

async function run(t: Test, seed: number, random: SeededRandom): Promise<void> {
  let lifecycle = new JobLifecycle({ [KIND]: kind });
  /** A process that does not know the kind (vpctl): what it ends waits for a replica's retry. */
  const unaware = new JobLifecycle();
  const subjects = Array.from(
    { length: 4 },
    (_, i) => `${seed.toString(16).padStart(4, '0')}${i.toString(16).padStart(20, '0')}`,
  );
  const completedJobs = new Set<string>();
  const jobs = () =>
    query<JobRow>(
      em(),
      `select j.id, j.subject_id, j.status, j.host_id, j.accepted_at, j.settle_pending, j.attempts from jobs j
       join lifecycle_subjects s on s.id = j.subject_id where s.seed = ? order by j.created_at`,
      [seed],
    );
  const pick = async (where: (job: JobRow) => boolean) => {
    const matching = (await jobs()).filter(where);
    return matching.length > 0 ? random.pick(matching) : undefined;
  };
  const running = (job: JobRow) => job.status === 'running';
  const events: Record<string, () => Promise<unknown>> = {
    start: async () => {
      const subject = random.pick(subjects);
      await em()
        .transactional(async (tx) => {
          await query(
            tx,
            `insert into lifecycle_subjects (id, status, seed) values (?, 'active', ?) on conflict (id) do update set status = 'active', reported = false`,
            [subject, seed],
          );
          await enqueueJob(tx, {
            kind: KIND,
            workspaceId,
            subjectId: subject,
            exclusive: true,
            payload: {},
            host: { gpuType: null, gpuCount: 0, restartable: random.next() < 0.7 },
          });
        })
        .catch((error: unknown) => {
          if (!(error instanceof ActiveJobExists)) throw error;
        });
    },
    assign: async () => {
      const job = await pick((j) => j.status === 'queued');
      if (job) await em().transactional((tx) => lifecycle.assign(tx, job.id, random.pick(hosts), [], GRACE_SECONDS));
    },
    accept: async () => {
      const job = await pick((j) => running(j) && j.accepted_at === null);
      if (job) await markAccepted(em(), job.host_id!, job.id);
    },
    heartbeat: () => renewHostLeases(em(), random.pick(hosts), GRACE_SECONDS),
    loseHost: async () => {
      const host = random.pick(hosts);
      await query(
        em(),
        `update jobs set lease_expires_at = now() - interval '1 second' where host_id = ? and status = 'running'`,
        [host],
      );
      await lifecycle.releaseExpired(em(), GRACE_SECONDS);
    },
    reconnect: async () => {
      const host = random.pick(hosts);
      const held = (await jobs()).filter((j) => j.host_id === host && running(j) && random.next() < 0.6);
      await reconcileHost(
        em(),
        lifecycle,
        host,
        held.map((j) => ({ jobId: j.id, attempt: j.attempts })),
        GRACE_SECONDS,
      );
    },
    cancel: async () => {
      const job = await pick((j) => j.status === 'queued' || running(j));
      if (job) await (random.next() < 0.3 ? unaware : lifecycle).requestCancel(em(), job.id);
    },
    reportCompleted: async () => {
      const job = await pick((j) => running(j) && j.accepted_at !== null);
      if (job) await query(em(), `update lifecycle_subjects set reported = true where id = ?`, [job.subject_id]);
    },
    complete: async () => {
      const job = await pick(running);
      if (job) await lifecycle.finishReported(em(), job.host_id!, { jobId: job.id, outcome: 'completed', exitCode: 0 });
    },
    fail: async () => {
      const job = await pick(running);
      if (job) await lifecycle.finishReported(em(), job.host_id!, { jobId: job.id, outcome: 'failed', exitCode: 1 });
    },
    restartReplica: async () => {
      lifecycle = new JobLifecycle({ [KIND]: kind });
    },
  };
  const names = Object.keys(events);
  for (let step = 0; step < STEPS; step++) {
    const event = random.pick(names);
    await events[event]();
    while (await lifecycle.settleNext(em()));
    const where = `seed ${seed}, step ${step} (${event})`;
    const now = await jobs();
    const unsettled = now.filter((j) => ['completed', 'failed', 'cancelled'].includes(j.status) && j.settle_pending);
    if (unsettled.length > 0) t.fail(`${where}: ended jobs left unsettled: ${unsettled.map((j) => j.id).join(', ')}`);
    for (const job of now) {
      if (completedJobs.has(job.id) && job.status !== 'completed')
        t.fail(`${where}: completed job ${job.id} is ${job.status} again`);
      if (job.status === 'completed') completedJobs.add(job.id);
    }
    const orphans = await query<{ id: string }>(
      em(),
      `select s.id from lifecycle_subjects s where s.seed = ? and s.status = 'active'
         and not exists (select 1 from jobs j where j.subject_id = s.id and j.status in ('queued', 'running'))`,
      [seed],
    );
    if (orphans.length > 0)
      t.fail(`${where}: subjects active without an active job: ${orphans.map((s) => s.id).join(', ')}`);
    const rerun = await query<{ id: string }>(
      em(),
      `select j.id from jobs j join lifecycle_subjects s on s.id = j.subject_id where s.seed = ? and s.reported and j.status = 'queued'`,
      [seed],
    );
    if (rerun.length > 0)
      t.fail(
        `${where}: jobs whose work was reported complete are queued to run again: ${rerun.map((j) => j.id).join(', ')}`,
      );
  }
  const outcomes = await query<{ status: string; count: string }>(
    em(),
    `select j.status, count(*) from jobs j join lifecycle_subjects s on s.id = j.subject_id where s.seed = ? group by j.status`,
    [seed],
  );
  t.ok(outcomes.length >= 3, `seed ${seed} reached several outcomes: ${JSON.stringify(outcomes)}`);
}

for (const seed of SEEDS) {
  t.test(`random events, seed ${seed}: settled, never run again, no active subject without a job`, async (t) => {
    await run(t, seed, seededRandom(seed));
    t.pass('every step kept the invariants');
  });
}
