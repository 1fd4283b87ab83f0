// The model export API against a real control plane and a scripted worker host (no exporter runs here): validation
// per format, 503 naming the missing toolchain, the `yolo export` command a host receives, the statuses read from the
// job, 409 for an equivalent in flight, completion only with the uploaded artifact, reuse by weights hash (one file,
// counted once, deleted with its last export), cancellation, mobile links, tenant isolation, model erase.
import { randomBytes } from 'node:crypto';
import { AGENT_ROUTES, routePath, type ServerMessage } from '@vp/protocol';
import t from 'tap';
import type { z } from 'zod';
import { StorageUsage } from '../control-plane/src/account/account.schemas.ts';
import {
  ExportList,
  MobileLink,
  MobileModel,
  type ExportCreated,
  type ExportView,
} from '../control-plane/src/exports/export.schemas.ts';
import { adminQuery } from './helpers/db.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';

const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1' });
const { server, alice, bobby } = world;
const sql = (text: string, params: unknown[] = []) => adminQuery(text, params, server.databaseUrl);
/** The rows of a query, typed as it selects them. */
const rowsOf = async <Row>(text: string, params: unknown[] = []) => (await sql(text, params)).rows as Row[];
await createProject(world, alice, { project: 'detector', name: 'Detector' });
const weights = randomBytes(4096);
const model = await createModel(world, alice, { project: 'detector', model: 'shapes-yolo11n' });
await uploadWeights(world, alice, model.id, weights);
const base = '/api/models/alice/detector/shapes-yolo11n/exports';

type Json = Record<string, unknown>;
/** A POST's answer: the export created, or the refusal's error; each test checks the status before it reads either. */
type CreateAnswer = z.infer<typeof ExportCreated> & { error: string };
/** An export as GET shows it: file, error and the times are there in the statuses the tests read them in. */
type ExportBody = Required<z.infer<typeof ExportView>>;
const create = (body: Json, key = alice, path = base) => call<CreateAnswer>(server, 'POST', path, { key, body });
const read = (id: string, key = alice) => call<{ export: ExportBody }>(server, 'GET', `${base}/${id}`, { key });
const storageUsage = async (path = '/api/storage') =>
  StorageUsage.parse((await call(server, 'GET', path, { key: alice })).body);
const storage = async () => (await storageUsage()).breakdown.byCategory.exports;

