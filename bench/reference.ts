/**
 * `npm run bench:reference`: BENCH_IMAGES (10,000) 640×480 JPEGs with YOLO labels in a bucket of a real S3 server
 * (SeaweedFS) are indexed in place by a real control plane: a storage integration is connected and an ingest by
 * reference runs into a new dataset; printed: images/s from the ingest request to the job's completion.
 *
 * The ceiling, in the same run: the bound on any indexing that makes thumbnails here. A bare listing of the prefix
 * and a read of every object (labels included) with the AWS SDK, as many reads at a time as the appliance uses, runs
 * at C images/s; decoding alone as the appliance does (hash, header, 256 px WebP thumbnail; a sample of the images,
 * in memory, as many at a time) at D; both need the same cores, so no indexing can pass 1 / (1/C + 1/D). Rounds
 * alternate the bound and an ingest (BENCH_ROUNDS, 3); the ratio is the median of the rounds' ratios, with its spread.
 *
 * Target (issue 40): indexing ≥ 75% of the bound. Environment: BENCH_IMAGES, BENCH_ROUNDS, TEST_PG_URL,
 * BENCH_SERVER_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`).
 * Everything is stopped and dropped at the end; exit status 1 when something failed. Figures go to a JSON file (see recordResult).
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { decodeImage } from '../control-plane/src/images/image-decode.ts';
import { startS3Process, type S3Process } from '../test/helpers/s3-server.ts';
import { api, jobEnded, picture, pool } from './generated-dataset.ts';
import {
  adminQuery,
  median,
  positiveInt,
  ratioOfRounds,
  recordResult,
  runBenchmark,
  spreadText,
  startControlPlane,
  stopChild,
  type Figure,
  SERVER_NODE_ARGS,
} from './lib.ts';

const IMAGES = positiveInt('BENCH_IMAGES', 10_000);
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
const TARGET_RATIO = 0.75;
/** Reads in flight in the ceiling: as many as the ingest's workers (ingest-staging.ts), twice the cores. */
const READS_IN_FLIGHT = 2 * availableParallelism();
const PREFIX = 'set/';

