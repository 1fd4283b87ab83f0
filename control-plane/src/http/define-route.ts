import type { RateCategory } from '@vp/config';
import { z } from 'zod';
import type { AppContext } from './app-context.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

/**
 * public: no key looked at (health, documents); optional: anonymous allowed, a key adds access;
 * key: a valid API key is required.
 */
export type AuthMode = 'public' | 'optional' | 'key';

type Shape = z.ZodType | undefined;
type In<S extends Shape> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteInput<P extends Shape, Q extends Shape, B extends Shape> {
  params: In<P>;
  query: In<Q>;
  body: In<B>;
}

export interface RouteDefinition<
  P extends Shape = Shape,
  Q extends Shape = Shape,
  B extends Shape = Shape,
  R extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Koa path syntax: `/api/workspaces/:owner/members`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  auth: AuthMode;
  /** A training job's key (see JobScope) may call this route; it is 403 on every other. */
  jobKeys?: boolean;
  /** A deployment's own key may call this route (its handler checks it is that deployment's); it is 403 on every other. */
  deploymentKeys?: boolean;
  /** Rate-limit category, or null for routes outside the limits (health, documents). */
  limit: RateCategory | null;
  request?: { params?: P; query?: Q; body?: B };
  /**
   * The JSON body may carry a document (metadata, a class list or mapping, labels, an agent's graph, a training
   * event): up to JSON_BODY_LIMIT_BYTES. Other JSON bodies (names, IDs, settings) are at most 64 KiB. Past either: 413, unparsed.
   */
  documentBody?: true;
  /**
   * contentType: a non-JSON (streamed) response the handler writes to ctx.body itself; schema then documents it.
   * 'none': no body at all (a redirect); the handler sets status and headers.
   */
  response: {
    status: number;
    description: string;
    schema: R;
    contentType?: string;
    /** Another status the same body is answered with (202 for work still in progress) when `when` holds for the result. */
    alternate?: { status: number; description: string; when: (result: z.input<R>) => boolean };
  };
  /** The request body is a raw stream (an upload, a form the handler reads): no JSON parsing; documented with this content type (and schema). */
  streamedBody?: { contentType: string; description: string; schema?: z.ZodType };
  /** Error statuses this route can answer, for the OpenAPI document. */
  errors?: number[];
  /** Error statuses whose body carries fields besides `error` (HttpError's extra), with that body's schema. */
  errorBodies?: Record<number, z.ZodType>;
  /** Returns the response (JSON routes) or nothing (routes that stream their own body). */
  handler: (ctx: AppContext, input: RouteInput<P, Q, B>) => Promise<z.input<R> | void> | z.input<R> | void;
}

/** One definition mounts the route, validates input and output, types the handler and feeds /openapi.json. */
export function defineRoute<P extends Shape, Q extends Shape, B extends Shape, R extends z.ZodType>(
  definition: RouteDefinition<P, Q, B, R>,
): RouteDefinition {
  return definition as unknown as RouteDefinition;
}
