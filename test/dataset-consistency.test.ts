// Counts and class IDs stay true: a seeded random walk of label edits, class merges and deletes,
// split moves, deletes and redistributions, checked against an independent model of the labels
// (by class name) and against the rows; then the same writes all at once.
import t from 'tap';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { shapeImage } from './helpers/images.ts';
import { seededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const SPLITS = ['train', 'val', 'test'] as const;

async function seedImages(world: World, datasetId: string, count: number): Promise<string[]> {
  const images = await Promise.all(
    Array.from({ length: count }, () => shapeImage({ width: 32, height: 32, box: [4, 4, 8, 8] })),
  );
  return world.server.services().imageIntake.add(
    datasetId,
    images.map((image, i) => ({ bytes: image.bytes, filename: `img-${i}.png`, split: SPLITS[i % 3] })),
  );
}

t.test('random walk: every count and class ID consistent with an independent model', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const seed = Number(process.env.WALK_SEED ?? 20261122);
  const rng = seededRandom(seed);
  t.comment(`seed ${seed}`);
  let classNames = Array.from({ length: 8 }, (_, i) => `class-${i}`);
  const datasetId = await createDataset(world, alice, { dataset: 'walk', name: 'Walk', classNames });
  let imageIds = await seedImages(world, datasetId, 24);
  // The model: each image's labels as class names, in order.
  const model = new Map<string, string[]>(imageIds.map((id) => [id, []]));
  const box = (i: number) => [0.5, 0.5, 0.1 + (i % 5) * 0.01, 0.2];

  for (let step = 0; step < 60; step += 1) {
    const roll = rng.next();
    if (roll < 0.45) {
      const id = rng.pick(imageIds);
      const names = Array.from({ length: rng.int(5) }, () => rng.pick(classNames));
      const response = await call(server, 'PATCH', `/api/images/${id}`, {
        key: alice,
        body: { labels: names.map((name, i) => ({ classId: classNames.indexOf(name), bbox: box(i) })) },
      });
      t.equal(response.status, 200, `step ${step}: label edit`);
      model.set(id, names);
    } else if (roll < 0.55 && classNames.length > 3) {
      const [target, ...sources] = [...new Set(Array.from({ length: 3 }, () => rng.int(classNames.length)))];
      if (sources.length === 0) continue;
      const response = await call<{ classNames: string[]; summary: { targetClassId: number } }>(
        server,
        'POST',
        '/api/datasets/alice/walk/classes/merge',
        {
          key: alice,
          body: { sourceClassIds: sources, targetClassId: target },
        },
      );
      t.equal(response.status, 200, `step ${step}: merge`);
      const targetName = classNames[target];
      const sourceNames = new Set(sources.map((id) => classNames[id]));
      for (const [id, names] of model)
        model.set(
          id,
          names.map((name) => (sourceNames.has(name) ? targetName : name)),
        );
      classNames = classNames.filter((name) => !sourceNames.has(name));
      t.same(response.body.classNames, classNames, 'merge removes the sources');
      t.equal(
        response.body.classNames[response.body.summary.targetClassId],
        targetName,
        'targetClassId is the shifted index',
      );
    } else if (roll < 0.65 && classNames.length > 3) {
      const doomed = [...new Set([rng.int(classNames.length), rng.int(classNames.length)])];
      const response = await call<{ classNames: string[]; summary: { deletedAnnotations: number } }>(
        server,
        'POST',
        '/api/datasets/alice/walk/classes/delete',
        { key: alice, body: { classIds: doomed } },
      );
      t.equal(response.status, 200, `step ${step}: delete classes`);
      const doomedNames = new Set(doomed.map((id) => classNames[id]));
      let expectedDeleted = 0;
      for (const [id, names] of model) {
        const kept = names.filter((name) => !doomedNames.has(name));
        expectedDeleted += names.length - kept.length;
        model.set(id, kept);
      }
      classNames = classNames.filter((name) => !doomedNames.has(name));
      t.same(response.body.classNames, classNames);
      t.equal(
        response.body.summary.deletedAnnotations,
        expectedDeleted,
        'deletedAnnotations counts the removed labels',
      );
    } else if (roll < 0.75) {
      const chosen = [...new Set(Array.from({ length: 4 }, () => rng.pick(imageIds)))];
      const response = await call(server, 'PATCH', '/api/images/bulk', {
        key: alice,
        body: { imageIds: chosen, split: rng.pick([...SPLITS]), conflictPolicy: 'keep_both' },
      });
      t.equal(response.status, 200, `step ${step}: move`);
    } else if (roll < 0.8 && imageIds.length > 8) {
      const id = rng.pick(imageIds);
      t.equal(
        (await call(server, 'DELETE', `/api/images/${id}`, { key: alice })).status,
        200,
        `step ${step}: delete image`,
      );
      imageIds = imageIds.filter((other) => other !== id);
      model.delete(id);
    } else if (roll < 0.85) {
      const train = rng.int(60);
      const response = await call(server, 'POST', '/api/datasets/alice/walk/splits/redistribute', {
        key: alice,
        body: { train, val: 100 - train - 10, test: 10 },
      });
      t.equal(response.status, 200, `step ${step}: redistribute`);
    } else if (roll < 0.9) {
      classNames = [...classNames, `added-${step}`];
      t.equal(
        (await call(server, 'PATCH', '/api/datasets/alice/walk', { key: alice, body: { classNames } })).status,
        200,
        `step ${step}: add a class`,
      );
    } else {
      const [added] = await seedImages(world, datasetId, 1);
      imageIds.push(added);
      model.set(added, []);
    }
  }

  await checkDatasetInvariants(t, server, datasetId);
  const read = await call<{ dataset: { classNames: string[]; imageCount: number; annotationCount: number } }>(
    server,
    'GET',
    '/api/datasets/alice/walk',
    { key: alice },
  );
  t.same(read.body.dataset.classNames, classNames, 'class list as the model says');
  t.equal(read.body.dataset.imageCount, model.size);
  t.equal(
    read.body.dataset.annotationCount,
    [...model.values()].reduce((sum, names) => sum + names.length, 0),
  );
  for (const [id, names] of model) {
    const image = await call<{ labels: Array<{ classId: number }>; classNames: string[] }>(
      server,
      'GET',
      `/api/images/${id}`,
      { key: alice },
    );
    t.same(
      image.body.labels.map((label) => image.body.classNames[label.classId]),
      names,
      `labels of ${id} name the same classes as the model`,
    );
  }
});