const database = `vp_bench_reference_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-reference-'));
let s3: S3Process | undefined;

/** Images decoded in memory for the bound: enough for a steady rate, few enough to hold (about 150 KB each). */
const DECODE_SAMPLE = Math.min(IMAGES, 1000);

/** Images per second decoded as the appliance does (hash, header, thumbnail), from memory, `READS_IN_FLIGHT` at a time. */
async function decodeOnly(jpegs: Buffer[]): Promise<number> {
  const started = performance.now();
  await pool(jpegs.length, READS_IN_FLIGHT, async (i) => void (await decodeImage(jpegs[i], `${i}.jpg`)));
  return jpegs.length / ((performance.now() - started) / 1000);
}

/** Lists every object under the prefix, then reads each one whole, `READS_IN_FLIGHT` at a time. Images per second. */
async function listAndRead(client: S3Client, bucket: string): Promise<number> {
  const started = performance.now();
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: PREFIX, ContinuationToken: token }),
    );
    for (const object of page.Contents ?? []) keys.push(object.Key!);
    token = page.NextContinuationToken;
  } while (token);
  await pool(keys.length, READS_IN_FLIGHT, async (i) => {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keys[i] }));
    await object.Body!.transformToByteArray();
  });
  if (keys.length !== 2 * IMAGES + 1) throw new Error(`listed ${keys.length} objects, expected ${2 * IMAGES + 1}`);
  return IMAGES / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  s3 = await startS3Process(join(work, 's3'));
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  process.stderr.write(`putting ${IMAGES} JPEGs and their labels into the bucket…\n`);
  const put = (key: string, body: Buffer) =>
    client.send(new PutObjectCommand({ Bucket: s3!.bucket, Key: `${PREFIX}${key}`, Body: body }));
  await put('data.yaml', Buffer.from('names: [a, b, c, d, e]\n'));
  const sample: Buffer[] = [];
  await pool(IMAGES, 2 * availableParallelism(), async (i) => {
    const { jpeg, label } = await picture(i);
    if (i < DECODE_SAMPLE) sample[i] = jpeg;
    const split = i % 10 < 8 ? 'train' : 'val';
    await put(`images/${split}/${i}.jpg`, jpeg);
    await put(`labels/${split}/${i}.txt`, Buffer.from(label));
    if (i % 1000 === 999) process.stderr.write(`  put ${i + 1}\n`);
  });
  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const { child, base } = await startControlPlane('control-plane', {
    databaseName: database,
    dataDir,
    nodeArgs: SERVER_NODE_ARGS,
    env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' },
  });
  try {
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    const { username: owner } = await api<{ username: string }>(base, key, 'GET', '/api/account/summary');
    const credentials = {
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      region: 'us-east-1',
      endpoint: s3.endpoint,
    };
    const integration = await api<{ id: string }>(base, key, 'POST', '/api/integrations/buckets', {
      provider: 's3',
      credentials,
      targets: [s3.bucket],
    });
    const reference = { provider: 'cloud', integrationId: integration.id, target: s3.bucket, prefix: PREFIX };

    /** One ingest by reference into a new dataset; images per second, request to job completed. */
    const ingest = async (slug: string) => {
      await api(base, key, 'POST', '/api/datasets', { dataset: slug, name: slug });
      const started = performance.now();
      const { jobId } = await api<{ jobId: string }>(base, key, 'POST', `/api/datasets/${owner}/${slug}/ingest`, {
        reference,
      });
      const job = await jobEnded(base, key, jobId, 'indexing');
      const seconds = (performance.now() - started) / 1000;
      if (job.status !== 'completed') throw new Error(`ingest by reference ${job.status}: ${job.error}`);
      const { dataset } = await api<{ dataset: { imageCount: number } }>(
        base,
        key,
        'GET',
        `/api/datasets/${owner}/${slug}`,
      );
      if (dataset.imageCount !== IMAGES)
        throw new Error(`the dataset has ${dataset.imageCount} images, expected ${IMAGES}`);
      return { rate: IMAGES / seconds, result: job.result };
    };

    const rounds: Array<{ reads: number; decodes: number; bound: number; rate: number; result: unknown }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      process.stderr.write(
        `round ${round}/${ROUNDS}: the bound (bare listing + reads, decoding alone), then an ingest…\n`,
      );
      const reads = await listAndRead(client, s3.bucket);
      const decodes = await decodeOnly(sample);
      const { rate, result } = await ingest(`bench-${round}`);
      rounds.push({ reads, decodes, bound: 1 / (1 / reads + 1 / decodes), rate, result });
    }
    const { ratio, spread } = ratioOfRounds(rounds.map((r) => r.rate / r.bound));
    const rate = median(rounds.map((r) => r.rate));
    const bound = median(rounds.map((r) => r.bound));
    const reads = median(rounds.map((r) => r.reads));
    const indexed: Figure = {
      figure: `indexing ${IMAGES} JPEGs in place from S3 (bound: reads + thumbnails)`,
      value: rate,
      unit: 'images/s',
      ceiling: bound,
      ratio,
      spread,
      target: `ratio >= ${TARGET_RATIO * 100}%`,
      pass: ratio >= TARGET_RATIO,
    };
    const rate1 = (value: number) => value.toFixed(1);
    console.log(`\nbench:reference — ${IMAGES} JPEGs 640×480 with labels in SeaweedFS, ${cpus().length} cores\n`);
    console.log(
      `bare listing + reads (${READS_IN_FLIGHT} at a time): ${rate1(reads)} images/s (rounds ${rounds.map((r) => rate1(r.reads)).join(', ')})`,
    );
    console.log(
      `decoding alone, in memory (${DECODE_SAMPLE} images, ${READS_IN_FLIGHT} at a time): rounds ${rounds.map((r) => rate1(r.decodes)).join(', ')} images/s`,
    );
    console.log(
      `bound (reads and decoding share these cores): ${rate1(bound)} images/s (rounds ${rounds.map((r) => rate1(r.bound)).join(', ')})`,
    );
    console.log(
      `ingest by reference (request → job completed): ${rate1(rate)} images/s (rounds ${rounds.map((r) => rate1(r.rate)).join(', ')}) = ${(100 * ratio).toFixed(0)}% of the bound (median of rounds, ${spreadText(spread)}; target ≥ ${TARGET_RATIO * 100}%) ${indexed.pass ? 'PASS' : 'FAIL'}`,
    );
    console.log(`job result: ${JSON.stringify(rounds.at(-1)!.result)}`);
    const readsFigure: Figure = {
      figure: 'bare listing + reads of the bucket',
      value: reads,
      unit: 'images/s',
    };
    recordResult('reference', [indexed, readsFigure], { rounds });
  } finally {
    client.destroy();
    await stopChild(child);
  }
}

await runBenchmark('bench:reference', main, async () => {
  await s3?.stop();
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
