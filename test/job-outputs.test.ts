// The agent's output uploads against a stand-in control plane (an HTTP server in this file) that fails on purpose:
// transient failures (5xx, a dropped connection) are retried with the same bytes, a refusal (4xx) is final and
// named, a job the control plane does not see on the host (404: the host reconnecting) is tried again until it does,
// and an abort (a cancel, the agent stopping) ends the upload.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';

type Fixtures = Pick<typeof t, 'teardown' | 'testdir'>;
import { OutputError, uploadOutputs } from '../worker-agent/src/job-outputs.ts';
import type { Logger } from '../worker-agent/src/log.ts';

async function body(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** Answers each PUT with the next of `answers` (a status, or 'drop' to cut the connection); records what arrived. */
async function standIn(t: Fixtures, answers: Array<number | 'drop'>) {
  const received: Array<{ url: string; length: string | undefined; body: string }> = [];
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const status = answers.shift() ?? 200;
    if (status === 'drop') return request.socket.destroy();
    received.push({ url: request.url!, length: request.headers['content-length'], body: await body(request) });
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(status === 200 ? { success: true } : { error: `refused with ${status}` }));
  };
  const server = createServer((request, response) => void answer(request, response));
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  t.teardown(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function job(t: Fixtures, signal = new AbortController().signal) {
  const workRoot = t.testdir();
  mkdirSync(join(workRoot, 'jobs/x'), { recursive: true });
  writeFileSync(join(workRoot, 'jobs/x/best.onnx'), 'the model');
  const said: string[] = [];
  const warnings: string[] = [];
  const log: Logger = (_level, msg) => warnings.push(msg);
  const files = { workDir: 'jobs/x', outputs: [{ path: 'best.onnx', name: 'best.onnx' }] };
  return {
    workRoot,
    said,
    warnings,
    log,
    upload: { jobId: 'job-1', attempt: 2, files, say: (line: string) => said.push(line), signal },
  };
}

/** An upload to a stand-in answering `answers`, cancelled after `ms`: rejected, and how long after the cancel was asked. */
async function cancelledAfter(t: Fixtures & Pick<Test, 'rejects'>, answers: Array<number | 'drop'>, ms: number) {
  const server = await standIn(t, answers);
  const abort = new AbortController();
  const cancelled = job(t, abort.signal);
  const upload = uploadOutputs(
    { server: server.url, workerKey: 'vpw_key', workRoot: cancelled.workRoot, log: cancelled.log },
    cancelled.upload,
  );
  setTimeout(() => abort.abort('cancelled by a user'), ms);
  const started = Date.now();
  await t.rejects(upload);
  return { server, waitedMs: Date.now() - started };
}

t.test('transient failures are retried with the same bytes until one is stored', async (t) => {
  const server = await standIn(t, [503, 'drop', 200]);
  const { workRoot, said, warnings, log, upload } = job(t);
  await uploadOutputs({ server: server.url, workerKey: 'vpw_key', workRoot, log }, upload);
  t.same(
    server.received,
    [
      { url: '/api/workers/jobs/job-1/outputs/best.onnx?attempt=2', length: '9', body: 'the model' },
      { url: '/api/workers/jobs/job-1/outputs/best.onnx?attempt=2', length: '9', body: 'the model' },
    ],
    'the refused try and the stored one (the dropped one never answered)',
  );
  t.same(said, ['uploading best.onnx (9 B)', 'uploaded best.onnx']);
  t.equal(warnings.filter((msg) => msg.includes('retrying')).length, 2);
});

t.test('a refusal is final and named; an abort ends the upload', async (t) => {
  const server = await standIn(t, [409]);
  const refused = job(t);
  await t.rejects(
    uploadOutputs(
      { server: server.url, workerKey: 'vpw_key', workRoot: refused.workRoot, log: refused.log },
      refused.upload,
    ),
    new OutputError('uploading best.onnx failed: HTTP 409: refused with 409'),
  );
  t.equal(server.received.length, 1, 'not tried again');

  const { server: stalled, waitedMs } = await cancelledAfter(t, [503, 503, 503], 200);
  t.ok(waitedMs < 2000, `not after all the retries (${stalled.received.length} tried)`);
});

t.test('a cancel while its files are being removed ends the upload, and nothing else is tried', async (t) => {
  const server = await standIn(t, [503]);
  const abort = new AbortController();
  const { workRoot, log, upload } = job(t, abort.signal);
  const uploading = uploadOutputs({ server: server.url, workerKey: 'vpw_key', workRoot, log }, upload);
  // The first try is refused (503) and a retry waits; meanwhile the job is cancelled and its work dir cleaned up.
  while (server.received.length === 0) await delay(10);
  rmSync(join(workRoot, 'jobs'), { recursive: true });
  abort.abort('cancelled by a user');
  await t.rejects(uploading);
  await delay(1500);
  t.equal(server.received.length, 1, 'no try after the cancel');
});

t.test(
  'a job the control plane does not see on this host (404, its host reconnecting) is uploaded once it does; a cancel ends the wait',
  async (t) => {
    const server = await standIn(t, [404, 200]);
    const { workRoot, said, warnings, log, upload } = job(t);
    await uploadOutputs({ server: server.url, workerKey: 'vpw_key', workRoot, log }, upload);
    t.equal(server.received.length, 2, 'tried again after the 404');
    t.same(said, ['uploading best.onnx (9 B)', 'uploaded best.onnx']);
    t.equal(warnings.filter((msg) => msg.includes('does not see the job')).length, 1);

    const { server: never, waitedMs } = await cancelledAfter(t, [404, 404, 404, 404], 300);
    t.ok(waitedMs < 1500, 'the cancel ends the wait at once');
    t.equal(never.received.length, 1, 'no upload after the cancel');
  },
);
