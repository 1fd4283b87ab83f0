// placeJobs: which queued jobs one host takes now, from its GPUs, what runs there and the agent's cap.
import t from 'tap';
import { placeJobs, placeJobsWaiting, type HostCapacity } from '../control-plane/src/scheduler/placement.ts';

const host = (overrides: Partial<HostCapacity> = {}): HostCapacity => ({
  gpus: [
    { index: 0, typeId: 'a100-80gb-sxm' },
    { index: 1, typeId: 'a100-80gb-sxm' },
    { index: 2, typeId: 'l40s' },
  ],
  memoryBytes: 64 * 2 ** 30,
  busyGpuIndexes: new Set(),
  runningJobs: 0,
  cpuSlotBusy: false,
  maxConcurrentJobs: undefined,
  exporters: new Set(),
  region: null,
  services: new Set(),
  ...overrides,
});

t.test('GPUs of the asked type, lowest free indexes first; any type when none is asked', async (t) => {
  t.same(
    placeJobs(host({ busyGpuIndexes: new Set([0]) }), [
      { id: 'a', gpuType: 'a100-80gb-sxm', gpuCount: 1 },
      { id: 'b', gpuType: null, gpuCount: 1 },
    ]),
    [
      { jobId: 'a', gpuIndexes: [1] },
      { jobId: 'b', gpuIndexes: [2] },
    ],
  );
});

t.test('a job the host can never run is left for others; one it can run later blocks later GPU jobs', async (t) => {
  const queue = [
    { id: 'never', gpuType: 'h200-sxm', gpuCount: 1 },
    { id: 'too-big', gpuType: null, gpuCount: 4 },
    { id: 'later', gpuType: 'a100-80gb-sxm', gpuCount: 2 },
    { id: 'small', gpuType: 'l40s', gpuCount: 1 },
    { id: 'cpu', gpuType: null, gpuCount: 0 },
  ];
  t.same(
    placeJobs(host({ busyGpuIndexes: new Set([1]), runningJobs: 1 }), queue),
    [{ jobId: 'cpu', gpuIndexes: [] }],
    'only the CPU slot is used',
  );
  t.same(
    placeJobs(host(), queue).map((placement) => placement.jobId),
    ['later', 'small', 'cpu'],
  );
});

t.test('only the first job the host cannot run yet may hold its GPUs; refused, the host takes what fits', async (t) => {
  const queue = [
    { id: 'pair', gpuType: 'a100-80gb-sxm', gpuCount: 2 },
    { id: 'next-pair', gpuType: 'a100-80gb-sxm', gpuCount: 2 },
    { id: 'single', gpuType: 'l40s', gpuCount: 1 },
  ];
  const oneBusy = host({ busyGpuIndexes: new Set([0]), runningJobs: 1 });
  const asked: string[] = [];
  const refused = placeJobsWaiting(oneBusy, queue, (job) => {
    asked.push(job.id);
    return false;
  });
  t.same(asked, ['pair'], 'the later job short of GPUs is not the front of this host’s line');
  t.same(refused, { placements: [{ jobId: 'single', gpuIndexes: [2] }], waitingFor: undefined });
  const held = placeJobsWaiting(oneBusy, queue, () => true);
  t.same(held.placements, [], 'a host that waits takes no later GPU job');
  t.equal(held.waitingFor?.id, 'pair');
});

t.test('the agent cap and the single CPU slot', async (t) => {
  const cpuJobs = [
    { id: 'c1', gpuType: null, gpuCount: 0 },
    { id: 'c2', gpuType: 'cpu', gpuCount: 0 },
  ];
  t.same(
    placeJobs(host(), cpuJobs).map((placement) => placement.jobId),
    ['c1'],
  );
  t.same(placeJobs(host({ cpuSlotBusy: true }), cpuJobs), []);
  const gpuJobs = [1, 2, 3].map((n) => ({ id: `g${n}`, gpuType: null, gpuCount: 1 }));
  t.same(
    placeJobs(host({ maxConcurrentJobs: 2, runningJobs: 1 }), gpuJobs).map((placement) => placement.jobId),
    ['g1'],
  );
});

t.test('a job needing more memory than the host has is left to other hosts', async (t) => {
  const queue = [
    { id: 'huge', gpuType: null, gpuCount: 1, memoryBytes: 512 * 2 ** 30 },
    { id: 'fits', gpuType: null, gpuCount: 1, memoryBytes: 32 * 2 ** 30 },
  ];
  t.same(
    placeJobs(host(), queue).map((placement) => placement.jobId),
    ['fits'],
  );
});

t.test(
  'a job needing an export toolchain goes only to a host that reports it, and does not hold up the queue',
  async (t) => {
    const queue = [
      { id: 'openvino', gpuType: null, gpuCount: 0, toolchain: 'openvino' },
      { id: 'engine', gpuType: null, gpuCount: 1, toolchain: 'engine' },
      { id: 'plain', gpuType: null, gpuCount: 0 },
    ];
    t.same(
      placeJobs(host(), queue).map((placement) => placement.jobId),
      ['plain'],
      'a host that exports nothing takes neither export',
    );
    t.same(
      placeJobs(host({ exporters: new Set(['onnx', 'engine']) }), queue).map((placement) => placement.jobId),
      ['engine', 'plain'],
    );
    t.same(
      placeJobs(host({ exporters: new Set(['openvino']) }), queue).map((placement) => placement.jobId),
      ['openvino'],
    );
  },
);

t.test(
  'a service goes only to a host that runs it in its region (a host of no region serves all), beside the CPU slot',
  async (t) => {
    const queue = [
      { id: 'serve-eu', gpuType: null, gpuCount: 0, service: 'inference', region: 'europe-west4' },
      { id: 'serve-us', gpuType: null, gpuCount: 0, service: 'inference', region: 'us-central1' },
      { id: 'plain', gpuType: null, gpuCount: 0 },
    ];
    const taken = (capacity: Partial<HostCapacity>) =>
      placeJobs(host(capacity), queue).map((placement) => placement.jobId);
    t.same(taken({}), ['plain'], 'a host that runs no service takes none');
    t.same(
      taken({ services: new Set(['inference']) }),
      ['serve-eu', 'serve-us', 'plain'],
      'services take no CPU slot: the plain job still runs',
    );
    t.same(
      taken({ services: new Set(['inference']), region: 'us-central1' }),
      ['serve-us', 'plain'],
      'a host in a region serves only it',
    );
    t.same(
      taken({ services: new Set(['inference']), cpuSlotBusy: true }),
      ['serve-eu', 'serve-us'],
      'a busy CPU slot holds up no service',
    );
    t.same(
      taken({ services: new Set(['inference']), maxConcurrentJobs: 1 }),
      ['serve-eu'],
      "the agent's cap counts services",
    );
  },
);
