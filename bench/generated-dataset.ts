// The generated dataset bench:ingest and bench:embed share: noisy 640×480 JPEGs with one box each, in a YOLO ZIP.
import { createWriteStream, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import sharp from 'sharp';
import yazl from 'yazl';
import { putFile } from './lib.ts';

/** Runs `task` over 0..count-1, `width` at a time. */
export async function pool(count: number, width: number, task: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** A few noisy backgrounds (so JPEGs have realistic sizes), made once. */
const backgrounds = Promise.all(
  Array.from({ length: 8 }, (_, k) =>
    sharp({
      create: {
        width: 640,
        height: 480,
        channels: 3,
        background: '#000',
        noise: { type: 'gaussian', mean: 96 + 8 * k, sigma: 40 },
      },
    })
      .raw()
      .toBuffer(),
  ),
);

/** Picture i: a noisy background with one box, and its YOLO line. */
export async function picture(i: number): Promise<{ jpeg: Buffer; label: string }> {
  const [w, h] = [80 + (i % 200), 60 + ((i * 7) % 150)];
  const [left, top] = [(i * 37) % (640 - w), (i * 53) % (480 - h)];
  const background = (await backgrounds)[i % 8];
  const box = {
    create: { width: w, height: h, channels: 3 as const, background: { r: (i * 13) % 255, g: 40, b: 90 } },
  };
  const jpeg = await sharp(background, { raw: { width: 640, height: 480, channels: 3 } })
    .composite([{ input: box, left, top }])
    .jpeg({ quality: 85 })
    .toBuffer();
  const line = [i % 5, (left + w / 2) / 640, (top + h / 2) / 480, w / 640, h / 480]
    .map((v, k) => (k ? v.toFixed(6) : String(v)))
    .join(' ');
  return { jpeg, label: `${line}\n` };
}

/** A ZIP at `path` of `count` pictures in the YOLO layout (80% train); the JPEGs, by index. */
export async function buildZip(path: string, count: number): Promise<Buffer[]> {
  const zip = new yazl.ZipFile();
  const done = new Promise<void>((resolve, reject) =>
    zip.outputStream.pipe(createWriteStream(path)).on('close', resolve).on('error', reject),
  );
  zip.addBuffer(Buffer.from('names: [a, b, c, d, e]\n'), 'data.yaml');
  const jpegs = Array.from<Buffer>({ length: count });
  await pool(count, availableParallelism(), async (i) => {
    const { jpeg, label } = await picture(i);
    jpegs[i] = jpeg;
    const split = i % 10 < 8 ? 'train' : 'val';
    zip.addBuffer(jpeg, `images/${split}/${i}.jpg`, { compress: false });
    zip.addBuffer(Buffer.from(label), `labels/${split}/${i}.txt`);
    if (i % 1000 === 999) process.stderr.write(`  generated ${i + 1}\n`);
  });
  zip.end();
  await done;
  return jpegs;
}

/** An API call with the key; its JSON body, or an error with the status. */
export async function api<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Uploads an archive for the dataset through the signed-URL API; the upload session to ingest from. */
export async function uploadArchive(base: string, key: string, datasetId: string, zipPath: string): Promise<string> {
  const ticket = await api<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    base,
    key,
    'POST',
    '/api/upload/signed-url',
    {
      assetType: 'datasets',
      assetId: datasetId,
      filename: 'bench.zip',
      contentType: 'application/zip',
      totalBytes: statSync(zipPath).size,
    },
  );
  await putFile(ticket.uploadUrl, ticket.headers, zipPath);
  return ticket.sessionId;
}

export interface BenchJob {
  status: string;
  error: string | null;
  result: Record<string, unknown> | null;
  progress: { percent: number } | null;
}

/** A new dataset (`fields`: its slug, name, …) filled from the ZIP through the upload and ingest APIs; its id. */
export async function ingestedDataset(
  base: string,
  key: string,
  owner: string,
  zipPath: string,
  fields: { dataset: string; name: string; task?: string; classNames?: string[] },
): Promise<string> {
  const { id } = await api<{ id: string }>(base, key, 'POST', '/api/datasets', fields);
  const sessionId = await uploadArchive(base, key, id, zipPath);
  const { jobId } = await api<{ jobId: string }>(base, key, 'POST', `/api/datasets/${owner}/${fields.dataset}/ingest`, {
    sessionId,
  });
  const job = await jobEnded(base, key, jobId, `ingest ${fields.dataset}`);
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
  return id;
}

/** Polls a job until it has ended, its percent on stderr every 10%; the job as it ended. */
export async function jobEnded(base: string, key: string, jobId: string, label: string): Promise<BenchJob> {
  let shown = -1;
  for (;;) {
    const { job } = await api<{ job: BenchJob }>(base, key, 'GET', `/api/jobs/${jobId}`);
    if (!['queued', 'running'].includes(job.status)) return job;
    const percent = job.progress?.percent ?? 0;
    if (percent >= shown + 10) process.stderr.write(`  ${label} ${(shown = percent)}%\n`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
