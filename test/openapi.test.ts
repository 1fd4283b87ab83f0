// The OpenAPI document: valid OpenAPI (checked by a real validator), served as committed, covering every
// route with its real inputs and outputs, and an interactive reference that loads nothing from outside.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { routes } from '../control-plane/src/routes.ts';
import { call, startTestServer } from './helpers/server.ts';

const server = await startTestServer(t);
const served = await fetch(`${server.url}/openapi.json`);
const text = await served.text();
const document = JSON.parse(text) as {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, unknown>; security: unknown[]; 'x-rate-limit-category'?: string }>
  >;
};

t.test('a real OpenAPI validator accepts the document', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(document);
  t.same(result.errors, undefined, 'no validation errors');
  t.equal(result.valid, true);
  t.match(validator.version, /^3\.[12]$/);
});

t.test('the served document is the committed one', async (t) => {
  t.equal(served.headers.get('content-type'), 'application/json; charset=utf-8');
  t.equal(text, readFileSync(new URL('../control-plane/openapi.json', import.meta.url), 'utf8'));
});

t.test('every route is documented with its auth, limit category and error shapes', async (t) => {
  for (const route of routes) {
    const operation = document.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
    t.ok(operation, `${route.method} ${route.path} is documented`);
    if (!operation) continue;
    t.ok(operation.responses[String(route.response.status)], `${route.method} ${route.path}: success response`);
    t.equal(
      operation['x-rate-limit-category'],
      route.limit ?? undefined,
      `${route.method} ${route.path}: limit category`,
    );
    if (route.limit) t.ok(operation.responses['429'], `${route.method} ${route.path}: 429 documented`);
    if (route.auth === 'key') t.ok(operation.responses['401'], `${route.method} ${route.path}: 401 documented`);
  }
});

t.test('the interactive reference is served from local files only', async (t) => {
  const page = await fetch(`${server.url}/api/docs`);
  t.equal(page.status, 200);
  const html = await page.text();
  t.notMatch(html, /(src|href)="(https?:)?\/\//, 'no external script or style');
  for (const asset of html.matchAll(/(?:src|href)="(\/api\/docs\/[^"]+)"/g)) {
    const response = await fetch(`${server.url}${asset[1]}`);
    t.equal(response.status, 200, `${asset[1]} is served`);
    t.ok((await response.arrayBuffer()).byteLength > 0, `${asset[1]} is not empty`);
  }
  t.equal(
    (await call(server, 'GET', '/api/docs/assets/package.json')).status,
    404,
    'only the listed assets, no other file of the package',
  );
});
