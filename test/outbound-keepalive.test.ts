// The control plane's requests to user-given addresses share one outbound policy per process, so its keep-alive
// agents work: predicts with a URL source, one after another, reach the source over one connection, not one each.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import t from 'tap';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { startWorld } from './helpers/world.ts';

const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.2', RATE_LIMIT_PREDICT: '1000' });
const { server, alice } = world;
await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, { project: 'vision', model: 'detector', task: 'detect' });
await uploadWeights(world, alice, model.id, randomBytes(2048));

const picture = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } })
  .jpeg()
  .toBuffer();
let connections = 0;
const source = createServer((_request, response) =>
  response.writeHead(200, { 'content-type': 'image/jpeg' }).end(picture),
);
source.on('connection', () => connections++);
await new Promise<void>((resolve) => source.listen(0, '127.0.0.2', resolve));
t.teardown(
  () =>
    new Promise<void>((resolve) => {
      source.closeAllConnections();
      source.close(() => resolve());
    }),
);
const url = `http://127.0.0.2:${(source.address() as AddressInfo).port}/picture.jpg`;

t.test('predicts with a URL source reuse one kept-alive connection to it', async (t) => {
  for (let i = 0; i < 3; i++) {
    const form = new FormData();
    form.append('source', url);
    const response = await fetch(`${server.url}/api/models/alice/vision/detector/predict`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
      body: form,
    });
    const body = (await response.json()) as { error: string };
    // No worker host can make the model's ONNX export: the image was fetched, then the predict answers 503.
    t.equal(response.status, 503, body.error);
    t.match(body.error, /No worker host can export to onnx/);
  }
  t.equal(connections, 1, 'one connection for the three downloads');
});
