// Predicts racing the automatic ONNX export against a real control plane: one equivalent export in flight per workspace
// (the unique index model_exports_one_in_flight) is joined, never a 500: a model whose own export was cancelled follows
// its clone's, and predicts (and the automatic exports they ask for) arriving at once all wait on one export.
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import t from 'tap';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { onnxExportArgs } from '../control-plane/src/predict/onnx-export.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

const world = await startWorld(t, {
  PREDICT_EXPORT_WAIT_SECONDS: '1',
  RATE_LIMIT_PREDICT: '1000',
  RATE_LIMIT_MUTATION: '1000',
});
const { server, alice } = world;
await createProject(world, alice, { project: 'vision', name: 'vision' });
// A host that offers onnx but never runs anything: exports are queued and stay so.
const em = server.orm.em.fork();
em.create(Host, {
  name: 'idle-exporter',
  state: 'connected',
  hardware: { cpu: { model: 'x', cores: 2 }, memoryBytes: 2 ** 33, diskFreeBytes: 2 ** 36, cpuOnly: true, gpus: [] },
  workspace: null,
  lastHeartbeatAt: new Date(),
  exporters: ['onnx'],
});
await em.flush();

const picture = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } })
  .jpeg()
  .toBuffer();
type Export = { id: string; status: string };

async function predict(slug: string): Promise<{ status: number; error: string }> {
  const form = new FormData();
  form.append('file', new Blob([picture], { type: 'image/jpeg' }), 'image.jpg');
  const response = await fetch(`${server.url}/api/models/alice/vision/${slug}/predict`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}` },
    body: form,
  });
  return { status: response.status, error: ((await response.json()) as { error: string }).error };
}

const exportsOf = async (slug: string) =>
  (await call<{ exports: Export[] }>(server, 'GET', `/api/models/alice/vision/${slug}/exports`, { key: alice })).body
    .exports;

/** A model with weights of its own whose automatic export (queued on upload) was cancelled: no artifact, nothing in flight. */
async function withCancelledExport(slug: string): Promise<string> {
  const model = await createModel(world, alice, { project: 'vision', model: slug, task: 'detect' });
  await uploadWeights(world, alice, model.id, randomBytes(2048));
  const [automatic] = await exportsOf(slug);
  if (automatic?.status !== 'queued')
    throw new Error(`expected the automatic export queued: ${JSON.stringify(automatic)}`);
  const cancelled = await call(server, 'DELETE', `/api/models/alice/vision/${slug}/exports/${automatic.id}`, {
    key: alice,
  });
  if (cancelled.status !== 200) throw new Error(`cancel: ${cancelled.status} ${JSON.stringify(cancelled.body)}`);
  return model.id;
}

t.test("a model whose export was cancelled follows its clone's export in flight", async (t) => {
  await withCancelledExport('original');
  const clone = await call(server, 'POST', '/api/models/alice/vision/original/clone', {
    key: alice,
    body: { project: 'vision', model: 'copy' },
  });
  t.equal(clone.status, 201, JSON.stringify(clone.body));
  const [cloneExport] = await exportsOf('copy');
  t.equal(cloneExport?.status, 'queued', "the clone's weights queued its own export");

  const onClone = await predict('copy');
  t.equal(onClone.status, 503);
  t.match(onClone.error, `export ${cloneExport!.id}, needed for predict) is still queued`);
  const onOriginal = await predict('original');
  t.equal(onOriginal.status, 503, 'not a 500');
  t.match(
    onOriginal.error,
    `export ${cloneExport!.id}, needed for predict) is still queued`,
    "it waits on the clone's export",
  );
  t.strictSame(
    (await exportsOf('original')).map((e) => e.status),
    ['cancelled'],
    'no second export was queued',
  );
});

t.test('predicts arriving at once on a model without an artifact all wait on one export', async (t) => {
  await withCancelledExport('burst');
  const answers = await Promise.all(Array.from({ length: 8 }, () => predict('burst')));
  const listed = await exportsOf('burst');
  t.strictSame(
    listed.map((e) => e.status),
    ['queued', 'cancelled'],
    'one export was queued',
  );
  for (const answer of answers) {
    t.equal(answer.status, 503, answer.error);
    t.match(answer.error, `export ${listed[0]!.id}, needed for predict) is still queued`);
  }
});

t.test(
  "the automatic export asked for at once (each predict's request) queues one, and every caller follows it",
  async (t) => {
    const modelId = await withCancelledExport('together');
    const automatic = async () => {
      const services = server.services();
      const model = await (services.em as EntityManager).findOneOrFail(Model, modelId, { populate: ['workspace'] });
      return services.exports.automatic(model, 'onnx', onnxExportArgs(model));
    };
    const followed = await Promise.all(Array.from({ length: 8 }, automatic));
    const listed = await exportsOf('together');
    t.strictSame(
      listed.map((e) => e.status),
      ['queued', 'cancelled'],
      'one export was queued',
    );
    t.strictSame(
      followed.map((record) => record.id),
      Array(8).fill(listed[0]!.id),
      'each caller got it',
    );
  },
);
