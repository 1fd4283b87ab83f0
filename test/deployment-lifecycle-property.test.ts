// The deployment and revision state machines (deployment-lifecycle.ts, revision-lifecycle.ts) under random sequences
// of attempted moves against the real database: a deployment's status and a revision's state only ever follow the
// moves their tables list; a move the table allows happens (with its message, its event, its clocks); a refused one
// changes no row and logs nothing. The rows are shaped so that the running server's deployment sweep leaves them alone
// (a custom size, never idle-scaled; every revision's job already ended, so none waits for an export or a health check).
import type { EntityManager } from '@mikro-orm/postgresql';
import t, { type Test } from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { changeStatus, DEPLOYMENT_TRANSITIONS } from '../control-plane/src/deployments/deployment-lifecycle.ts';
import { DEPLOYMENT_STATUSES, type DeploymentStatus } from '../control-plane/src/deployments/deployment.schemas.ts';
import { insertDeployment } from '../control-plane/src/deployments/deployment.store.ts';
import {
  insertRevision,
  setRevisionJob,
  type RevisionState,
} from '../control-plane/src/deployments/deployment-revision.store.ts';
import { newSealedToken } from '../control-plane/src/deployments/deployment-tokens.ts';
import {
  changeRevisionState,
  REVISION_STATES,
  REVISION_TRANSITIONS,
} from '../control-plane/src/deployments/revision-lifecycle.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { call, startTestServer } from './helpers/server.ts';

const STEPS = 300;
const SEEDS = [1, 2, 3, 4];
const SIZE = { cpu: 2, memoryGi: 4 };

const server = await startTestServer(t);
await server.services().account.createUser('alice');
const key = (await server.services().apiKeys.create('alice', 'lifecycle')).key;
const em = () => server.orm.em.fork() as EntityManager;
const [{ id: workspaceId }] = await query<{ id: string }>(em(), `select id from workspaces where handle = 'alice'`);
for (const [path, body] of [
  ['/api/projects', { project: 'lifecycle', name: 'lifecycle' }],
  ['/api/models', { project: 'lifecycle', model: 'detector', task: 'detect' }],
] as const) {
  const created = await call(server, 'POST', path, { key, body });
  if (created.status !== 201) throw new Error(`${path}: ${created.status} ${JSON.stringify(created.body)}`);
}
const [{ id: modelId }] = await query<{ id: string }>(em(), `select id from models where slug = 'detector'`);

/** Every move seen made, over all seeds ("from→to"), to check that the runs reached each one the tables list. */
const deploymentMovesSeen = new Set<string>();
const revisionMovesSeen = new Set<string>();

async function newDeployment(seed: number, n: number | string): Promise<string> {
  return em().transactional((tx) =>
    insertDeployment(tx, {
      workspaceId,
      modelId,
      slug: `s${seed}-${n}`,
      name: `seed ${seed} #${n}`,
      region: 'us',
      ...SIZE,
    }),
  );
}

/** A starting revision whose job already ended: the sweep has nothing to do with it. */
async function newRevision(deploymentId: string): Promise<string> {
  return em().transactional(async (tx) => {
    const revision = await insertRevision(
      tx,
      deploymentId,
      modelId,
      SIZE,
      null as unknown as string,
      newSealedToken(tx, workspaceId),
    );
    const [job] = await query<{ id: string }>(
      tx,
      `insert into jobs (id, workspace_id, kind, status, created_at, updated_at) values (substr(md5(random()::text), 1, 24), ?, 'probe', 'completed', now(), now()) returning id`,
      [workspaceId],
    );
    await setRevisionJob(tx, revision.id, job.id);
    return revision.id;
  });
}

/** The rows a move may touch, as text, to tell whether anything changed. */
async function snapshot(table: 'deployments' | 'deployment_revisions', ids: string[]): Promise<string> {
  const rows = await query(em(), `select * from ${table} where id = any(?::text[]) order by id`, [
    `{${ids.join(',')}}`,
  ]);
  return JSON.stringify(rows);
}

async function eventCount(ids: string[]): Promise<number> {
  const [row] = await query<{ count: number }>(
    em(),
    `select count(*)::int as count from deployment_events where deployment_id = any(?::text[])`,
    [`{${ids.join(',')}}`],
  );
  return row.count;
}

/** Mostly a move the table allows from where it is (to reach every status), else any target. */
function target<S extends string>(random: SeededRandom, all: readonly S[], allowed: readonly S[]): S {
  return allowed.length > 0 && random.next() < 0.6 ? random.pick(allowed) : random.pick(all);
}

