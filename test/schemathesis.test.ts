// Fuzzing: schemathesis sends generated requests, valid and deliberately invalid, to every operation of the
// served /openapi.json. No answer may be a server error or differ from the schema documented for its status.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { RATE_CATEGORIES } from '@vp/config';
import t from 'tap';
import { EXPORT_FORMAT_IDS } from '../control-plane/src/exports/export-formats.ts';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { ingestArchive, uploadArchive } from './helpers/archives.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { shapesDataset } from './helpers/training-data.ts';
import { testHardware } from './helpers/worker-client.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const SCHEMATHESIS = new URL('../.venv-fuzz/bin/schemathesis', import.meta.url).pathname;
/** Cases per operation and phase; the coverage phase adds its own boundary cases on top. */
const MAX_EXAMPLES = 30;
/** schemathesis' budget for the whole run: it fuzzes on until it is spent, and stops there on a slow machine. */
const FUZZ_SECONDS = 150;
/** Fixed, with no example database kept between runs: the same cases on every run. */
const SEED = 20240611;
/** Past its budget, the run is stopped: the test must end inside tap's per-file timeout. */
const RUN_LIMIT_MS = (FUZZ_SECONDS + 60) * 1000;
const OWNER = 'acme-team';

/** Every category high: fuzzing sends thousands of requests with one key, and 429s would hide the answers. */
const UNLIMITED = Object.fromEntries(
  RATE_CATEGORIES.map((category) => [`RATE_LIMIT_${category.toUpperCase()}`, '100000000']),
);

