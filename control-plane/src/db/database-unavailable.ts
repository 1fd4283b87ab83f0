// Whether an error means the database could not be reached or dropped the connection (restarting, failing over, a cut
// network), as opposed to one a statement itself caused: work that failed so may succeed if tried again.

/** Socket errors of a connection that could not be made or was lost. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);
/** SQLSTATEs of a server that is shutting down, starting or refusing connections (class 08: connection exceptions). */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03']);

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const { code, sqlState } = cause as { code?: unknown; sqlState?: unknown };
    for (const value of [code, sqlState])
      if (typeof value === 'string' && (SOCKET_CODES.has(value) || SERVER_STATES.has(value) || value.startsWith('08')))
        return true;
    // node-postgres names a connection that ended under a query by its message only.
    if (/^Connection terminated|connection error and is not queryable|Client was closed/.test(cause.message))
      return true;
  }
  return false;
}