async function deploymentRun(t: Test, seed: number, random: SeededRandom): Promise<void> {
  const ids = await Promise.all([0, 1, 2].map((n) => newDeployment(seed, n)));
  const history = new Map(ids.map((id) => [id, ['creating'] as DeploymentStatus[]]));
  const gone = 'd-gone-' + seed.toString().padStart(17, '0');
  let moves = 0;
  let refusals = 0;
  for (let step = 0; step < STEPS; step++) {
    // Creating is left once for good: new deployments keep it tried.
    if (random.next() < 0.05) {
      ids.push(await newDeployment(seed, ids.length));
      history.set(ids.at(-1)!, ['creating']);
    }
    const id = random.next() < 0.03 ? gone : random.pick(ids);
    const [row] = await query<{ status: DeploymentStatus }>(em(), 'select status from deployments where id = ?', [id]);
    const from = row?.status;
    const to = target(random, DEPLOYMENT_STATUSES, from ? DEPLOYMENT_TRANSITIONS[from] : []);
    // Sometimes the caller narrows where it may move from (its own precondition), as a rollout does.
    const only = random.next() < 0.25 ? DEPLOYMENT_STATUSES.filter(() => random.next() < 0.5) : undefined;
    const statusMessage = random.next() < 0.5 ? `message ${step}` : null;
    const before = await snapshot('deployments', ids);
    const eventsBefore = await eventCount(ids);
    const moved = await em().transactional((tx) =>
      changeStatus(tx, id, to, { message: `step ${step}`, statusMessage }, only),
    );
    const where = `seed ${seed}, step ${step}: ${from ?? 'no deployment'} → ${to}${only ? ` (only from ${only.join(', ') || 'nothing'})` : ''}`;
    const allowed = from !== undefined && DEPLOYMENT_TRANSITIONS[from].includes(to) && (!only || only.includes(from));
    if (moved !== allowed)
      t.fail(`${where}: ${moved ? 'moved' : 'refused'}, the table says ${allowed ? 'allowed' : 'refused'}`);
    if (moved) {
      moves++;
      deploymentMovesSeen.add(`${from}→${to}`);
      history.get(id)!.push(to);
      const [after] = await query<{ status: string; status_message: string | null }>(
        em(),
        'select status, status_message from deployments where id = ?',
        [id],
      );
      if (after.status !== to || after.status_message !== statusMessage)
        t.fail(`${where}: the row reads ${JSON.stringify(after)}`);
      const [event] = await query<{ message: string }>(
        em(),
        'select message from deployment_events where deployment_id = ? order by id desc limit 1',
        [id],
      );
      if ((await eventCount(ids)) !== eventsBefore + 1 || event?.message !== `${to}: step ${step}`)
        t.fail(`${where}: the change was not logged once`);
    } else {
      refusals++;
      if ((await snapshot('deployments', ids)) !== before) t.fail(`${where}: refused, yet a deployment row changed`);
      if ((await eventCount(ids)) !== eventsBefore) t.fail(`${where}: refused, yet an event was logged`);
    }
  }
  for (const [id, statuses] of history) {
    const bad = statuses.slice(1).findIndex((to, i) => !DEPLOYMENT_TRANSITIONS[statuses[i]].includes(to));
    if (bad >= 0) t.fail(`seed ${seed}: deployment ${id} went ${statuses[bad]} → ${statuses[bad + 1]}`);
  }
  t.ok(moves > STEPS / 4 && refusals > STEPS / 10, `seed ${seed}: ${moves} moves, ${refusals} refusals`);
}

