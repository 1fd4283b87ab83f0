// Datasets of pictures for the similar-images tests: ingested through the API, then analyzed (embedded) by the real
// image embedder.
import type { Test } from 'tap';
import { ingestArchive, waitForJob, zipOf } from './archives.ts';
import { call } from './server.ts';
import { createDataset, type World } from './world.ts';

/** A dataset with these files (a name without a split folder goes to train), analyzed unless told otherwise. */
export async function pictureDataset(
  t: Test,
  world: World,
  key: string,
  at: { owner: string; slug: string },
  files: Record<string, Buffer>,
  options: { visibility?: string; analyze?: boolean } = {},
): Promise<string> {
  const { owner, slug } = at;
  const id = await createDataset(world, key, {
    dataset: slug,
    name: slug,
    ...(options.visibility ? { visibility: options.visibility } : {}),
  });
  const entries = Object.fromEntries(
    Object.entries(files).map(([name, bytes]) => [`images/${name.includes('/') ? name : `train/${name}`}`, bytes]),
  );
  const ingested = await ingestArchive(t, world, key, owner, slug, id, `${slug}.zip`, await zipOf(entries));
  if (ingested.status !== 'completed') throw new Error(`ingest ${slug}: ${ingested.status} ${ingested.error}`);
  if (options.analyze !== false) await analyze(t, world, key, owner, slug);
  return id;
}

/** Runs the dataset's analysis to its end. */
export async function analyze(t: Test, world: World, key: string, owner: string, slug: string): Promise<void> {
  const started = await call<{ jobId: string }>(world.server, 'POST', `/api/datasets/${owner}/${slug}/embeddings`, {
    key,
  });
  if (started.status !== 202) throw new Error(`analyze ${slug}: ${started.status} ${JSON.stringify(started.body)}`);
  const job = await waitForJob(t, world, key, started.body.jobId, { seconds: 120 });
  if (job.status !== 'completed') throw new Error(`analysis of ${slug}: ${job.status} ${job.error}`);
}

/** The dataset's image of that name. */
export async function imageNamed(
  world: World,
  key: string,
  owner: string,
  slug: string,
  name: string,
): Promise<{ id: string; hash: string }> {
  const listed = await call<{ images: Array<{ id: string; name: string; hash: string }> }>(
    world.server,
    'GET',
    `/api/datasets/${owner}/${slug}/images`,
    { key },
  );
  const found = listed.body.images.find((image) => image.name === name);
  if (!found) throw new Error(`${name} not in ${owner}/${slug}`);
  return found;
}
