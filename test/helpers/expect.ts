import type t from 'tap';
import type { Fetched } from './server.ts';

type Asserts = Pick<typeof t, 'equal' | 'same' | 'type' | 'match'>;

/**
 * Asserts an error response: the status, and a body that is `{ error: string }` with nothing
 * else but the documented `extras` (429: retryAfter and resetAt; 500: requestId).
 */
export function expectError(
  t: Asserts,
  fetched: Fetched<object>,
  status: number,
  message?: string | RegExp,
  extras: string[] = [],
): void {
  const response = fetched as Fetched;
  t.equal(response.status, status, `status ${status}`);
  t.same(
    Object.keys(response.body ?? {}).sort(),
    ['error', ...extras].sort(),
    `body is exactly { error${extras.map((e) => `, ${e}`).join('')} }`,
  );
  t.type(response.body?.error, 'string', 'error is a string');
  if (typeof message === 'string') t.equal(response.body.error, message);
  else if (message) t.match(response.body.error, message);
}
