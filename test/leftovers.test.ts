// What a control plane killed mid-ingest or mid-upload leaves on disk (an extracted archive in the temp folder, a
// partial file in the blob store's temp folder) is deleted at the next start and hourly, or as soon as another attempt
// takes the ingest over or it ends; what live work, another replica's included, still uses is kept.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { newId } from '../control-plane/src/db/ids.ts';
import { makeWorkDir } from '../control-plane/src/ingest/ingest-workdir.ts';
import { processTag } from '../control-plane/src/process-identity.ts';
import { adminQuery } from './helpers/db.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const TWO_DAYS_AGO = new Date(Date.now() - 2 * 86_400_000);

t.test(
  'a restart deletes the work folders of dead ingest attempts and stale blob temp files, and keeps the rest',
  async (t) => {
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'crashed', name: 'Crashed' });
    const sql = (text: string, params: unknown[] = []) => adminQuery(text, params, world.server.databaseUrl);
    const job = async (status: string, attempts: number) => {
      const id = newId();
      await sql(
        `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status, payload, attempts, max_attempts, lease_owner, lease_expires_at, cancel_requested, priority)
       select $1, now(), now(), workspace_id, 'ingest', id, $2, '{}', $3, 3, 'elsewhere', now() + interval '1 hour', false, 0 from datasets where id = $4`,
        [id, status, attempts, datasetId],
      );
      return id;
    };
    const ended = await job('failed', 1);
    const takenOver = await job('running', 2);
    const workDir = async (jobId: string, attempt: number) => {
      const dir = await makeWorkDir(tmpdir(), jobId, attempt);
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      mkdirSync(join(dir, 'files', 'images'), { recursive: true });
      writeFileSync(join(dir, 'files', 'images', 'a.jpg'), 'extracted');
      return dir;
    };
    const endedDir = await workDir(ended, 1);
    const deadAttemptDir = await workDir(takenOver, 1);
    const liveAttemptDir = await workDir(takenOver, 2);
    const strangerDir = await workDir(newId(), 1);

    const blobs = join(world.server.dataDir, 'blobs');
    const temp = join(blobs, '.tmp');
    mkdirSync(temp, { recursive: true });
    const stale = randomUUID();
    for (const name of [stale, `${stale}.json`]) {
      writeFileSync(join(temp, name), 'partial');
      utimesSync(join(temp, name), TWO_DAYS_AGO, TWO_DAYS_AGO);
    }
    const recent = randomUUID();
    writeFileSync(join(temp, recent), 'still arriving at another replica');
    // Named after their writers: a process here that has ended (this one's pid with another start time), and a live one.
    const deadWriter = processTag().replace(/-\d+-$/, '-1-');
    const killedMidPut = `${deadWriter}${randomUUID()}`;
    for (const name of [killedMidPut, `${killedMidPut}.json`]) writeFileSync(join(temp, name), 'partial, a minute ago');
    const live = `${processTag()}${randomUUID()}`;
    writeFileSync(join(temp, live), 'still arriving here');

    await world.server.close();
    await startTestServer(t, { databaseUrl: world.server.databaseUrl, env: { STORAGE_URL: `file://${blobs}` } });
    t.notOk(existsSync(endedDir), "an ended job's folder is deleted");
    t.notOk(existsSync(deadAttemptDir), 'so is the folder of an attempt another process took over');
    t.ok(existsSync(liveAttemptDir), 'the running attempt keeps its folder (whichever replica runs it)');
    t.ok(existsSync(strangerDir), 'a folder of a job this database does not know is left alone');
    t.same(
      readdirSync(temp).sort(),
      [recent, live].sort(),
      "stale temp files, a dead process's however recent, and their sidecars are deleted; live ones are kept",
    );
  },
);

t.test(
  "an ingest's folders left by a dead attempt go when another attempt takes over, or when the job ends cancelled or given up",
  async (t) => {
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'resumed', name: 'Resumed' });
    const sql = (text: string, params: unknown[] = []) => adminQuery(text, params, world.server.databaseUrl);
    // Running attempt 1 of a process that died (kill -9): its lease lapsed, so this control plane takes the job again.
    const orphaned = async (cancelRequested: boolean, attempt = 1) => {
      const id = newId();
      await sql(
        `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status, payload, attempts, max_attempts, lease_owner, lease_expires_at, cancel_requested, priority)
       select $1, now(), now(), workspace_id, 'ingest', id, 'running', '{}', $2, 3, 'killed', now() - interval '1 second', $3, 0 from datasets where id = $4`,
        [id, attempt, cancelRequested, datasetId],
      );
      const dir = await makeWorkDir(tmpdir(), id, attempt);
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(join(dir, 'archive.zip'), 'half downloaded');
      await sql(`select pg_notify('vp_jobs', 'ingest')`);
      return { id, dir };
    };
    const ended = async (id: string) => {
      const [job] = (await sql('select status, attempts from jobs where id = $1', [id])).rows as {
        status: string;
        attempts: number;
      }[];
      return ['completed', 'failed', 'cancelled'].includes(job.status) && job;
    };
    const retried = await orphaned(false);
    t.match(
      await eventually(() => ended(retried.id), 'the retried ingest to end', 30_000),
      { attempts: 2 },
      'a second attempt ran',
    );
    t.notOk(existsSync(retried.dir), "the dead attempt's folder was deleted by the attempt that took over");
    const cancelled = await orphaned(true);
    t.match(await eventually(() => ended(cancelled.id), 'the cancelled ingest to end', 30_000), {
      status: 'cancelled',
    });
    t.notOk(existsSync(cancelled.dir), 'a job cancelled while its process was dead ends without its folder');
    const exhausted = await orphaned(false, 3);
    t.match(await eventually(() => ended(exhausted.id), 'the ingest to be given up', 30_000), {
      status: 'failed',
      attempts: 3,
    });
    await eventually(async () => !existsSync(exhausted.dir), "the given-up job's folder to go");
    t.pass('a job given up after its last attempt died ends without its folder');
  },
);

t.test('the sweep keeps the temp file of an upload in progress, however long it has been idle', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'slow', name: 'Slow' });
  const body = Buffer.alloc(64 * 1024, 7);
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    world.server,
    'POST',
    '/api/upload/signed-url',
    {
      key: world.alice,
      body: {
        assetType: 'datasets',
        assetId: datasetId,
        filename: 'slow.zip',
        contentType: 'application/zip',
        totalBytes: body.length,
      },
    },
  );
  let finish!: () => void;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(body.subarray(0, 1024));
      finish = () => {
        controller.enqueue(body.subarray(1024));
        controller.close();
      };
    },
  });
  const put = fetch(ticket.body.uploadUrl, {
    method: 'PUT',
    headers: ticket.body.headers,
    body: stream,
    duplex: 'half',
  } as RequestInit);
  const temp = join(world.server.dataDir, 'blobs', '.tmp');
  const [partial] = await eventually(
    async () => existsSync(temp) && readdirSync(temp).length > 0 && readdirSync(temp),
    'the upload to reach the store',
  );
  utimesSync(join(temp, partial), TWO_DAYS_AGO, TWO_DAYS_AGO);
  t.equal(await world.server.storage.store.sweepInterrupted(), 0, 'nothing deleted');
  t.ok(existsSync(join(temp, partial)), 'the live upload keeps its file');
  finish();
  t.equal((await put).status, 200, 'and completes');
});