async function ok<T = Record<string, unknown>>(world: World, method: string, path: string, body?: unknown): Promise<T> {
  const response = await call<T>(world.server, method, path, { key: world.team, body });
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/**
 * Real resources of every kind the paths name, made through the API, so generated requests reach the
 * handlers instead of stopping at 404. Destructive operations get resources of their own (see the config).
 */
async function seed(world: World) {
  const shapes = await createDataset(world, world.team, { dataset: 'shapes', name: 'shapes', task: 'detect' });
  const ingest = await ingestArchive(
    t,
    world,
    world.team,
    OWNER,
    'shapes',
    shapes,
    'shapes.zip',
    await shapesDataset(4, 2),
  );
  if (ingest.status !== 'completed') throw new Error(`seed ingest: ${ingest.status} ${ingest.error}`);
  await ok(world, 'POST', `/api/datasets/${OWNER}/shapes/export`, { description: 'first' });
  const images = await ok<{ images: Array<{ id: string }> }>(world, 'GET', `/api/datasets/${OWNER}/shapes/images`);
  // Class removal and restores change a dataset's images and classes: they work on a copy with a version of its own.
  await ok(world, 'POST', `/api/datasets/${OWNER}/shapes/clone`, { dataset: 'scratch' });
  await ok(world, 'POST', `/api/datasets/${OWNER}/scratch/export`, { description: 'first' });
  for (const dataset of ['renamed', 'doomed']) await createDataset(world, world.team, { dataset, name: dataset });
  const trashed = await createDataset(world, world.team, { dataset: 'trashed', name: 'trashed' });
  await ok(world, 'DELETE', `/api/datasets/${OWNER}/trashed`);
  const spare = await createDataset(world, world.team, { dataset: 'spare', name: 'spare' });
  const session = await uploadArchive(world, world.team, spare, 'later.zip', await shapesDataset(1, 0));

  for (const project of ['vision', 'renamed-project', 'doomed-project'])
    await createProject(world, world.team, { project, name: project });
  const detector = await createModel(world, world.team, { project: 'vision', model: 'detector', task: 'detect' });
  await uploadWeights(world, world.team, detector.id, Buffer.from('not really weights'));
  // Its automatic ONNX export, made: predict and auto-annotation answer instead of waiting for an export no host runs.
  await seedOnnxExport(world.server, detector.id, (await trainedModel('detect')).onnx);
  for (const model of ['renamed-model', 'doomed-model'])
    await createModel(world, world.team, { project: 'vision', model });
  // Predict has a trained model of its own with its ONNX export in place (fuzzed uploads may change the detector's weights).
  const fixture = await trainedModel('detect');
  const predictor = await createModel(world, world.team, {
    project: 'vision',
    model: 'predictor',
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, world.team, predictor.id, readFileSync(fixture.pt));
  await seedOnnxExport(world.server, predictor.id, fixture.onnx);

  for (const name of ['gpu-box', 'doomed-host']) await ok(world, 'POST', '/api/hosts', { name });
  // A connected pool host (no agent: it never heartbeats, so HOST_LOST_GRACE_SECONDS is long) exporting every format: exports queue there, never 503.
  const em = world.server.orm.em.fork();
  em.create(Host, {
    name: 'exporter',
    state: 'connected',
    hardware: { ...testHardware },
    workspace: null,
    lastHeartbeatAt: new Date(),
    exporters: [...EXPORT_FORMAT_IDS],
  });
  await em.flush();
  const agent = await ok<{ id: string }>(world, 'PUT', `/api/workflows?owner=${OWNER}`, {
    name: 'agent',
    graph: { nodes: [], edges: [] },
    version: 0,
  });
  return {
    images: images.images.map((image) => image.id),
    job: ingest.id,
    session,
    assets: [spare, detector.id],
    model: detector.id,
    ids: [trashed, agent.id],
  };
}

/**
 * Parameters and body fields that name resources: mostly a seeded one (a generated value otherwise), so
 * requests reach the handlers. Destructive operations get resources of their own, so the rest keep theirs.
 */
function config(seeded: Awaited<ReturnType<typeof seed>>): string {
  const dictionaries: Record<string, string[]> = {
    owners: [OWNER],
    datasets: ['shapes'],
    projects: ['vision'],
    models: ['detector'],
    images: seeded.images.slice(1),
    jobs: [seeded.job],
    sessions: [seeded.session],
    assets: seeded.assets,
    modelIds: [seeded.model],
    ids: seeded.ids,
    hosts: ['gpu-box'],
    users: ['alice', 'eddie', 'vicky'],
  };
  const bindings: Record<string, string> = {
    owner: 'owners',
    'path.dataset': 'datasets',
    'path.project': 'projects',
    'path.model': 'models',
    'path.imageId': 'images',
    'path.jobId': 'jobs',
    'path.sessionId': 'sessions',
    'path.name': 'hosts',
    'path.username': 'users',
    'query.id': 'ids',
    'body.id': 'ids',
    'body.imageIds[*]': 'images',
    'body.sessionId': 'sessions',
    'body.assetId': 'assets',
    'body.modelId': 'modelIds',
  };
  const pinned: Array<[string, string, Record<string, string>]> = [
    ['DELETE', '/api/datasets/{owner}/{dataset}', { owner: OWNER, dataset: 'doomed' }],
    ['PATCH', '/api/datasets/{owner}/{dataset}', { owner: OWNER, dataset: 'renamed' }],
    ['DELETE', '/api/projects/{owner}/{project}', { owner: OWNER, project: 'doomed-project' }],
    ['PATCH', '/api/projects/{owner}/{project}', { owner: OWNER, project: 'renamed-project' }],
    ['DELETE', '/api/models/{owner}/{project}/{model}', { owner: OWNER, project: 'vision', model: 'doomed-model' }],
    ['PATCH', '/api/models/{owner}/{project}/{model}', { owner: OWNER, project: 'vision', model: 'renamed-model' }],
    ['POST', '/api/datasets/{owner}/{dataset}/classes/delete', { owner: OWNER, dataset: 'scratch' }],
    ['POST', '/api/datasets/{owner}/{dataset}/classes/merge', { owner: OWNER, dataset: 'scratch' }],
    ['POST', '/api/datasets/{owner}/{dataset}/restore', { owner: OWNER, dataset: 'scratch' }],
    ['DELETE', '/api/images/{imageId}', { imageId: seeded.images[0] }],
    ['DELETE', '/api/hosts/{name}', { name: 'doomed-host' }],
    ['POST', '/api/models/{owner}/{project}/{model}/predict', { owner: OWNER, project: 'vision', model: 'predictor' }],
  ];
  const toml = (value: unknown) => JSON.stringify(value);
  return [
    '[dictionaries]',
    ...Object.entries(dictionaries).map(([name, values]) => `${name} = { values = [${values.map(toml).join(', ')}] }`),
    '[parameters]',
    ...Object.entries(bindings).map(
      ([key, dictionary]) => `${toml(key)} = { dictionary = ${toml(dictionary)}, probability = 0.9 }`,
    ),
    ...pinned.map(([method, path, parameters]) =>
      [
        '[[operations]]',
        // The name, "METHOD path": include-method and include-path would each select on their own.
        `include-name = ${toml(`${method} ${path}`)}`,
        `parameters = { ${Object.entries(parameters)
          .map(([name, value]) => `${toml(`path.${name}`)} = ${toml(value)}`)
          .join(', ')} }`,
      ].join('\n'),
    ),
    // Roboflow needs the internet: on this appliance a valid request's documented answer is 501, not a server failure.
    ...['preview', 'import'].map((operation) =>
      [
        '[[operations]]',
        `include-name = ${toml(`POST /api/integrations/roboflow/${operation}`)}`,
        `checks.not_a_server_error.expected-statuses = ${toml(['2xx', '3xx', '4xx', '501'])}`,
      ].join('\n'),
    ),
  ].join('\n');
}

function schemathesis(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      SCHEMATHESIS,
      args,
      { cwd, timeout: RUN_LIMIT_MS, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({
          code,
          output: `${stdout}${stderr}${error?.killed ? `\nkilled after ${RUN_LIMIT_MS / 1000} s` : ''}`,
        });
      },
    );
  });
}

