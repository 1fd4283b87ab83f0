// What the auto-annotation tests share: a trained fixture model uploaded to a project (its export registered with the
// FixturePredictor), pictures drawn by the generator it was trained on, and datasets of them without labels.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { ingestArchive, zipOf } from './archives.ts';
import type { FixturePredictor } from './fixture-predictor.ts';
import { createModel, createProject, uploadWeights } from './models.ts';
import { call } from './server.ts';
import type { World } from './world.ts';
import {
  runCommand,
  trainedModel,
  trainerEnv,
  TRAINER_VENV,
  type FixtureTask,
  type TrainedModel,
} from './yolo-models.ts';

const GENERATOR = new URL('../inference/make_dataset.py', import.meta.url).pathname;

export interface Picture {
  name: string;
  bytes: Buffer;
}

/** `count` pictures of the fixture generator's task (a seed other than the training one: unseen, alike). */
export async function generatorPictures(task: FixtureTask, count: number, seed = 31): Promise<Picture[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-pictures-'));
  try {
    await runCommand(
      join(TRAINER_VENV, 'bin/python'),
      [GENERATOR, task, dir, '--train', String(count), '--val', '1', '--seed', String(seed)],
      { cwd: dir, env: trainerEnv(join(dir, 'settings')) },
    );
    const images = join(dir, 'images/train');
    return readdirSync(images)
      .sort()
      .map((name) => ({ name: `p${name}`, bytes: readFileSync(join(images, name)) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The parity fixtures are barely trained; auto-annotation tests need a model that finds the shapes with confidence. */
export const annotatingModel = (task: FixtureTask) =>
  trainedModel(task, undefined, { imgsz: 96, epochs: 40, pictures: 48 });

export interface UploadedModel extends TrainedModel {
  id: string;
  uri: string;
}

/** The fixture model of `task` as model `slug` of project `project` (created when missing), trained size recorded; its export registered with `predictor` when given. */
export async function uploadFixtureModel(
  world: World,
  predictor: FixturePredictor | null,
  key: string,
  owner: string,
  project: string,
  slug: string,
  task: FixtureTask,
): Promise<UploadedModel> {
  const trained = await annotatingModel(task);
  await createProject(world, key, { project, name: project }).catch(() => undefined);
  const { id } = await createModel(world, key, {
    project,
    model: slug,
    name: slug,
    task,
    trainArgs: { imgsz: trained.imgsz },
  });
  await uploadWeights(world, key, id, readFileSync(trained.pt));
  predictor?.register(id, trained.onnx);
  return { ...trained, id, uri: `ul://${owner}/${project}/${slug}` };
}

/** A dataset of unlabeled pictures (ingested as a YOLO archive with data.yaml names and no label files); returns its id. */
export async function picturesDataset(
  t: Test,
  world: World,
  key: string,
  owner: string,
  slug: string,
  body: { task: string; classNames: string[] },
  pictures: Picture[],
): Promise<string> {
  const created = await call<{ id: string }>(world.server, 'POST', '/api/datasets', {
    key,
    body: { dataset: slug, name: slug, ...body },
  });
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
  const listed = await call<{ images: ImageRow[] }>(
    world.server,
    'GET',
    `/api/datasets/${owner}/${slug}/images?sort=name-asc&limit=1000`,
    { key },
  );
  if (listed.status !== 200) throw new Error(`list images: ${listed.status} ${JSON.stringify(listed.body)}`);
  return listed.body.images;
}