t.test('concurrent writes keep the counters exact', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const datasetId = await createDataset(world, alice, { dataset: 'busy', name: 'Busy', classNames: ['a', 'b', 'c'] });
  const imageIds = await seedImages(world, datasetId, 30);
  const rng = seededRandom(7);
  const writes = Array.from({ length: 60 }, (_, i) => {
    const id = imageIds[i % imageIds.length];
    switch (i % 6) {
      case 0:
      case 1:
        return call(server, 'PATCH', `/api/images/${id}`, {
          key: alice,
          body: {
            labels: Array.from({ length: 1 + rng.int(4) }, () => ({ classId: rng.int(3), bbox: [0.5, 0.5, 0.2, 0.2] })),
          },
        });
      case 2:
        return call(server, 'PATCH', '/api/images/bulk', {
          key: alice,
          body: { imageIds: [id, imageIds[(i + 7) % 30]], split: SPLITS[i % 3], conflictPolicy: 'keep_both' },
        });
      case 3:
        return call(server, 'DELETE', `/api/images/${imageIds[29 - (i % 10)]}`, { key: alice });
      case 4:
        return seedImages(world, datasetId, 2);
      default:
        return call(server, 'PATCH', `/api/images/${id}`, { key: alice, body: { labels: [] } });
    }
  });
  const results = await Promise.all(writes);
  for (const result of results)
    if (!Array.isArray(result))
      t.ok([200, 404].includes(result.status), 'each write succeeds (or finds the image already deleted)');
  await checkDatasetInvariants(t, server, datasetId);
});