t.test(
  'refused before anything is queued: 400 per format and argument, imx rules, gpuType, other workspaces 404',
  async (t) => {
    const refusals: Array<[Json, RegExp]> = [
      [{ format: 'tflite' }, /format/],
      [{ format: 'engine' }, /gpuType is required/],
      [{ format: 'engine', gpuType: 'tpu-9000' }, /not a GPU type ID/],
      [{ format: 'onnx', gpuType: 'rtx-4090' }, /engine \(TensorRT\) exports only/],
      [{ format: 'onnx', args: { color: 'red' } }, /color/],
      [{ format: 'onnx', args: { device: 0 } }, /set by the platform/],
      [{ format: 'onnx', args: { imgsz: 100 } }, /imgsz/],
      [{ format: 'onnx', args: { batch: 0 } }, /batch/],
      [{ format: 'onnx', args: { opset: 31 } }, /opset/],
      [{ format: 'onnx', args: { quantize: 4 } }, /quantize/],
      [{ format: 'onnx', args: { name: 'rk 3588' } }, /name/],
      [{ format: 'onnx', args: { quantize: 'w8a32' } }, /quantize w8a32 is not supported for format onnx/],
      [{ format: 'pb', args: { quantize: 16 } }, /quantize is not supported for format pb/],
      [{ format: 'hailo', args: { quantize: 32 } }, /cannot be FP32/],
      [{ format: 'imx', args: { quantize: 16 } }, /INT8 only/],
      [{ format: 'imx', args: { quantize: 'fp32' } }, /INT8 only/],
    ];
    // The spec's gated args, each at a non-default value, for every format whose row lacks it.
    const gated: Json = { batch: 4, dynamic: true, opset: 12, simplify: false, workspace: 4, optimize: true };
    const table: Record<string, string[]> = {
      torchscript: ['dynamic', 'batch'],
      onnx: ['dynamic', 'simplify', 'opset', 'batch'],
      openvino: ['dynamic', 'batch'],
      coreml: ['dynamic', 'batch'],
      coreai: ['batch'],
      saved_model: ['opset', 'batch'],
      pb: ['opset', 'batch'],
      edgetpu: ['opset'],
      litert: ['batch'],
      paddle: ['batch'],
      mnn: ['batch', 'dynamic', 'simplify', 'opset'],
      ncnn: ['batch'],
      imx: [],
      rknn: ['batch', 'simplify', 'opset'],
      executorch: ['batch'],
      axelera: ['batch'],
      deepx: ['simplify', 'opset', 'optimize'],
      qnn: ['batch', 'simplify', 'opset'],
      hailo: ['simplify'],
      ascend: ['batch', 'opset', 'simplify'],
      xilinx: ['opset', 'simplify'],
    };
    for (const [format, accepted] of Object.entries(table)) {
      for (const [arg, value] of Object.entries(gated)) {
        if (!accepted.includes(arg))
          refusals.push([
            { format, args: { [arg]: value } },
            new RegExp(`${arg} is not supported for format ${format}`),
          ]);
      }
    }
    for (const [body, error] of refusals) {
      const response = await create(body);
      t.equal(response.status, 400, JSON.stringify(body));
      t.match(response.body.error, error, JSON.stringify(body));
    }
    // Defaults pass anywhere: the refusal is the 503 (no host yet), not a 400.
    t.equal(
      (await create({ format: 'paddle', args: { batch: 1, dynamic: false, simplify: true, opset: null } })).status,
      503,
    );

    // imx: the task and the architecture (training YAML, fine-tune chain, or name).
    const imx = async (slug: string, task: string, trainArgs: Json | null) => {
      const created = await createModel(world, alice, { project: 'detector', model: slug });
      await sql('update models set task = $1, train_args = $2 where id = $3', [
        task,
        trainArgs && JSON.stringify(trainArgs),
        created.id,
      ]);
      return (await create({ format: 'imx' }, alice, `/api/models/alice/detector/${slug}/exports`)).body.error;
    };
    t.match(
      await imx('boxes', 'obb', { model: 'yolo11n-obb.yaml' }),
      /detect, segment, classify, pose models; this one is obb/,
    );
    t.match(await imx('newest', 'detect', { model: 'yolo26n.yaml' }), /YOLO26/);
    t.match(await imx('small', 'detect', { model: 'yolov8s.yaml' }), /only nano YOLOv8 or YOLO11|only nano YOLOv8/);
    t.match(
      await imx('tuned', 'detect', { model: 'ul://alice/detector/newest' }),
      /YOLO26/,
      'followed through the fine-tune',
    );
    t.match(
      await imx('my-yolo11m', 'segment', null),
      /only nano YOLO11 models \(this one is yolo11m\)/,
      'from its name',
    );
    t.match(
      await imx('nano', 'pose', { model: 'yolo11n-pose.yaml' }),
      /has no weights yet/,
      'a nano YOLO11 pose model passes the imx rules',
    );

    t.equal((await create({ format: 'onnx' }, bobby)).status, 404, "another workspace's private model");
    t.equal((await call(server, 'GET', base, { key: bobby })).status, 404);
  },
);

let host: WorkerClient;
let hostKey = '';
t.teardown(() => host?.ws.terminate());

t.test('503 names the toolchain no host offers, with the reason a host reported', async (t) => {
  const none = await create({ format: 'onnx' });
  t.equal(none.status, 503);
  t.match(none.body.error, /No worker host can export to onnx: no worker host is connected/);
  const { workerKey, hostId } = await enrollHost(server, 'export-box');
  hostKey = workerKey;
  const { client } = await WorkerClient.welcomed(server, workerKey);
  client.beat();
  host = client;
  client.send({
    type: 'capabilities',
    exporters: ['onnx', 'coreml', 'torchscript'],
    missingExporters: { openvino: 'openvino is not installed in the trainer image' },
  });
  await eventually(
    async () =>
      (await rowsOf<{ exporters: string[] }>('select exporters from hosts where id = $1', [hostId]))[0].exporters
        .length === 3,
    'the host’s exporters',
  );
  const missing = await create({ format: 'openvino' });
  t.equal(missing.status, 503);
  t.equal(
    missing.body.error,
    'No worker host can export to openvino: its trainer environment lacks the openvino toolchain (openvino is not installed in the trainer image)',
  );
  const engine = await create({ format: 'engine', gpuType: 'h100-sxm' });
  t.equal(engine.status, 503);
  t.match(engine.body.error, /h100-sxm GPU/);
});

