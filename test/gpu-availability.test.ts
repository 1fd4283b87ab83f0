// GET /api/training/gpu-availability: the stock level of each GPU type ID (and cpu) on connected hosts, as the spec
// and the ultralytics clients key it, or with detail=true the counts; the pool for anyone, plus the key's
// workspace's private hosts with managed=true.
import type { Gpu, Hardware } from '@vp/protocol';
import t from 'tap';
import { KNOWN_GPU_TYPE_IDS } from '../protocol/src/gpu-types.ts';
import { Workspace } from '../control-plane/src/account/workspace.entity.ts';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { Job } from '../control-plane/src/jobs/job.entity.ts';
import type { HostState } from '../control-plane/src/hosts/host.entity.ts';
import { call, startTestServer } from './helpers/server.ts';

const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000' } });
await server.services().account.createUser('gina');
await server.services().account.createTeam('gpu-team', 'gina');
await server.services().account.createTeam('other-team', 'gina');
const key = (await server.services().apiKeys.create('gpu-team', 'ci')).key;

const gpu = (index: number, typeId: string, memoryMiB: number): Gpu => ({
  index,
  model: typeId,
  typeId,
  memoryMiB,
  driverVersion: '550.54',
});
const hardware = (gpus: Gpu[]): Hardware => ({
  cpu: { model: 'Test CPU', cores: 16 },
  memoryBytes: 64 * 2 ** 30,
  diskFreeBytes: 100 * 2 ** 30,
  gpus,
  cpuOnly: gpus.length === 0,
});

const em = server.orm.em.fork();
const workspace = (handle: string) => em.findOneOrFail(Workspace, { handle });
const addHost = async (
  name: string,
  state: HostState,
  hw: Hardware | null,
  handle?: string,
  lastHeartbeatAt = new Date(),
) =>
  em.create(Host, {
    name,
    state,
    hardware: hw as Record<string, unknown> | null,
    workspace: handle ? await workspace(handle) : null,
    lastHeartbeatAt,
  });
await addHost(
  'pool-a',
  'connected',
  hardware([gpu(0, 'rtx-4090', 24_564), gpu(1, 'rtx-4090', 24_564), gpu(2, 'l40s', 46_068)]),
);
await addHost('pool-b', 'connected', hardware([gpu(0, 'h100-sxm', 81_559), gpu(1, 'gh200-480gb', 97_871)]));
await addHost('pool-cpu', 'connected', hardware([]));
await addHost('pool-off', 'disconnected', hardware([gpu(0, 'b200', 183_359)]));
await addHost('pool-new', 'enrolling', null);
// Marked connected by a replica that died: silent past the grace period, so not offered.
await addHost(
  'pool-stale',
  'connected',
  hardware([gpu(0, 'b200', 183_359)]),
  undefined,
  new Date(Date.now() - 3600_000),
);
await addHost('mine', 'connected', hardware([gpu(0, 'rtx-4090', 24_564), gpu(1, 'a100-80gb-sxm', 81_920)]), 'gpu-team');
await addHost('theirs', 'connected', hardware([gpu(0, 'b300', 270_000)]), 'other-team');
await em.flush();

type Availability = {
  gpus: Record<string, { status: string; total: number; free: number; memoryGb: number | null }>;
  cpu: { status: string; hosts: number; free: number };
  updatedAt: string;
  region: string;
};
type Levels = Record<string, 'High' | 'Medium' | 'Low' | null>;
const unavailable = { status: 'unavailable', total: 0, free: 0, memoryGb: null };

