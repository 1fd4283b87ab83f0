// A deployment revision's bearer token for its server is kept sealed under the appliance secret, never in the clear:
// a revision created through the API has its token nowhere in its row nor in a backup, while the control plane still
// presents it; the migration that brought sealing converts existing rows (up: sealed, opening to the same token;
// down: the plain token back), and refuses, changing nothing, where the migrating process has no appliance secret.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { attachApplianceSecret } from '../control-plane/src/db/appliance-secret.ts';
import { newId } from '../control-plane/src/db/ids.ts';
import { initORM } from '../control-plane/src/db/orm.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { openToken, type SealedToken } from '../control-plane/src/deployments/deployment-tokens.ts';
import { CredentialCipher } from '../control-plane/src/integrations/credential-cipher.ts';
import { adminQuery, createEmptyDatabase } from './helpers/db.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { runNode } from './helpers/run-node.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const SECRET = randomBytes(32).toString('hex');
const BEFORE_SEALING = 'Migration20261204000000_local_integrations';
const SEALING = 'Migration20261205000000_deployment_tokens_sealed';

t.test('the migration seals the tokens of existing revisions, and down opens them again', async (t) => {
  const database = await createEmptyDatabase();
  t.teardown(database.drop);
  const orm = await initORM(database.url);
  t.teardown(() => orm.close());
  await orm.migrator.up({ to: BEFORE_SEALING });
  const [workspaceId, modelId, deploymentId, revisionId] = [newId(), newId(), newId(), newId()];
  const token = randomBytes(32).toString('hex');
  // Only the two tables the migration reads matter here: the rows they point to are left out (no foreign-key checks).
  await adminQuery(
    `set session_replication_role = replica;
     insert into deployments (id, workspace_id, model_id, slug, name, region) values ('${deploymentId}', '${workspaceId}', '${modelId}', 'api', 'API', 'us-central1');
     insert into deployment_revisions (id, deployment_id, number, model_id, cpu, memory_gi, token) values ('${revisionId}', '${deploymentId}', 1, '${modelId}', 1, 2, '${token}');`,
    [],
    database.url,
  );
  const revision = async () =>
    (await adminQuery('select * from deployment_revisions', [], database.url)).rows[0] as Record<string, unknown>;

  await t.rejects(orm.migrator.up({ to: SEALING }), /opened without the appliance's secret/, 'no secret, no sealing');
  t.equal((await revision()).token, token, 'the refused migration changed nothing');

  attachApplianceSecret(orm, () => SECRET);
  await orm.migrator.up({ to: SEALING });
  const sealed = (await revision()) as { token_key_id: string; token_sealed: Buffer };
  t.notOk('token' in sealed, 'no plain token column');
  t.notOk(
    JSON.stringify(sealed).includes(token) || sealed.token_sealed.includes(Buffer.from(token)),
    'the token is nowhere in the row',
  );
  const opened: SealedToken = { workspaceId, tokenKeyId: sealed.token_key_id, tokenSealed: sealed.token_sealed };
  t.equal(
    openToken(new CredentialCipher(SECRET), opened),
    token,
    'it opens to the same token under the appliance secret',
  );
  t.throws(() => openToken(new CredentialCipher(randomBytes(32).toString('hex')), opened), 'and under no other');
  t.throws(
    () => openToken(new CredentialCipher(SECRET), { ...opened, workspaceId: newId() }),
    "nor as another workspace's",
  );

  await orm.migrator.down({ to: BEFORE_SEALING });
  t.match(await revision(), { token, token_sealed: undefined }, 'down: the plain token back');
});

t.test(
  "a revision created through the API: its server's token is nowhere in the database or a backup, and the control plane presents it",
  async (t) => {
    const fixture = await trainedModel('detect');
    const world = await startWorld(t, { SIGNING_SECRET: SECRET });
    const { server, alice } = world;
    const em = () => server.orm.em.fork() as EntityManager;
    await createProject(world, alice, { project: 'vision', name: 'vision' });
    const model = await createModel(world, alice, {
      project: 'vision',
      model: 'detector',
      task: 'detect',
      trainArgs: { imgsz: fixture.imgsz },
    });
    await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
    await seedOnnxExport(server, model.id, fixture.onnx);
    const { workerKey } = await enrollHost(server, 'inference-host', undefined, 'us-central1');
    const { client: host } = await WorkerClient.welcomed(server, workerKey);
    t.teardown(() => host.ws.close());
    host.beat(300);
    host.send({ type: 'capabilities', exporters: [], missingExporters: {}, services: ['inference'] });
    await eventually(
      async () => (await query(em(), `select 1 from hosts where 'inference' = any(services)`)).length > 0,
      'the host to report its services',
    );

    const created = await call<{ id: string }>(server, 'POST', '/api/deployments/alice', {
      key: alice,
      body: {
        project: 'vision',
        model: 'detector',
        deployment: 'api',
        name: 'API',
        region: 'us-central1',
        cpu: 2,
        memoryGi: 4,
      },
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    const assigned = await host.nextOf('job.assign', 60_000);
    const token = assigned.spec.env!.VP_SERVICE_TOKEN!;
    t.match(token, /^[0-9a-f]{64}$/, "the server's token, given to its host");
    host.send({ type: 'job.accepted', jobId: assigned.jobId });
    host.send({ type: 'job.service', jobId: assigned.jobId, url: 'http://127.0.0.1:18080' });
    await eventually(
      async () =>
        (await call<{ deployment: { status: string } }>(server, 'GET', '/api/deployments/alice/api', { key: alice }))
          .body.deployment.status === 'ready',
      'ready',
    );

    const hexOf = (text: string) => Buffer.from(text).toString('hex');
    const rows = (
      await adminQuery('select to_jsonb(r)::text as row from deployment_revisions r', [], server.databaseUrl)
    ).rows.map((row: { row: string }) => row.row);
    t.equal(rows.length, 1);
    t.notOk(rows[0].includes(token) || rows[0].includes(hexOf(token)), 'the token is nowhere in its row');
    t.match(
      await server.deploymentRouter.upstream(em(), created.body.id),
      { url: 'http://127.0.0.1:18080', token },
      'the control plane opens it to present it',
    );

    const dir = mkdtempSync(join(tmpdir(), 'vp-backup-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const env = {
      LOG_LEVEL: 'warn',
      DATABASE_URL: server.databaseUrl,
      DATA_DIR: server.dataDir,
      SIGNING_SECRET: SECRET,
    };
    const backup = await runNode(
      ['installer/src/vpctl.ts', 'backup', join(dir, 'backup'), '--key-file', join(dir, 'backup-key')],
      env,
    );
    t.equal(backup.code, 0, backup.stderr);
    const dumped = gunzipSync(readFileSync(join(dir, 'backup', 'database', 'deployment_revisions.jsonl.gz'))).toString(
      'utf8',
    );
    t.equal(dumped.trim().split('\n').length, 1, 'the revision is in the backup');
    t.notOk(dumped.includes(token) || dumped.includes(hexOf(token)), 'its token is not');

    // Key rotation: under a new SIGNING_SECRET, vpctl integrations reseal seals it again, the same token.
    const newSecret = randomBytes(32).toString('hex');
    const previousFile = join(dir, 'previous-secret');
    writeFileSync(previousFile, SECRET, { mode: 0o600 });
    const reseal = await runNode(
      ['installer/src/vpctl.ts', 'integrations', 'reseal', '--previous-secret-file', previousFile],
      { ...env, SIGNING_SECRET: newSecret },
    );
    t.equal(reseal.code, 0, reseal.stderr);
    t.equal(
      reseal.stdout,
      'Re-sealed 0 integrations under the current secret\nRe-sealed 1 deployment revision token under the current secret\n',
    );
    const [row] = (
      await adminQuery(
        `select d.workspace_id as "workspaceId", r.token_key_id as "tokenKeyId", r.token_sealed as "tokenSealed" from deployment_revisions r join deployments d on d.id = r.deployment_id`,
        [],
        server.databaseUrl,
      )
    ).rows as SealedToken[];
    t.equal(openToken(new CredentialCipher(newSecret), row), token, 'it opens under the new secret to the same token');
    t.throws(() => openToken(new CredentialCipher(SECRET), row), 'and no longer under the old one');
  },
);
