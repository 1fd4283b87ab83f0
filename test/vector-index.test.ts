// The vector index kept between runs (VectorIndex with a dir): a new process loads the saved index and reads only the
// vectors written since; a damaged file, or a database that is not the one it was saved from, means a rebuild.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { vectorOf } from '../control-plane/src/embeddings/embeddings.store.ts';
import { VectorIndex } from '../control-plane/src/embeddings/vector-index.ts';
import { pictureDataset } from './helpers/analyzed.ts';
import { pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { startWorld } from './helpers/world.ts';

const world = await startWorld(t);
const { server } = world;
const random = seededRandom(47);
const dir = mkdtempSync(join(tmpdir(), 'vp-vector-index-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const sql = async <T>(text: string, params: unknown[] = []) =>
  server.orm.em.fork().getConnection().execute<T[]>(text, params);
const fork = () => server.orm.em.fork();
const stored = async () => (await sql<{ n: number }>('select count(*)::int as n from image_embeddings'))[0].n;

await pictureDataset(
  t,
  world,
  world.alice,
  { owner: 'alice', slug: 'first' },
  Object.fromEntries((await pictures(random, 6)).map((png, i) => [`p-${i}.png`, png])),
);
const [{ model_id: modelId, vector }] = await sql<{ model_id: string; vector: Buffer }>(
  'select model_id, vector from image_embeddings order by seq limit 1',
);
const probe = vectorOf(vector);
const about = () =>
  JSON.parse(
    readFileSync(
      join(
        dir,
        readdirSync(dir).find((name) => name.endsWith('.json'))!,
      ),
      'utf8',
    ),
  ) as { watermark: string; modelId: string };
const search = (index: VectorIndex) => index.nearest(modelId, probe, 3);

t.test('a search saves the index; a new process loads it and adds only what was written since', async (t) => {
  const first = await search(new VectorIndex(fork, { dir, saveAfter: 1 }));
  t.equal(first.size, 6);
  t.same(readdirSync(dir).filter((name) => !name.endsWith('.partial')).length, 2, 'the index and what it holds');
  t.equal(about().modelId, modelId);
  const [{ seq: newest }] = await sql<{ seq: string }>('select max(seq)::text as seq from image_embeddings');
  t.equal(about().watermark, newest, 'saved with its watermark');

  // A vector deleted behind the saved index's back (not the watermark's): a rebuild would not hold it, the loaded file does.
  await sql(`delete from image_embeddings where seq = (select min(seq) from image_embeddings)`);
  const loaded = await search(new VectorIndex(fork, { dir, saveAfter: 1 }));
  t.equal(loaded.size, 6, 'loaded from the file, not rebuilt from PostgreSQL (which holds 5)');
  t.same(
    loaded.neighbours.map((n) => n.seq),
    first.neighbours.map((n) => n.seq),
    'the same neighbours',
  );

  await pictureDataset(
    t,
    world,
    world.alice,
    { owner: 'alice', slug: 'second' },
    Object.fromEntries((await pictures(random, 3)).map((png, i) => [`q-${i}.png`, png])),
  );
  t.equal(
    (await search(new VectorIndex(fork, { dir, saveAfter: 1 }))).size,
    9,
    'the 3 written since are read and added',
  );
});

t.test('a damaged file is rebuilt from PostgreSQL, and saved again', async (t) => {
  const file = join(
    dir,
    readdirSync(dir).find((name) => name.endsWith('.usearch'))!,
  );
  writeFileSync(file, readFileSync(file).subarray(0, 100));
  t.equal((await search(new VectorIndex(fork, { dir, saveAfter: 1 }))).size, await stored(), 'what PostgreSQL holds');
  t.equal((await search(new VectorIndex(fork, { dir, saveAfter: 1 }))).size, await stored(), 'the saved rebuild loads');
});

t.test(
  "a database that is not the file's (another vector at the watermark, as after a restore) is rebuilt",
  async (t) => {
    await search(new VectorIndex(fork, { dir, saveAfter: 1 }));
    await sql(`delete from image_embeddings where seq = (select min(seq) from image_embeddings)`);
    const [{ seq }] = await sql<{ seq: string }>('select max(seq)::text as seq from image_embeddings');
    await sql('update image_embeddings set vector = ? where seq = ?', [
      Buffer.from(new Float32Array(probe.length).fill(1 / Math.sqrt(probe.length)).buffer),
      seq,
    ]);
    t.equal(
      (await search(new VectorIndex(fork, { dir, saveAfter: 1 }))).size,
      await stored(),
      'rebuilt: the deleted vector is not held',
    );
  },
);

t.test('without a dir nothing is saved; below saveAfter nothing is saved', async (t) => {
  const other = mkdtempSync(join(tmpdir(), 'vp-vector-index-'));
  t.teardown(() => rmSync(other, { recursive: true, force: true }));
  await search(new VectorIndex(fork));
  t.equal((await search(new VectorIndex(fork, { dir: other, saveAfter: 1000 }))).size, await stored());
  t.same(readdirSync(other), [], 'fewer changes than saveAfter: no file');
});
