// Paging through a dataset while images keep arriving: every image that existed when paging began
// comes back exactly once, by cursor (any sort) and by offset (oldest first).
import t from 'tap';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface Page {
  images: Array<{ id: string }>;
  hasMore: boolean;
  nextCursor?: string;
  total: number;
}

async function addImages(world: World, datasetId: string, count: number, prefix: string): Promise<string[]> {
  const images = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      shapeImage({ width: 16 + (i % 7), height: 16 + (i % 5), box: [2, 2, 4, 4] }),
    ),
  );
  return world.server.services().imageIntake.add(
    datasetId,
    images.map((image, i) => ({ bytes: image.bytes, filename: `${prefix}-${String(i).padStart(3, '0')}.png` })),
  );
}

t.test('pages return each image exactly once while images are added', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'stream', name: 'Stream' });
  const original = new Set(await addImages(world, datasetId, 60, 'first'));
  const get = (query: string) =>
    call<Page>(world.server, 'GET', `/api/datasets/alice/stream/images?${query}`, { key: world.alice });

  for (const sort of ['newest', 'oldest', 'name-asc', 'width-desc', 'size-asc']) {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = (await get(`limit=7&sort=${sort}${cursor ? `&cursor=${cursor}` : ''}`)).body;
      seen.push(...page.images.map((image) => image.id));
      cursor = page.nextCursor ?? null;
      t.equal(page.hasMore, cursor !== null);
      pages += 1;
      // Concurrent arrivals, between pages.
      if (pages % 3 === 0) await addImages(world, datasetId, 2, `${sort}-${pages}`);
    } while (cursor);
    const originals = seen.filter((id) => original.has(id));
    t.equal(originals.length, original.size, `${sort}: every original image was returned`);
    t.equal(new Set(seen).size, seen.length, `${sort}: no image twice`);
  }

  const seen: string[] = [];
  for (let offset = 0, more = true; more; offset += 9) {
    const page = (await get(`limit=9&offset=${offset}&sort=oldest&includeTotal=false`)).body;
    seen.push(...page.images.map((image) => image.id));
    more = page.hasMore;
    await addImages(world, datasetId, 1, `offset-${offset}`);
  }
  t.equal(
    seen.filter((id) => original.has(id)).length,
    original.size,
    'offset pages (oldest first) return every original image',
  );
  t.equal(new Set(seen).size, seen.length, 'offset pages never repeat an image');
});
