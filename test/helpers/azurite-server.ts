import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePorts } from './s3-server.ts';

/** Azurite's blob server (npm's azurite, a devDependency): Azure Blob Storage that checks Shared Key and SAS signatures. */
const AZURITE = fileURLToPath(new URL('../../node_modules/azurite/dist/src/blob/main.js', import.meta.url));
const STARTUP_MS = 30_000;

export interface TestAzurite {
  /** The blob service, path-style: http://127.0.0.1:port/account. */
  endpoint: string;
  accountName: string;
  accountKey: string;
  /** Azure's own client, with the account's key, to make the test's containers and blobs. */
  client: BlobServiceClient;
}

/** A fresh Azurite blob server on loopback, in memory, with one storage account of random name and key, stopped with the test. */
export async function startAzurite(t: { teardown(fn: () => unknown): void }): Promise<TestAzurite> {
  const [port] = await freePorts(1);
  const accountName = `vp${randomBytes(6).toString('hex')}`;
  const accountKey = randomBytes(64).toString('base64');
  let output = '';
  // --skipApiVersionCheck: the test's client (@azure/storage-blob) speaks a newer REST version than Azurite knows;
  // the provider's own requests use an older one.
  const azurite = spawn(
    process.execPath,
    [
      AZURITE,
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      String(port),
      '--inMemoryPersistence',
      '--skipApiVersionCheck',
      '--disableTelemetry',
      '--silent',
    ],
    {
      env: { ...process.env, AZURITE_ACCOUNTS: `${accountName}:${accountKey}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [azurite.stdout, azurite.stderr])
    stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => azurite.once('exit', () => resolve()));
  t.teardown(async () => {
    azurite.kill('SIGKILL');
    await exited;
  });
  const endpoint = `http://127.0.0.1:${port}/${accountName}`;
  const client = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(accountName, accountKey));
  for (const deadline = Date.now() + STARTUP_MS; ; await sleep(200)) {
    try {
      await client.getProperties();
      break;
    } catch (error) {
      if (azurite.exitCode !== null || Date.now() > deadline)
        throw new Error(`Azurite did not start: ${(error as Error).message}\n${output}`);
    }
  }
  return { endpoint, accountName, accountKey, client };
}
