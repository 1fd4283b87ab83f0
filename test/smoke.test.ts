import t from 'tap';
import { call, startTestServer } from './helpers/server.ts';

t.test('health and readiness answer without a key', async (t) => {
  const server = await startTestServer(t);
  const live = await call(server, 'GET', '/api/health');
  t.equal(live.status, 200);
  t.same(live.body, { status: 'ok' });
  const ready = await call(server, 'GET', '/api/ready');
  t.equal(ready.status, 200);
});