/** What the agent does after `yolo export` exited 0: PUT the artifact through the agent route, with its worker key. */
async function uploadArtifact(jobId: string, bytes: Buffer): Promise<void> {
  const response = await fetch(
    `${server.url}${routePath(AGENT_ROUTES.output, { jobId, name: 'artifact' })}?attempt=1`,
    {
      method: 'PUT',
      headers: { authorization: `Bearer ${hostKey}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    },
  );
  if (!response.ok) throw new Error(`artifact upload: ${response.status} ${await response.text()}`);
}

/** The host takes the next assignment; the test plays its upload of the artifact and its report. */
async function runOnHost(
  outcome: 'completed' | 'failed',
  artifact?: Buffer,
): Promise<Extract<ServerMessage, { type: 'job.assign' }>> {
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  if (artifact) await uploadArtifact(assign.jobId, artifact);
  host.send(
    outcome === 'completed'
      ? { type: 'job.finished', jobId: assign.jobId, outcome, exitCode: 0 }
      : { type: 'job.finished', jobId: assign.jobId, outcome, exitCode: 1, error: 'exited with status 1' },
  );
  return assign;
}

const settled = (id: string, status: string) =>
  eventually(
    async () => ((await read(id)).body.export?.status === status ? (await read(id)).body.export : false),
    `export ${status}`,
  );
const onnxBytes = randomBytes(3000);
let onnxId = '';

t.test(
  'queued, starting, running from the job; 409 while in flight; completed with the uploaded artifact',
  async (t) => {
    const created = await create({
      format: 'onnx',
      args: { imgsz: [320, 320], quantize: 'fp16', simplify: true, nms: null, dynamic: true },
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    t.match(created.body, { format: 'onnx', status: 'queued', region: 'us', reused: false });
    t.notOk('gpuType' in created.body);
    onnxId = created.body.id;
    t.equal(
      (await create({ format: 'onnx', args: { dynamic: true, quantize: 16, imgsz: 320, nms: null } })).status,
      409,
      'the same export, spelled otherwise',
    );
    const assign = await host.nextOf('job.assign');
    t.same(assign.spec.command, [
      'yolo',
      'export',
      'model=shapes-yolo11n.pt',
      'format=onnx',
      'dynamic=True',
      'imgsz=320',
      'nms=None',
      'quantize=16',
      'device=cpu',
    ]);
    t.same(assign.spec.outputs, [{ path: 'shapes-yolo11n.onnx', name: 'artifact' }]);
    t.equal(assign.spec.inputs?.[0]?.path, 'shapes-yolo11n.pt');
    t.same(
      Buffer.from(await (await fetch(assign.spec.inputs![0]!.url)).arrayBuffer()),
      weights,
      'the input URL serves the weights',
    );
    t.match(assign.spec.env, { YOLO_OFFLINE: '1', YOLO_AUTOINSTALL: 'false' });
    t.equal(assign.spec.workDir, `exports/${assign.jobId}/1`);
    const starting = await read(onnxId);
    t.equal(starting.body.export?.status, 'starting', JSON.stringify(starting.body));
    host.send({ type: 'job.accepted', jobId: assign.jobId });
    await settled(onnxId, 'running');

    await uploadArtifact(assign.jobId, onnxBytes);
    host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'completed', exitCode: 0 });
    const done = await settled(onnxId, 'completed');
    t.match(done, {
      format: 'onnx',
      args: { dynamic: true, imgsz: 320, nms: null, quantize: 16 },
      file: { size: onnxBytes.length, downloadFilename: 'shapes-yolo11n.onnx' },
    });
    t.ok(done.startedAt && done.completedAt);
    t.same(
      Buffer.from(await (await fetch(done.file.downloadUrl)).arrayBuffer()),
      onnxBytes,
      'the download serves the artifact',
    );
    t.same(await storage(), { bytes: onnxBytes.length, count: 1 });
    const top = (await storageUsage('/api/storage?details=true')).breakdown.topItems;
    t.match(
      top.find((item) => item.type === 'export'),
      { _id: onnxId, name: 'shapes-yolo11n.onnx', sizeBytes: onnxBytes.length, parentSlug: 'shapes-yolo11n' },
    );
    const listed = ExportList.parse((await call(server, 'GET', `${base}?status=completed`, { key: alice })).body);
    t.same(
      listed.exports.map((e) => e.id),
      [onnxId],
    );
    t.equal(
      ExportList.parse((await call(server, 'GET', `${base}?status=queued`, { key: alice })).body).exports.length,
      0,
    );
    t.equal((await read(onnxId, bobby)).status, 404, 'tenant isolation');
  },
);

t.test('an equal export reuses the artifact: one file, counted once, deleted with its last export', async (t) => {
  const again = await create({ format: 'onnx', args: { dynamic: true, quantize: 16, imgsz: 320, nms: null } });
  t.equal(again.status, 201);
  t.match(again.body, { status: 'running', reused: true });
  t.not(again.body.id, onnxId);
  t.ok(await host.quiet(300), 'no job for a reuse');
  const reused = (await read(again.body.id)).body.export;
  t.match(reused, { status: 'completed', file: { size: onnxBytes.length, downloadFilename: 'shapes-yolo11n.onnx' } });
  t.same(await storage(), { bytes: onnxBytes.length, count: 1 }, 'counted once');

  t.same((await call(server, 'DELETE', `${base}/${onnxId}`, { key: alice })).body, {
    success: true,
    action: 'deleted',
  });
  t.equal((await read(onnxId)).status, 404);
  t.same(
    Buffer.from(await (await fetch(reused.file.downloadUrl)).arrayBuffer()),
    onnxBytes,
    'the sharer keeps the file',
  );
  t.same((await call(server, 'DELETE', `${base}/${again.body.id}`, { key: alice })).body, {
    success: true,
    action: 'deleted',
  });
  t.same(await storage(), { bytes: 0, count: 0 });
  t.equal((await fetch(reused.file.downloadUrl)).status, 404, 'the file is gone with its last export');
});

t.test('a job that completed without its artifact fails the export; a failed job gives its error', async (t) => {
  const created = await create({ format: 'torchscript' });
  t.equal(created.status, 201);
  await runOnHost('completed');
  t.match((await settled(created.body.id, 'failed')).error, {
    message: 'The export job ended without uploading the exported model',
  });
  const second = await create({ format: 'torchscript', args: { batch: 2 } });
  await runOnHost('failed');
  t.match((await settled(second.body.id, 'failed')).error.message, /exited with status 1/);
  t.notOk((await read(second.body.id)).body.export.file);
});

t.test('GET with wait holds the answer until the export ends, or until the seconds pass; 400 past 30', async (t) => {
  const created = await create({ format: 'torchscript', args: { batch: 3 } });
  t.equal(created.status, 201);
  const id = created.body.id;
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  await settled(id, 'running');
  const waitFor = (seconds: number) =>
    call<{ export: ExportBody; error: string }>(server, 'GET', `${base}/${id}?wait=${seconds}`, { key: alice });

  let started = performance.now();
  const timedOut = await waitFor(1);
  t.equal(timedOut.body.export.status, 'running', 'the status when the time is up');
  t.ok(performance.now() - started >= 950, 'held for the seconds asked');

  started = performance.now();
  let answered = false;
  const held = waitFor(30).finally(() => (answered = true));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.notOk(answered, 'no answer while the export runs');
  await uploadArtifact(assign.jobId, randomBytes(200));
  host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'completed', exitCode: 0 });
  const ended = await held;
  t.equal(ended.status, 200);
  t.match(ended.body.export, { status: 'completed', file: { size: 200 } }, 'answered with the end');
  t.ok(performance.now() - started < 10_000, 'as it ended, not when the 30 s were up');

  started = performance.now();
  t.equal((await waitFor(30)).body.export.status, 'completed');
  t.ok(performance.now() - started < 5000, 'an ended export is answered at once');
  for (const bad of [31, -1]) {
    const refused = await waitFor(bad);
    t.equal(refused.status, 400, `wait=${bad}`);
    t.match(refused.body.error, /wait/);
  }
});

t.test('DELETE cancels an active export through its job', async (t) => {
  const queued = await create({ format: 'coreml', args: { quantize: 8 } });
  t.equal(queued.status, 201);
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  await settled(queued.body.id, 'running');
  t.same((await call(server, 'DELETE', `${base}/${queued.body.id}`, { key: alice })).body, {
    success: true,
    action: 'cancelled',
  });
  const cancel = await host.nextOf('job.cancel');
  t.equal(cancel.jobId, assign.jobId, 'the host is told to stop it');
  host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'cancelled', exitCode: 143 });
  await settled(queued.body.id, 'cancelled');
  const [job] = await rowsOf<{ status: string }>('select status from jobs where id = $1', [assign.jobId]);
  t.equal(job.status, 'cancelled');
  t.equal(
    (await call(server, 'DELETE', `${base}/${queued.body.id}`, { key: alice })).body.action,
    'deleted',
    'a finished one is then deleted',
  );
});

t.test(
  'mobile links: a 24-hour signed link to a completed mobile export; tampered and expired links 403',
  async (t) => {
    const onnx = await create({ format: 'onnx' });
    await runOnHost('completed', randomBytes(100));
    await settled(onnx.body.id, 'completed');
    t.match(
      (await call<{ error: string }>(server, 'POST', `${base}/${onnx.body.id}/mobile`, { key: alice })).body.error,
      /mobile-compatible formats: coreml, coreai, litert/,
    );

    const bytes = randomBytes(2000);
    const coreml = await create({ format: 'coreml' });
    t.equal(
      (await call(server, 'POST', `${base}/${coreml.body.id}/mobile`, { key: alice })).status,
      409,
      'not completed yet',
    );
    const assign = await runOnHost('completed', bytes);
    t.same(
      assign.spec.outputs,
      [{ path: 'shapes-yolo11n.mlpackage', name: 'artifact' }],
      'a directory, zipped by the agent',
    );
    t.equal((await settled(coreml.body.id, 'completed')).file.downloadFilename, 'shapes-yolo11n.mlpackage.zip');

    const linked = await call(server, 'POST', `${base}/${coreml.body.id}/mobile`, { key: alice });
    t.equal(linked.status, 200);
    const link = MobileLink.parse(linked.body);
    const expiresIn = Date.parse(link.expiresAt) - Date.now();
    t.ok(expiresIn > 23.9 * 3600_000 && expiresIn <= 24 * 3600_000, '24 hours');
    const url = new URL(link.importUrl);
    t.equal(`${url.origin}${url.pathname}`, `${server.url}/api/mobile/models/${coreml.body.id}`);
    const fragment = new URLSearchParams(url.hash.slice(1));
    const body = { expires: Number(fragment.get('expires')), signature: fragment.get('signature') };
    const resolved = await call(server, 'POST', url.pathname, { body });
    t.equal(resolved.status, 200, JSON.stringify(resolved.body));
    t.match(resolved.body, {
      version: 1,
      exportId: coreml.body.id,
      name: 'shapes-yolo11n',
      task: 'detect',
      format: 'coreml',
      filename: 'shapes-yolo11n.mlpackage.zip',
      size: bytes.length,
      expiresAt: link.expiresAt,
    });
    t.same(
      Buffer.from(await (await fetch(MobileModel.parse(resolved.body).downloadUrl)).arrayBuffer()),
      bytes,
      'anyone with the link downloads it',
    );

    t.equal(
      (await call(server, 'POST', url.pathname, { body: { ...body, signature: `${body.signature}x` } })).status,
      403,
      'tampered',
    );
    t.equal(
      (await call(server, 'POST', `/api/mobile/models/${onnx.body.id}`, { body })).status,
      403,
      "another export's signature",
    );
    const past = new URL(server.storage.signer.sign('GET', url.pathname, new Date(Date.now() - 1000)));
    t.equal(
      (
        await call(server, 'POST', url.pathname, {
          body: { expires: Number(past.searchParams.get('expires')), signature: past.searchParams.get('signature') },
        })
      ).status,
      403,
      'expired',
    );
    t.equal(
      (await call(server, 'POST', `${base}/${coreml.body.id}/mobile`, { key: bobby })).status,
      404,
      'tenant isolation',
    );
  },
);

t.test('trashing the model cancels its active export; erasing it deletes its exports and their files', async (t) => {
  t.ok((await storage()).bytes > 0);
  const active = await create({ format: 'torchscript', args: { imgsz: 64 } });
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  await settled(active.body.id, 'running');
  t.equal((await call(server, 'DELETE', '/api/models/alice/detector/shapes-yolo11n', { key: alice })).status, 200);
  t.equal((await host.nextOf('job.cancel')).jobId, assign.jobId, 'trashing cancels it');
  host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'cancelled', exitCode: 143 });
  await eventually(
    async () =>
      (await rowsOf<{ status: string }>('select status from model_exports where id = $1', [active.body.id]))[0]
        .status === 'cancelled',
    'the export cancelled',
  );
  const erased = await call(server, 'DELETE', '/api/trash', {
    key: alice,
    body: { type: 'model', id: model.id },
  });
  t.equal(erased.status, 200, JSON.stringify(erased.body));
  t.same(await storage(), { bytes: 0, count: 0 }, 'their files are gone');
  t.equal(Number((await rowsOf<{ count: string }>('select count(*) from model_exports'))[0].count), 0);
});

t.test("trashing a project cancels its models' active exports", async (t) => {
  await createProject(world, alice, { project: 'doomed', name: 'Doomed' });
  const doomed = await createModel(world, alice, { project: 'doomed', model: 'doomed-model' });
  await uploadWeights(world, alice, doomed.id, randomBytes(512));
  const created = await create({ format: 'torchscript' }, alice, '/api/models/alice/doomed/doomed-model/exports');
  t.equal(created.status, 201);
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  t.equal((await call(server, 'DELETE', '/api/projects/alice/doomed', { key: alice })).status, 200);
  t.equal((await host.nextOf('job.cancel')).jobId, assign.jobId);
});
