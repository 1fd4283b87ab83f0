// isDatabaseUnavailable: which failures mean "the database could not be reached", so the work may be tried again.
import t from 'tap';
import pg from 'pg';
import { isDatabaseUnavailable } from '../control-plane/src/db/database-unavailable.ts';

const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

t.test('a lost or refused connection, or a server shutting down, is unavailability', async (t) => {
  t.ok(isDatabaseUnavailable(coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')));
  t.ok(isDatabaseUnavailable(coded('terminating connection due to administrator command', '57P01')));
  t.ok(isDatabaseUnavailable(coded('the database system is starting up', '57P03')));
  t.ok(isDatabaseUnavailable(coded('connection failure', '08006')));
  t.ok(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')));
  t.ok(isDatabaseUnavailable(new Error('wrapped', { cause: coded('reset', 'ECONNRESET') })), 'through its cause');
});

t.test("a statement's own error is not", async (t) => {
  t.notOk(isDatabaseUnavailable(coded('duplicate key value violates unique constraint', '23505')));
  t.notOk(isDatabaseUnavailable(coded('canceling statement due to lock timeout', '55P03')));
  t.notOk(isDatabaseUnavailable(new Error('boom')));
  t.notOk(isDatabaseUnavailable('ECONNREFUSED'));
});

t.test('as node-postgres reports a connection refused by a port nothing listens on', async (t) => {
  const client = new pg.Client({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 2000 });
  const error = await client.connect().then(
    () => undefined,
    (failure: unknown) => failure,
  );
  t.ok(isDatabaseUnavailable(error));
});
