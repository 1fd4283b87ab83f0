import { defaults } from '@vp/config';
import { z } from 'zod';
import type { RouteDefinition } from './define-route.ts';
import { JSON_FIELDS_LIMIT_BYTES } from './json-body.ts';

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid path, query or body',
  401: 'Missing or invalid API key',
  402: 'Insufficient credits',
  403: 'Insufficient permissions, plan or quota',
  404: 'Resource not found',
  405: 'Method not allowed',
  409: 'Conflict with current state',
  410: 'Gone: used or expired',
  412: 'Precondition failed',
  413: 'Payload too large',
  422: 'Unprocessable',
  429: 'Rate limit exceeded',
  500: 'Server error',
  502: 'Upstream call failed',
  503: 'Dependent service temporarily unavailable',
  504: 'Upstream call timed out',
};

export const ErrorBody = z.object({ error: z.string() });
/** What the error middleware answers for an unexpected failure. */
export const ServerErrorBody = ErrorBody.extend({
  requestId: z
    .string()
    .meta({ description: 'Also in the X-Request-Id header; the server log has the details under it' }),
});
export const RateLimitBody = z.object({ error: z.string(), retryAfter: z.number().int(), resetAt: z.iso.datetime() });

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: z.ZodType | undefined, location: 'path' | 'query') {
  if (!schema) return [];
  const object = jsonSchema(schema, 'input') as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  return Object.entries(object.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: location,
      required: location === 'path' || (object.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/** What a JSON request body may weigh (the default settings), as the router enforces it before parsing. */
const jsonBodyLimit = (route: RouteDefinition) =>
  route.documentBody
    ? `JSON of at most JSON_BODY_LIMIT_BYTES (default ${defaults.jsonBodyLimitBytes / 2 ** 20} MiB); larger: 413, not read`
    : `JSON of at most ${JSON_FIELDS_LIMIT_BYTES / 1024} KiB; larger: 413, not read`;

function operation(route: RouteDefinition) {
  const errors = new Set<number>([...(route.errors ?? []), ...Object.keys(route.errorBodies ?? {}).map(Number), 500]);
  if (route.request?.params || route.request?.query || route.request?.body) errors.add(400);
  if (route.request?.body) errors.add(413);
  if (route.auth === 'key') errors.add(401);
  if (route.limit) errors.add(429);
  const content =
    route.response.contentType === 'none'
      ? {}
      : {
          content: {
            [route.response.contentType ?? 'application/json']: { schema: jsonSchema(route.response.schema, 'output') },
          },
        };
  const responses: Record<string, unknown> = {
    [route.response.status]: { description: route.response.description, ...content },
  };
  if (route.response.alternate)
    responses[route.response.alternate.status] = { description: route.response.alternate.description, ...content };
  for (const status of [...errors].sort((a, b) => a - b)) {
    const ref = status === 429 ? 'RateLimitError' : status === 500 ? 'ServerError' : 'Error';
    const body = route.errorBodies?.[status];
    responses[status] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: {
        'application/json': { schema: body ? jsonSchema(body, 'output') : { $ref: `#/components/schemas/${ref}` } },
      },
    };
  }
  return {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[/:{}-]+(\w)/g, (_, c: string) => c.toUpperCase())}`,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(route.limit ? { 'x-rate-limit-category': route.limit } : {}),
    security:
      route.auth === 'public' ? [] : route.auth === 'optional' ? [{}, { bearerAuth: [] }] : [{ bearerAuth: [] }],
    parameters: [...parameters(route.request?.params, 'path'), ...parameters(route.request?.query, 'query')],
    ...(route.request?.body
      ? {
          requestBody: {
            required: true,
            description: jsonBodyLimit(route),
            content: { 'application/json': { schema: jsonSchema(route.request.body, 'input') } },
          },
        }
      : {}),
    ...(route.streamedBody
      ? {
          requestBody: {
            required: true,
            description: route.streamedBody.description,
            content: {
              [route.streamedBody.contentType]: {
                schema: route.streamedBody.schema
                  ? jsonSchema(route.streamedBody.schema, 'input')
                  : { type: 'string', format: 'binary' },
              },
            },
          },
        }
      : {}),
    responses,
  };
}

const DESCRIPTION = `The Vision Platform REST API, served on your own hardware.

Authenticate with \`Authorization: Bearer <API_KEY>\` (\`ul_\` + 40 hex digits). Keys are created by the
operator with \`vpctl keys create\`; API keys cannot create or revoke API keys.

Every error is \`{ "error": string }\`. Rate limits are sliding windows per API key and category (anonymous
callers: per client address); the category of each operation is in \`x-rate-limit-category\`. A 429 carries
\`retryAfter\` (seconds), \`resetAt\` and the headers \`Retry-After\` and \`X-RateLimit-Reset\`.

Pagination: a \`limit\` above an operation's maximum is refused with 400 naming the maximum (never clamped).
Offset pages answer \`hasMore\`, cursor pages \`nextCursor\`, page-number pages \`totalPages\`, token pages
\`nextPageToken\` (opaque, signed).`;

/** The OpenAPI document, generated from the same route definitions that serve requests. */
export function buildOpenApi(routes: RouteDefinition[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route) };
  }
  return {
    openapi: '3.1.1',
    info: { title: 'Vision Platform API (on-premise appliance)', version, description: DESCRIPTION },
    servers: [{ url: '/' }],
    tags: [...new Set(routes.map((route) => route.tag))].sort().map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key: ul_ followed by 40 hex digits' },
      },
      schemas: {
        Error: jsonSchema(ErrorBody, 'output'),
        RateLimitError: jsonSchema(RateLimitBody, 'output'),
        ServerError: jsonSchema(ServerErrorBody, 'output'),
      },
    },
  };
}

/** Stable JSON with sorted keys, so the committed document diffs cleanly. */
export function stableStringify(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
          )
        : v;
  return `${JSON.stringify(sort(value), null, 2)}\n`;
}
