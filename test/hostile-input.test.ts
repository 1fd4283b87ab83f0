// Hostile input found by the security review: each once answered 500 (or a bare 431). Every one is now a
// 400 (431) with `{ error }` that says what is wrong, and nothing is changed.
import { request } from 'node:http';
import t from 'tap';
import { ingestArchive, zipOf } from './helpers/archives.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const world = await startWorld(t);
const datasetId = await createDataset(world, world.alice, {
  dataset: 'cats',
  name: 'Cats',
  metadata: { origin: 'camera' },
});
const detail = async () =>
  (
    await call<{ dataset: Record<string, unknown> }>(world.server, 'GET', '/api/datasets/alice/cats', {
      key: world.alice,
    })
  ).body.dataset;
const before = await detail();

/** `{ "a": { "a": ... 1 } }`, `depth` objects deep. */
const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
};

t.test('NUL and lone surrogates in any text field or key of a JSON body are 400, and nothing is stored', async (t) => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ name: 'Ca\u0000ts' }, /^body\.name: must not contain the NUL character/],
    [{ description: 'half a pair \ud800' }, /^body\.description: is not valid Unicode: it contains a lone surrogate/],
    [{ description: 'a low half alone \udc00 too' }, /^body\.description: is not valid Unicode/],
    [
      { metadata: { notes: ['fine', 'not\u0000fine'] } },
      /^body\.metadata\.notes\.1: must not contain the NUL character/,
    ],
    [{ metadata: { 'key\u0000': 1 } }, /^body\.metadata: a key must not contain the NUL character/],
    [{ metadata: { '\udfff': 1 } }, /^body\.metadata: a key is not valid Unicode/],
  ];
  for (const [body, message] of cases) {
    expectError(
      t,
      await call(world.server, 'PATCH', '/api/datasets/alice/cats', { key: world.alice, body }),
      400,
      message,
    );
  }
  t.same(await detail(), before, 'the dataset is unchanged');
  const created = await call(world.server, 'POST', '/api/datasets', {
    key: world.alice,
    body: { dataset: 'dogs', name: 'Do\u0000gs' },
  });
  expectError(t, created, 400, /^body\.name: must not contain the NUL character/);
  t.equal(
    (await call(world.server, 'GET', '/api/datasets/alice/dogs', { key: world.alice })).status,
    404,
    'no dataset was created',
  );
  // A well-formed pair (an emoji) is ordinary text.
  t.equal(
    (
      await call(world.server, 'PATCH', '/api/datasets/alice/cats', {
        key: world.alice,
        body: { description: 'cats 🐈' },
      })
    ).status,
    200,
  );
});

t.test('NUL in the search and q query parameters, and in a path segment, is 400', async (t) => {
  for (const query of ['search=whis%00kers', 'q=%00', 'q=abc%00def']) {
    const name = query.split('=')[0];
    expectError(
      t,
      await call(world.server, 'GET', `/api/datasets/alice/cats/images?${query}`, { key: world.alice }),
      400,
      new RegExp(`^query\\.${name}: must not contain the NUL character`),
    );
  }
  expectError(
    t,
    await call(world.server, 'GET', '/api/projects/alice/any?search=%00', { key: world.alice }),
    400,
    /^query\.search: must not contain the NUL/,
  );
  expectError(
    t,
    await call(world.server, 'GET', '/api/datasets/alice/ca%00ts', { key: world.alice }),
    400,
    /^path\.dataset: must not contain the NUL/,
  );
});

