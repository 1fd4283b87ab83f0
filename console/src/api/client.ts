import createClient, { type Middleware } from 'openapi-fetch';
import { credentialHeaders } from './credentials.ts';
import type { components, paths } from './schema.d.ts';

/** Every request of the console goes through this client: same origin, cookies included, credentials added here. */
export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });

const withCredentials: Middleware = {
  onRequest({ request }) {
    for (const [name, value] of Object.entries(credentialHeaders(request.method))) request.headers.set(name, value);
    return request;
  },
};
api.use(withCredentials);

export type Schemas = components['schemas'];

/** An answer other than 2xx, with the API's `{ error }` message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The data of an answer, or an ApiError carrying the API's message (for TanStack Query's error state). */
export function unwrap<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data !== undefined && answer.response.ok) return answer.data;
  const error = answer.error as { error?: unknown } | undefined;
  const message = typeof error?.error === 'string' ? error.error : `The appliance answered ${answer.response.status}`;
  throw new ApiError(answer.response.status, message);
}
