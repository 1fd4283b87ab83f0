import { createHash } from 'node:crypto';
import type { Test } from 'tap';
import yazl from 'yazl';
import { call } from './server.ts';
import type { World } from './world.ts';

/**
 * A ZIP holding the given files. yazl refuses unsafe names, so `unsafe` maps a safe placeholder name
 * to the hostile name of the same length, patched into the finished archive's headers.
 */
export async function zipOf(files: Record<string, Buffer | string>, unsafe: Record<string, string> = {}): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [path, content] of Object.entries(files)) zip.addBuffer(Buffer.isBuffer(content) ? content : Buffer.from(content), path);
  zip.end();
  let archive = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
  for (const [placeholder, hostile] of Object.entries(unsafe)) {
    if (placeholder.length !== hostile.length) throw new Error('a hostile name must be as long as its placeholder');
    archive = Buffer.from(archive.toString('latin1').split(placeholder).join(hostile), 'latin1');
  }
  return archive;
}

/** Uploads a file for a dataset through the signed-URL API; returns the session id. */
export async function uploadArchive(world: World, key: string, datasetId: string, filename: string, bytes: Buffer): Promise<string> {
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(world.server, 'POST', '/api/upload/signed-url', {
    key,
    body: { assetType: 'datasets', assetId: datasetId, filename, contentType: 'application/octet-stream', totalBytes: bytes.length },
  });
  if (ticket.status !== 200) throw new Error(`signed-url: ${ticket.status} ${JSON.stringify(ticket.body)}`);
  const put = await fetch(ticket.body.uploadUrl, { method: 'PUT', headers: ticket.body.headers, body: bytes });
  if (put.status !== 200) throw new Error(`upload PUT: ${put.status} ${await put.text()}`);
  const complete = await call(world.server, 'POST', '/api/upload/complete', { key, body: { sessionId: ticket.body.sessionId, md5: createHash('md5').update(bytes).digest('hex') } });
  if (complete.status !== 200) throw new Error(`complete: ${complete.status}`);
  return ticket.body.sessionId;
}

export interface JobView {
  id: string;
  status: string;
  error: string | null;
  progress: { stage: string; percent: number; processed?: number; total?: number } | null;
  result: Record<string, any> | null;
}

/** Polls a job until it has ended (or `until` says so), failing the test after `seconds`. */
export async function waitForJob(t: Test, world: World, key: string, jobId: string, options: { seconds?: number; until?: (job: JobView) => boolean } = {}): Promise<JobView> {
  const deadline = Date.now() + (options.seconds ?? 60) * 1000;
  const until = options.until ?? ((job: JobView) => ['completed', 'failed', 'cancelled'].includes(job.status));
  for (;;) {
    const response = await call<{ job: JobView }>(world.server, 'GET', `/api/jobs/${jobId}`, { key });
    if (response.status !== 200) throw new Error(`job read: ${response.status} ${JSON.stringify(response.body)}`);
    if (until(response.body.job)) return response.body.job;
    if (Date.now() > deadline) {
      t.fail(`job ${jobId} still ${response.body.job.status} after ${options.seconds ?? 60} s`);
      return response.body.job;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts an ingest of an uploaded archive and waits for its job. */
export async function ingestArchive(t: Test, world: World, key: string, owner: string, slug: string, datasetId: string, filename: string, bytes: Buffer, options: Record<string, unknown> = {}): Promise<JobView> {
  const sessionId = await uploadArchive(world, key, datasetId, filename, bytes);
  const started = await call<{ jobId: string; status: string }>(world.server, 'POST', `/api/datasets/${owner}/${slug}/ingest`, { key, body: { sessionId, ...options } });
  if (started.status !== 201) throw new Error(`ingest: ${started.status} ${JSON.stringify(started.body)}`);
  return waitForJob(t, world, key, started.body.jobId);
}
