// GET /api/jobs: the workspace's queue across kinds for owners and admins, newest first, filtered by status and kind,
// in keyset pages; the host each runs on; other roles 403, other workspaces' jobs never listed; a cancelled job moves.
import t from 'tap';
import { enqueueJob } from '../control-plane/src/jobs/job-queue.ts';
import { expectError } from './helpers/expect.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

interface Listed {
  jobs: Array<{ id: string; kind: string; status: string; host: string | null; attempts: number }>;
  nextCursor: string | null;
}

const world = await startWorld(t);
const { server } = world;
const list = (query: string, key = world.team) => call<Listed>(server, 'GET', `/api/jobs${query}`, { key });

/** Queued host jobs that no host takes (none is connected), one per kind, in order. */
async function queue(handle: string, kinds: string[]): Promise<string[]> {
  const em = server.orm.em.fork();
  const [{ id: workspaceId }] = await em
    .getConnection()
    .execute<Array<{ id: string }>>('select id from workspaces where handle = ?', [handle]);
  const ids: string[] = [];
  for (const kind of kinds) {
    const job = await enqueueJob(em, {
      kind,
      workspaceId,
      payload: {},
      host: { gpuType: null, gpuCount: 0, toolchain: 'onnx' },
    });
    ids.push(job.id);
    await new Promise((resolve) => setTimeout(resolve, 5)); // distinct creation times, as the order is by them
  }
  return ids;
}

const teamJobs = await queue('acme-team', ['export', 'training', 'export', 'deployment', 'export']);
const strangerJobs = await queue('bobby', ['export']);

t.test('an owner lists the workspace jobs, newest first, filtered, page by page', async (t) => {
  const all = await list('');
  t.equal(all.status, 200);
  t.same(
    all.body.jobs.map((job) => job.id),
    [...teamJobs].reverse(),
    'every job of the workspace, newest first; none of another workspace',
  );
  t.match(all.body.jobs[0], { kind: 'export', status: 'queued', host: null, attempts: 0 });
  t.equal(all.body.nextCursor, null);
  t.same(
    (await list('?kind=export')).body.jobs.map((job) => job.id),
    [teamJobs[4], teamJobs[2], teamJobs[0]],
    'by kind',
  );
  const pages: string[][] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const page: Listed = (await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).body;
    pages.push(page.jobs.map((job) => job.id));
    cursor = page.nextCursor;
  }
  t.same(
    pages,
    [[teamJobs[4], teamJobs[3]], [teamJobs[2], teamJobs[1]], [teamJobs[0]]],
    'keyset pages make the whole list once',
  );
  expectError(t, await list('?cursor=nonsense'), 400);
  expectError(t, await list('?status=paused'), 400);
  expectError(t, await list('?limit=201'), 400);
});

t.test('a cancelled job leaves the active filter', async (t) => {
  t.equal((await call(server, 'DELETE', `/api/jobs/${teamJobs[1]}`, { key: world.team })).status, 200);
  t.same(
    (await list('?status=active')).body.jobs.map((job) => job.id),
    [teamJobs[4], teamJobs[3], teamJobs[2], teamJobs[0]],
  );
  t.same(
    (await list('?status=cancelled')).body.jobs.map((job) => job.id),
    [teamJobs[1]],
  );
});

t.test('only owners and admins list; each sees its own workspace only', async (t) => {
  expectError(t, await list('', world.viewer), 403);
  expectError(t, await list('', world.editor), 403);
  t.same(
    (await list('', world.bobby)).body.jobs.map((job) => job.id),
    strangerJobs,
  );
  t.equal((await call(server, 'GET', '/api/jobs')).status, 401, 'needs a key');
});
