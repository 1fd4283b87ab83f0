import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@vp/config';
import type { Logger } from 'pino';
import { startServer, type RunningServer } from '../../control-plane/src/server.ts';
import type { RouteDefinition } from '../../control-plane/src/http/define-route.ts';
import type { Predictor } from '../../control-plane/src/predict/predictor.ts';
import { Services } from '../../control-plane/src/services.ts';
import { createTestDatabase } from './db.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestServer extends RunningServer {
  databaseUrl: string;
  dataDir: string;
  /** Services on a fresh EntityManager fork, for arranging data the API cannot create. */
  services(): Services;
}

/**
 * A real control plane on a free port over a database cloned from the template. Pass `databaseUrl`
 * to start a second instance on the same database. Everything is torn down with the test.
 */
export async function startTestServer(
  t: Teardown,
  options: {
    env?: Record<string, string>;
    databaseUrl?: string;
    routes?: RouteDefinition[];
    predictor?: Predictor;
    log?: Logger;
  } = {},
): Promise<TestServer> {
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    const db = await createTestDatabase();
    t.teardown(db.drop);
    databaseUrl = db.url;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-test-'));
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const running = await startServer(config, { routes: options.routes, predictor: options.predictor, log: options.log });
  t.teardown(async () => {
    await running.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    ...running,
    databaseUrl,
    dataDir,
    services: () => new Services(running.orm.em.fork() as never, { config, storage: running.storage }),
  };
}

export interface Fetched<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** JSON request against a test server; `key` becomes the bearer header. */
export async function call<T = Record<string, unknown>>(
  server: { url: string },
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Fetched<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const response = await fetch(`${server.url}${path}`, { method, headers, body });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };
}
