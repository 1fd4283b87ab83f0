// The inference server's embed command (what an embedding-chunk host job runs), as a host runs it in the job's work dir:
// asked for CUDA on this machine (no GPU, no CUDA provider) it embeds on the CPU and says why; an image it cannot
// download or decode is reported at its place and passed over; the vectors equal the control plane's own embedder's;
// bad settings or a bad manifest end it with a non-zero exit and the reason in its log.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@vp/config';
import t, { type Test } from 'tap';
import { ImageEmbedder } from '../control-plane/src/embeddings/image-embedder.ts';
import { spawnKept } from './helpers/agent.ts';
import { pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';

const MAIN = new URL('../inference-server/src/main.ts', import.meta.url).pathname;
const config = loadConfig({});
const files = await pictures(seededRandom(3), 2);
const served: Record<string, Buffer> = {
  '/p0.png': files[0]!,
  '/p1.png': files[1]!,
  '/text.png': Buffer.from('not an image'),
};
const http = createServer((req, res) => {
  const body = served[req.url ?? ''];
  if (!body) res.writeHead(404).end();
  else res.writeHead(200, { 'content-length': body.length }).end(body);
});
await new Promise<void>((listening) => http.listen(0, '127.0.0.1', listening));
t.teardown(() => http.close());
const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

/** Runs the command in a work dir of its own with the manifest; its exit code, log and work dir. */
async function embed(t: Test, manifest: unknown, env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vp-embed-command-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'manifest.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  const settings = {
    VP_MODEL_FILE: config.embeddingModelPath!,
    VP_EMBED_MANIFEST: 'manifest.json',
    VP_EMBED_MEAN: config.embeddingMean.join(','),
    VP_EMBED_STD: config.embeddingStd.join(','),
    VP_DEVICE: 'cuda',
    VP_INTRA_OP_THREADS: '1',
  };
  const run = spawnKept(t, process.execPath, [MAIN, 'embed'], {
    cwd: dir,
    env: { ...process.env, ...settings, ...env },
  });
  return { code: await run.exited, log: run.output(), dir };
}

t.test("asked for CUDA without it: the CPU, said; failures at their place; the control plane's vectors", async (t) => {
  const images = ['/p0.png', '/missing.png', '/text.png', '/p1.png'].map((path) => ({ url: `${origin}${path}` }));
  const { code, log, dir } = await embed(t, { images });
  t.equal(code, 0, log);
  const result = JSON.parse(readFileSync(join(dir, 'embeddings.json'), 'utf8')) as Record<string, unknown>;
  t.match(result, {
    device: 'cpu',
    deviceNote: /CUDA provider did not load.*ONNXRUNTIME_NODE_INSTALL=cuda12/,
    dims: 1280,
  });
  t.match(result.images, [null, { stage: 'download', reason: 'HTTP 404' }, { stage: 'decode' }, null]);
  const bytes = readFileSync(join(dir, 'vectors.f32'));
  t.equal(bytes.length, 2 * 1280 * 4, 'two vectors');
  const vectors = new Float32Array(new Uint8Array(bytes).buffer);
  const embedder = new ImageEmbedder({
    modelPath: config.embeddingModelPath,
    mean: config.embeddingMean,
    std: config.embeddingStd,
  });
  t.teardown(() => embedder.close());
  const local = (await embedder.embed(files)) as Float32Array[];
  local.forEach((mine, n) => {
    const cosine = mine.reduce((sum, value, i) => sum + value * vectors[n * 1280 + i]!, 0);
    t.ok(cosine > 0.9999, `p${n}: the control plane's vector (cosine ${cosine})`);
  });
});

t.test('bad settings or a bad manifest: a non-zero exit with the reason', async (t) => {
  const unset = await embed(t, { images: [] }, { VP_EMBED_MEAN: '' });
  t.equal(unset.code, 2);
  t.match(unset.log, /invalid settings: VP_EMBED_MEAN/);
  const notJson = await embed(t, '{"images": [');
  t.equal(notJson.code, 1);
  t.match(notJson.log, /embedding failed: .*JSON/);
  const tooMany = await embed(t, { images: Array.from({ length: 257 }, () => ({ url: `${origin}/p0.png` })) });
  t.equal(tooMany.code, 1);
  t.match(tooMany.log, /invalid manifest: images/);
});