t.test('metadata nested 5,000 deep is 400; metadata is bounded to 32 levels', async (t) => {
  // Written as text: JSON.stringify itself cannot walk 5,000 levels.
  const rawBody = `{"metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`;
  const deep = await call(world.server, 'PATCH', '/api/datasets/alice/cats', { key: world.alice, rawBody });
  expectError(t, deep, 400, /^body\.metadata(\.a)+\.…: nested deeper than 64 levels$/);
  expectError(
    t,
    await call(world.server, 'PATCH', '/api/datasets/alice/cats', { key: world.alice, body: { metadata: nested(33) } }),
    400,
    /^body\.metadata(\.a)+\.…: nested deeper than 32 levels$/,
  );
  const project = await call(world.server, 'POST', '/api/projects', {
    key: world.alice,
    body: { project: 'deep', name: 'Deep', metadata: nested(40) },
  });
  expectError(t, project, 400, /^body\.metadata(\.a)+\.…: nested deeper than 32 levels$/);
  t.equal(
    (await call(world.server, 'GET', '/api/projects/alice/deep', { key: world.alice })).status,
    404,
    'no project was created',
  );
  t.same((await detail()).metadata, before.metadata, 'the metadata is unchanged');
  t.equal(
    (
      await call(world.server, 'PATCH', '/api/datasets/alice/cats', {
        key: world.alice,
        body: { metadata: nested(32) },
      })
    ).status,
    200,
    '32 levels are accepted',
  );
  t.same((await detail()).metadata, nested(32));
});

t.test('integers beyond what the database holds are 400, in the query and in a body', async (t) => {
  for (const classIds of ['99999999999999999999', '2147483648', '1,2147483648']) {
    expectError(
      t,
      await call(world.server, 'GET', `/api/datasets/alice/cats/images?classIds=${classIds}`, { key: world.alice }),
      400,
      /^query\.classIds\.\d: must be an integer from -2147483648 to 2147483647$/,
    );
  }
  t.equal(
    (await call(world.server, 'GET', '/api/datasets/alice/cats/images?classIds=2147483647', { key: world.alice }))
      .status,
    200,
    'the largest integer is a valid filter',
  );
  expectError(
    t,
    await call(world.server, 'GET', '/api/datasets/alice/cats/images?offset=99999999999999999999', {
      key: world.alice,
    }),
    400,
    /^query\.offset: must be an integer from/,
  );
  const merge = await call(world.server, 'POST', '/api/datasets/alice/cats/classes/merge', {
    key: world.alice,
    body: { sourceClassIds: [0], targetClassId: 2 ** 31 },
  });
  expectError(t, merge, 400, /^body\.targetClassId: must be an integer from/);
});

t.test('headers over the size limit get 431 with a JSON error body', async (t) => {
  const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
    const url = new URL('/api/health', world.server.url);
    const req = request(url, { headers: { 'x-padding': 'a'.repeat(64 * 1024) } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(answer.status, 431);
  t.match(answer.type, /^application\/json/);
  t.same(JSON.parse(answer.body), { error: 'Request headers larger than 16384 bytes' });
  t.equal((await call(world.server, 'GET', '/api/health')).status, 200, 'the server answers the next request');
});

t.test('a file that is not an image gets an error that says so', async (t) => {
  const good = await shapeImage();
  const zip = await zipOf({
    'images/notes.jpg': 'meeting notes, not a picture',
    'images/empty.png': Buffer.alloc(0),
    'images/cut.png': good.bytes.subarray(0, good.bytes.length - 40),
    'images/ok.png': good.bytes,
  });
  const job = await ingestArchive(t, world, world.alice, 'alice', 'cats', datasetId, 'mixed.zip', zip);
  t.equal(job.status, 'completed', String(job.error));
  const listing = await call<{ images: Array<{ name: string; error: string | null }> }>(
    world.server,
    'GET',
    '/api/datasets/alice/cats/images',
    { key: world.alice },
  );
  const errors = Object.fromEntries(listing.body.images.map((image) => [image.name, image.error]));
  t.same(errors, {
    'notes.jpg': 'Could not decode image: the file is not an image in a supported format (such as JPEG, PNG or WebP)',
    'empty.png': 'Could not decode image: the file is empty',
    'cut.png': 'Could not decode image: the image data is damaged or incomplete (for example cut off while copying)',
    'ok.png': null,
  });
});
