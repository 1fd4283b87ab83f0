// What the auto-annotation tests share: a trained fixture model uploaded to a project (its export registered with the
// FixturePredictor), pictures drawn by the generator it was trained on, and datasets of them without labels.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Test } from 'tap';
import { normalizeArgs } from '../../control-plane/src/exports/export-args.ts';
import { insertExport } from '../../control-plane/src/exports/export.store.ts';
import { Model } from '../../control-plane/src/models/model.entity.ts';
import { onnxExportArgs } from '../../control-plane/src/predict/onnx-export.ts';
import { ingestArchive, zipOf } from './archives.ts';
import type { FixturePredictor } from './fixture-predictor.ts';
import { createModel, createProject, uploadWeights } from './models.ts';
import { call } from './server.ts';
import type { World } from './world.ts';
import { runCommand, trainedModel, trainerEnv, TRAINER_VENV, type FixtureTask, type TrainedModel } from './yolo-models.ts';

const GENERATOR = new URL('../inference/make_dataset.py', import.meta.url).pathname;

export interface Picture {
  name: string;
  bytes: Buffer;
}

/** `count` pictures of the fixture generator's task (a seed other than the training one: unseen, alike). */
export async function generatorPictures(task: FixtureTask, count: number, seed = 31): Promise<Picture[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-pictures-'));
  try {
    await runCommand(join(TRAINER_VENV, 'bin/python'), [GENERATOR, task, dir, '--train', String(count), '--val', '1', '--seed', String(seed)], { cwd: dir, env: trainerEnv(join(dir, 'settings')) });
    const images = join(dir, 'images/train');
    return readdirSync(images)
      .sort()
      .map((name) => ({ name: `p${name}`, bytes: readFileSync(join(images, name)) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface UploadedModel extends TrainedModel {
  id: string;
  uri: string;
}

/** The fixture model of `task` as model `slug` of project `project` (created when missing), trained size recorded; its export registered with `predictor` when given. */
export async function uploadFixtureModel(world: World, predictor: FixturePredictor | null, key: string, owner: string, project: string, slug: string, task: FixtureTask): Promise<UploadedModel> {
  const trained = await trainedModel(task);
  await createProject(world, key, { project, name: project }).catch(() => undefined);
  const { id } = await createModel(world, key, { project, model: slug, name: slug, task, trainArgs: { imgsz: trained.imgsz } });
  await uploadWeights(world, key, id, readFileSync(trained.pt));
  predictor?.register(id, trained.onnx);
  return { ...trained, id, uri: `ul://${owner}/${project}/${slug}` };
}

/**
 * The model's automatic ONNX export as completed, its artifact the fixture's export: what a worker host would have left
 * (no host runs here), so that the server's own Predictor finds it, as for a model that got weights and was exported.
 * `weights`: the bytes uploaded as the model's weights (the export is matched by their SHA-256).
 */
export async function seedOnnxExport(world: World, model: { id: string; weights: Buffer; onnx: string }): Promise<void> {
  const em = world.server.orm.em.fork() as EntityManager;
  const row = await em.findOneOrFail(Model, model.id, { populate: ['workspace'] });
  const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
  const onnx = readFileSync(model.onnx);
  const args = normalizeArgs('onnx', onnxExportArgs(row));
  const weightsSha256 = sha256(model.weights);
  // As ExportService.newExport fingerprints an export: the weights, the format, the args, the GPU type.
  const fingerprint = createHash('sha256').update(JSON.stringify([weightsSha256, 'onnx', args, null])).digest('hex');
  const key = `ws/${row.workspace.id}/exports/fixture/${model.id}.onnx`;
  await world.server.storage.store.put(key, Readable.from([onnx]), { contentType: 'application/octet-stream', expectedBytes: onnx.length });
  await insertExport(
    em,
    { workspaceId: row.workspace.id, modelId: row.id, format: 'onnx', args, gpuType: null, weightsKey: row.fileKey!, weightsSha256, fingerprint },
    { key, size: onnx.length, sha256: sha256(onnx), name: `${row.slug}.onnx` },
  );
}

/** A dataset of unlabeled pictures (ingested as a YOLO archive with data.yaml names and no label files); returns its id. */
export async function picturesDataset(t: Test, world: World, key: string, owner: string, slug: string, body: { task: string; classNames: string[] }, pictures: Picture[]): Promise<string> {
  const created = await call<{ id: string }>(world.server, 'POST', '/api/datasets', { key, body: { dataset: slug, name: slug, ...body } });
  if (created.status !== 201) throw new Error(`create dataset: ${created.status} ${JSON.stringify(created.body)}`);
  const yaml = `names:\n${body.classNames.map((name, index) => `  ${index}: ${name}`).join('\n')}\n`;
  const files: Record<string, Buffer | string> = { 'data.yaml': yaml };
  for (const picture of pictures) files[`images/train/${picture.name}`] = picture.bytes;
  const job = await ingestArchive(t, world, key, owner, slug, created.body.id, 'pictures.zip', await zipOf(files));
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
  return created.body.id;
}

export interface ImageRow {
  id: string;
  name: string;
  labelCount: number;
}

/** The dataset's images, oldest first. */
export async function imagesOf(world: World, key: string, owner: string, slug: string): Promise<ImageRow[]> {
  const listed = await call<{ images: ImageRow[] }>(world.server, 'GET', `/api/datasets/${owner}/${slug}/images?sort=name-asc&limit=1000`, { key });
  if (listed.status !== 200) throw new Error(`list images: ${listed.status} ${JSON.stringify(listed.body)}`);
  return listed.body.images;
}
