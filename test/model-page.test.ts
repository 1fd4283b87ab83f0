// The page behind the "View results at <appliance>/owner/project/model" link the trainer prints: a browser gets HTML,
// its script and style, and the API reads the script makes (anonymous for a public project, a key otherwise) answer.
import { Script } from 'node:vm';
import t from 'tap';
import { createModel, createProject } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

const world = await startWorld(t);
const { server, alice } = world;
await createProject(world, alice, { project: 'public-detector', name: 'Public', visibility: 'public' });
await createProject(world, alice, { project: 'detector', name: 'Private' });
await createModel(world, alice, { project: 'public-detector', model: 'm1', metrics: { 'metrics/mAP50(B)': 0.5 } });
await createModel(world, alice, { project: 'detector', model: 'm2' });

t.test("the trainer's link answers a page a person can read, not a JSON 404", async (t) => {
  for (const path of ['/alice/public-detector/m1', '/alice/detector/m2', '/alice/detector/m2/']) {
    const page = await fetch(`${server.url}${path}`);
    t.equal(page.status, 200, path);
    t.match(page.headers.get('content-type'), /^text\/html/);
    t.match(page.headers.get('content-security-policy'), /default-src 'self'/, 'no script but its own');
    const html = await page.text();
    t.match(html, /<script src="\/model-page\/page\.js"><\/script>/);
    t.match(html, /<label for="key">/, 'the key field is labelled');
  }
  const script = await fetch(`${server.url}/model-page/page.js`);
  t.equal(script.status, 200);
  t.match(script.headers.get('content-type'), /javascript/);
  const source = await script.text();
  t.match(source, /'\/api\/models\/'/, 'it reads the public API');
  t.doesNotThrow(() => new Script(source), 'the script parses');
  t.match((await fetch(`${server.url}/model-page/style.css`)).headers.get('content-type'), /text\/css/);
});

t.test('what the page reads: a public model anonymously, a private one only with a key of its workspace', async (t) => {
  t.match(await call(server, 'GET', '/api/models/alice/public-detector/m1'), {
    status: 200,
    body: { model: { status: String } },
  });
  t.equal((await call(server, 'GET', '/api/models/alice/public-detector/m1/training')).status, 200);
  const hidden = await call(server, 'GET', '/api/models/alice/detector/m2');
  t.ok([401, 404].includes(hidden.status), `anonymous: ${hidden.status}`);
  t.equal(
    (await call(server, 'GET', '/api/models/alice/detector/m2', { key: world.bobby })).status,
    404,
    "another workspace's key",
  );
  t.equal((await call(server, 'GET', '/api/models/alice/detector/m2', { key: alice })).status, 200);
});

t.test('the API, signed file URLs and other paths are not taken by the page', async (t) => {
  for (const path of ['/files/ws/abc/image.jpg', '/reference-files/ws/abc', '/svc/abc/health']) {
    t.notMatch((await fetch(`${server.url}${path}`)).headers.get('content-type') ?? '', /text\/html/, path);
  }
  const api = await call(server, 'GET', '/api/nothing/here/at-all');
  t.equal(api.status, 404);
  t.match(api.body, { error: String });
  t.equal((await fetch(`${server.url}/alice/detector`)).status, 404, 'two segments are not a model');
  t.equal((await fetch(`${server.url}/alice/detector/m2`, { method: 'POST' })).status, 404, 'only GET');
});