t.test('schemathesis finds no server error and no answer outside its documented schema', async (t) => {
  if (!existsSync(SCHEMATHESIS)) {
    t.fail(`schemathesis is not installed at .venv-fuzz/: run .ci/run (it installs it) before this test`);
    return;
  }
  const world = await startWorld(t, { ...UNLIMITED, HOST_LOST_GRACE_SECONDS: '3600' });
  const seeded = await seed(world);
  const dir = mkdtempSync(join(tmpdir(), 'vp-fuzz-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'schemathesis.toml'), config(seeded));
  const { code, output } = await schemathesis(
    [
      '--config-file',
      join(dir, 'schemathesis.toml'),
      'run',
      `${world.server.url}/openapi.json`,
      '-H',
      `Authorization: Bearer ${world.team}`,
      '--checks',
      'not_a_server_error,response_schema_conformance',
      '--max-examples',
      String(MAX_EXAMPLES),
      '--max-time',
      String(FUZZ_SECONDS),
      '--seed',
      String(SEED),
      '--generation-database',
      'none',
      // One worker: the same order every run, and Python 3.11's parser is not safe to use from two threads at once.
      '--workers',
      '1',
      '--request-timeout',
      '30',
      '--no-color',
    ],
    dir,
  );
  // The report without the progress display: from its first section (FAILURES, ERRORS, WARNINGS or SUMMARY) on.
  const plain = stripVTControlCharacters(output);
  const report = plain.slice(Math.max(0, plain.search(/^=+ [A-Z]+ =+$/m)));
  const cases = /(\d+) generated/.exec(report)?.[1];
  t.comment(`schemathesis ran ${cases ?? 'an unknown number of'} test cases`);
  t.equal(code, 0, 'schemathesis reports no failure and no error');
  if (code !== 0) t.comment(report);
  const selected = /Selected: (\d+)\/(\d+)/.exec(report);
  t.ok(selected && selected[1] === selected[2], 'every operation is selected');
  t.equal(/Tested: (\d+)/.exec(report)?.[1], selected?.[2], 'every operation is tested');
  t.ok(Number(cases) > 0, 'cases ran');
});
