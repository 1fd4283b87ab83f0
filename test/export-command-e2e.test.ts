// The command an export job gets, run by the real ultralytics exporter (.venv-trainer, CPU) as a host would run it:
// weights from the job's input URL saved as `<model>.pt`, `yolo export` in the work dir, and the artifact where the
// job's outputs say. A scripted host plays the agent's upload of it (the agent's side is tested with the agent), and
// the export then serves those bytes. torchscript is the format the base trainer environment always exports to.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { adminQuery } from './helpers/db.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

const dir = mkdtempSync(join(tmpdir(), 'vp-export-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const run = (command: string[], cwd: string, env: Record<string, string>) =>
  new Promise<string>((resolve, reject) =>
    execFile(
      command[0]!,
      command.slice(1),
      {
        cwd,
        timeout: 240_000,
        env: {
          ...process.env,
          ...env,
          PATH: `${join(VENV, 'bin')}:${process.env.PATH}`,
          YOLO_CONFIG_DIR: join(dir, 'settings'),
        },
      },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stdout}\n${stderr}`.slice(-4000))) : resolve(stdout + stderr),
    ),
  );

t.test('the job command exports with the real ultralytics, leaving the artifact its outputs name', async (t) => {
  // Real (untrained) YOLO11n weights, as an upload would bring them.
  const weightsFile = join(dir, 'yolo11n.pt');
  await run(
    [
      join(VENV, 'bin/python'),
      '-c',
      `from ultralytics import YOLO; YOLO('yolo11n.yaml').save(${JSON.stringify(weightsFile)})`,
    ],
    dir,
    { YOLO_OFFLINE: '1' },
  );

  const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1' });
  const { server, alice } = world;
  await createProject(world, alice, { project: 'detector', name: 'Detector' });
  const model = await createModel(world, alice, { project: 'detector', model: 'shapes-yolo11n' });
  await uploadWeights(world, alice, model.id, readFileSync(weightsFile));
  const { workerKey, hostId } = await enrollHost(server, 'exporter');
  const { client: host } = await WorkerClient.welcomed(server, workerKey);
  t.teardown(() => host.ws.terminate());
  host.beat();
  host.send({ type: 'capabilities', exporters: ['torchscript'], missingExporters: {} });
  await eventually(
    async () =>
      (
        (await adminQuery('select exporters from hosts where id = $1', [hostId], server.databaseUrl)).rows[0] as {
          exporters: string[];
        }
      ).exporters.length === 1,
    'the host’s exporters',
  );

  const created = await call<{ id: string }>(server, 'POST', '/api/models/alice/detector/shapes-yolo11n/exports', {
    key: alice,
    body: { format: 'torchscript', args: { imgsz: 64, batch: 2 } },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });

  // What the agent does: inputs into the work dir, the command there with the job's env.
  const work = join(dir, 'work', assign.spec.workDir);
  mkdirSync(work, { recursive: true });
  for (const input of assign.spec.inputs ?? [])
    writeFileSync(join(work, input.path), Buffer.from(await (await fetch(input.url)).arrayBuffer()));
  const log = await run(assign.spec.command, work, assign.spec.env);
  t.match(log, /export success/);
  const output = assign.spec.outputs![0]!;
  t.equal(output.path, 'shapes-yolo11n.torchscript');
  const artifact = readFileSync(join(work, output.path));
  t.ok(artifact.length > 100_000, 'the exported model');

  const key = `test/exports/${assign.jobId}/${output.name}`;
  await server.storage.store.put(key, Readable.from([artifact]), {
    contentType: 'application/octet-stream',
    expectedBytes: artifact.length,
  });
  await adminQuery(
    'insert into job_outputs (job_id, name, attempt, storage_key, size, sha256) values ($1, $2, $3, $4, $5, $6)',
    [
      assign.jobId,
      output.name,
      assign.attempt,
      key,
      artifact.length,
      createHash('sha256').update(artifact).digest('hex'),
    ],
    server.databaseUrl,
  );
  host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'completed', exitCode: 0 });
  const done = await eventually(async () => {
    // The file's shape is asserted below, once completed.
    const read = await call<{
      export: { status: string; file: { size: number; downloadUrl: string; downloadFilename: string } };
    }>(server, 'GET', `/api/models/alice/detector/shapes-yolo11n/exports/${created.body.id}`, { key: alice });
    return read.body.export.status === 'completed' && read.body.export;
  }, 'the export completed');
  t.match(done.file, { size: artifact.length, downloadFilename: 'shapes-yolo11n.torchscript' });
  t.same(Buffer.from(await (await fetch(done.file.downloadUrl)).arrayBuffer()), artifact);
});