t.test(
  'levels keyed by GPU type ID: High with half or more free, Medium with fewer, Low with none, null when absent',
  async (t) => {
    const { status, body } = await call<Levels>(server, 'GET', '/api/training/gpu-availability');
    t.equal(status, 200);
    t.same(
      Object.keys(body).sort(),
      [...KNOWN_GPU_TYPE_IDS, 'gh200-480gb', 'cpu'].sort(),
      'known IDs, the reported unknown one, and cpu',
    );
    t.match(body, {
      'rtx-4090': 'High',
      l40s: 'High',
      'h100-sxm': 'High',
      cpu: 'High',
      b200: null,
      'a100-80gb-sxm': null,
    });
    // Jobs running on pool-a hold one of its two rtx-4090s, then the other one and its l40s too.
    const poolA = await em.findOneOrFail(Host, { name: 'pool-a' });
    const gpuTeam = await workspace('gpu-team');
    const running = (gpuIndexes: number[]) =>
      em.create(Job, {
        workspace: gpuTeam,
        kind: 'test',
        status: 'running',
        placement: 'host',
        host: poolA,
        gpuCount: gpuIndexes.length,
        gpuIndexes,
      });
    const held = [running([0])];
    await em.flush();
    t.match(
      (await call<Levels>(server, 'GET', '/api/training/gpu-availability')).body,
      { 'rtx-4090': 'High' },
      'one of two free is half',
    );
    const managed = (await call<Levels>(server, 'GET', '/api/training/gpu-availability?managed=true', { key })).body;
    t.match(
      managed,
      { 'rtx-4090': 'High', 'a100-80gb-sxm': 'High' },
      'two of three rtx-4090 free with the private host',
    );
    held.push(running([1, 2]));
    await em.flush();
    t.match(
      (await call<Levels>(server, 'GET', '/api/training/gpu-availability')).body,
      { 'rtx-4090': 'Low', l40s: 'Low' },
      'all busy: Low',
    );
    t.match(
      (await call<Levels>(server, 'GET', '/api/training/gpu-availability?managed=true', { key })).body,
      { 'rtx-4090': 'Medium' },
      'one of three free: Medium',
    );
    for (const job of held) em.remove(job);
    await em.flush();
  },
);

t.test('detail: anonymous callers see connected pool hosts only, with every known type listed', async (t) => {
  const { status, body } = await call<Availability>(server, 'GET', '/api/training/gpu-availability?detail=true');
  t.equal(status, 200);
  t.same(
    Object.keys(body.gpus).sort(),
    [...KNOWN_GPU_TYPE_IDS, 'gh200-480gb'].sort(),
    'known IDs plus the reported unknown one',
  );
  t.same(body.gpus['rtx-4090'], { status: 'available', total: 2, free: 2, memoryGb: 24 });
  t.same(body.gpus.l40s, { status: 'available', total: 1, free: 1, memoryGb: 45 });
  t.same(body.gpus['h100-sxm'], { status: 'available', total: 1, free: 1, memoryGb: 80 });
  t.same(body.gpus['gh200-480gb'], { status: 'available', total: 1, free: 1, memoryGb: 96 });
  t.same(body.gpus.b200, unavailable, 'a disconnected host, or one silent past the grace period, does not count');
  t.same(body.gpus['a100-80gb-sxm'], unavailable, 'private hosts are not counted without managed');
  t.same(body.gpus.b300, unavailable);
  t.same(body.cpu, { status: 'available', hosts: 1, free: 1 });
  t.equal(body.region, 'us');
  t.ok(Date.parse(body.updatedAt));
  // A key alone does not add private hosts.
  const keyed = await call<Availability>(server, 'GET', '/api/training/gpu-availability?detail=true', { key });
  t.same(keyed.body.gpus['a100-80gb-sxm'], unavailable);
});

t.test('managed=true needs a key and adds the key workspace private hosts only', async (t) => {
  const anonymous = await call(server, 'GET', '/api/training/gpu-availability?managed=true');
  t.equal(anonymous.status, 401);
  const { status, body } = await call<Availability>(
    server,
    'GET',
    '/api/training/gpu-availability?managed=true&detail=true',
    { key },
  );
  t.equal(status, 200);
  t.same(body.gpus['rtx-4090'], { status: 'available', total: 3, free: 3, memoryGb: 24 });
  t.same(body.gpus['a100-80gb-sxm'], { status: 'available', total: 1, free: 1, memoryGb: 80 });
  t.same(body.gpus.b300, unavailable, "another workspace's hosts never count");
  t.same(body.cpu, { status: 'available', hosts: 1, free: 1 });
  t.equal((await call(server, 'GET', '/api/training/gpu-availability?managed=maybe')).status, 400);
  t.equal((await call(server, 'GET', '/api/training/gpu-availability?detail=maybe')).status, 400);
});