async function revisionRun(t: Test, seed: number, random: SeededRandom): Promise<void> {
  const deployments = await Promise.all(['r0', 'r1'].map((n) => newDeployment(seed, n)));
  const revisions: Array<{ id: string; deploymentId: string }> = [];
  const history = new Map<string, RevisionState[]>();
  const add = async () => {
    const deploymentId = random.pick(deployments);
    const id = await newRevision(deploymentId);
    revisions.push({ id, deploymentId });
    history.set(id, ['starting']);
  };
  for (let i = 0; i < 4; i++) await add();
  let moves = 0;
  let refusals = 0;
  for (let step = 0; step < STEPS; step++) {
    // Retired and failed are final: new revisions keep the run going.
    if (random.next() < 0.15) await add();
    const revision = random.pick(revisions);
    const [row] = await query<{ state: RevisionState }>(em(), 'select state from deployment_revisions where id = ?', [
      revision.id,
    ]);
    const from = row.state;
    const to = target(random, REVISION_STATES, REVISION_TRANSITIONS[from]);
    const error = to === 'failed' && random.next() < 0.7 ? `failure ${step}` : null;
    const ids = revisions.map((r) => r.id);
    const before = await snapshot('deployment_revisions', ids);
    const [previous] = await query<{ error: string | null; live_at: string | null; retired_at: string | null }>(
      em(),
      'select error, live_at, retired_at from deployment_revisions where id = ?',
      [revision.id],
    );
    // One live revision per deployment (a unique index): a second one is refused by PostgreSQL, as the rollout never tries.
    const [otherLive] = await query(
      em(),
      `select 1 from deployment_revisions where deployment_id = ? and state = 'live' and id <> ?`,
      [revision.deploymentId, revision.id],
    );
    const where = `seed ${seed}, step ${step}: ${from} → ${to}`;
    const allowed = REVISION_TRANSITIONS[from].includes(to);
    let moved: boolean;
    try {
      moved = await em().transactional((tx) => changeRevisionState(tx, revision.id, to, error));
    } catch (failure) {
      if (!(allowed && to === 'live' && otherLive && /deployment_revisions_one_live/.test(String(failure))))
        throw failure;
      if ((await snapshot('deployment_revisions', ids)) !== before)
        t.fail(`${where}: a second live revision was refused, yet a row changed`);
      continue;
    }
    if (moved !== allowed)
      t.fail(`${where}: ${moved ? 'moved' : 'refused'}, the table says ${allowed ? 'allowed' : 'refused'}`);
    if (moved) {
      moves++;
      revisionMovesSeen.add(`${from}→${to}`);
      history.get(revision.id)!.push(to);
      const [after] = await query<{
        state: string;
        error: string | null;
        live_at: string | null;
        retired_at: string | null;
      }>(em(), 'select state, error, live_at, retired_at from deployment_revisions where id = ?', [revision.id]);
      if (after.state !== to) t.fail(`${where}: the row reads ${after.state}`);
      if (after.error !== (error ?? previous.error)) t.fail(`${where}: error reads ${after.error}`);
      const time = (at: string | null) => (at === null ? null : new Date(at).getTime());
      if (to === 'live' && !(after.live_at && time(after.live_at)! >= (time(previous.live_at) ?? 0)))
        t.fail(`${where}: live_at not set`);
      if (to !== 'live' && time(after.live_at) !== time(previous.live_at)) t.fail(`${where}: live_at changed`);
      if ((to === 'retired' || to === 'failed') !== (after.retired_at !== null))
        t.fail(`${where}: retired_at reads ${after.retired_at}`);
    } else {
      refusals++;
      if ((await snapshot('deployment_revisions', ids)) !== before)
        t.fail(`${where}: refused, yet a revision row changed`);
    }
  }
  for (const [id, states] of history) {
    const bad = states.slice(1).findIndex((to, i) => !REVISION_TRANSITIONS[states[i]].includes(to));
    if (bad >= 0) t.fail(`seed ${seed}: revision ${id} went ${states[bad]} → ${states[bad + 1]}`);
  }
  t.ok(
    moves > STEPS / 10 && refusals > STEPS / 10,
    `seed ${seed}: ${moves} moves, ${refusals} refusals over ${revisions.length} revisions`,
  );
}

for (const seed of SEEDS) {
  t.test(
    `deployment status, random attempted moves, seed ${seed}: only the listed moves happen; a refused one changes nothing`,
    (t) => deploymentRun(t, seed, seededRandom(seed)),
  );
  t.test(
    `revision state, random attempted moves, seed ${seed}: only the listed moves happen; a refused one changes nothing`,
    (t) => revisionRun(t, seed, seededRandom(seed * 7919)),
  );
}

t.test('the runs made every move the tables list', async (t) => {
  const listedDeploymentMoves = DEPLOYMENT_STATUSES.flatMap((from) =>
    DEPLOYMENT_TRANSITIONS[from].map((to) => `${from}→${to}`),
  );
  t.same(
    listedDeploymentMoves.filter((move) => !deploymentMovesSeen.has(move)),
    [],
    'every deployment move',
  );
  const listedRevisionMoves = REVISION_STATES.flatMap((from) =>
    REVISION_TRANSITIONS[from].map((to) => `${from}→${to}`),
  );
  t.same(
    listedRevisionMoves.filter((move) => !revisionMovesSeen.has(move)),
    [],
    'every revision move',
  );
});
