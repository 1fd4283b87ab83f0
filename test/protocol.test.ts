// The worker protocol: every message kind round-trips through encodeMessage and parseMessage; malformed,
// oversized, unknown, wrong-version and schema-violating frames are refused with a reason, never thrown; and the
// agent's HTTP routes.
import t from 'tap';
import {
  AGENT_ROUTES,
  MAX_LOG_LINE_BYTES,
  MAX_LOG_LINES_PER_MESSAGE,
  MAX_MESSAGE_BYTES,
  PROTOCOL_VERSION,
  PROTOCOL_VERSION_MIN,
  commonVersion,
  encodeMessage,
  helloVersionFields,
  parseMessage,
  routePath,
  type AgentMessage,
  type Direction,
  type JobSpec,
  type ServerMessage,
} from '@vp/protocol';

const hardware = {
  cpu: { model: 'AMD EPYC 9654', cores: 192 },
  memoryBytes: 1_600_000_000_000,
  diskFreeBytes: 3_000_000_000_000,
  gpus: [
    { index: 0, model: 'NVIDIA H100 80GB HBM3', typeId: 'h100-sxm', memoryMiB: 81_559, driverVersion: '550.54.15' },
    { index: 1, model: 'NVIDIA H100 80GB HBM3', typeId: 'h100-sxm', memoryMiB: 81_559, driverVersion: null },
  ],
  cpuOnly: false,
};
const spec: JobSpec = {
  image: 'vp-trainer:1',
  command: ['python', '-m', 'train', '--epochs', '3'],
  env: { MODEL_ID: 'm1', CUDA_LAUNCH_BLOCKING: '1' },
  workDir: 'jobs/j-1',
  gpus: { count: 2, indexes: [0, 1] },
  memoryBytes: 64 * 2 ** 30,
  cpus: 15.5,
  shmBytes: 2 ** 30,
  timeoutSeconds: 86_400,
};

const agentMessages: AgentMessage[] = [
  { type: 'hello', protocolVersion: PROTOCOL_VERSION, agentVersion: '0.1.0', hardware, runningJobs: [] },
  {
    type: 'hello',
    protocolVersion: PROTOCOL_VERSION,
    agentVersion: '0.1.0',
    hostId: 'h-42',
    hardware,
    runningJobs: [{ jobId: 'j-1', attempt: 2 }],
  },
  { type: 'heartbeat', at: '2025-01-02T03:04:05.678Z' },
  { type: 'heartbeat', at: '2025-01-02T03:04:05+02:00', freeGpus: [1] },
  { type: 'job.accepted', jobId: 'j-1' },
  { type: 'job.log', jobId: 'j-1', stream: 'stderr', lines: ['epoch 1/3', '', 'ünïcode ✓'] },
  { type: 'job.progress', jobId: 'j-1', progress: 0.33 },
  { type: 'job.finished', jobId: 'j-1', outcome: 'completed', exitCode: 0 },
  { type: 'job.finished', jobId: 'j-1', outcome: 'failed', exitCode: 137, error: 'out of memory' },
  { type: 'job.finished', jobId: 'j-1', outcome: 'cancelled' },
  {
    type: 'hello',
    protocolVersion: PROTOCOL_VERSION + 1,
    protocolVersions: { min: PROTOCOL_VERSION, max: PROTOCOL_VERSION + 1 },
    agentVersion: '0.2.0',
    hardware,
    runningJobs: [],
  },
  {
    type: 'capabilities',
    exporters: ['onnx', 'torchscript'],
    missingExporters: { engine: 'TensorRT is not installed' },
  },
];
const serverMessages: ServerMessage[] = [
  { type: 'welcome', protocolVersion: PROTOCOL_VERSION, hostId: 'h-42', heartbeatSeconds: 10 },
  { type: 'job.assign', jobId: 'j-1', attempt: 1, spec },
  {
    type: 'job.assign',
    jobId: 'j-2',
    attempt: 1,
    spec: { command: ['true'], env: {}, workDir: 'j-2', gpus: { count: 0 } },
  },
  {
    type: 'job.assign',
    jobId: 'j-3',
    attempt: 1,
    spec: {
      command: ['yolo', 'export'],
      env: {},
      workDir: 'j-3',
      gpus: { count: 0 },
      outputs: [{ path: 'best.onnx', name: 'best.onnx' }],
    },
  },
  { type: 'job.cancel', jobId: 'j-1', reason: 'cancelled by user' },
  { type: 'error', message: 'unknown message type "x"' },
];

type Asserts = Pick<typeof t, 'equal' | 'match'>;

/** Asserts the frame is refused, without throwing, with an error matching `reason`. */
const refuses = (t: Asserts, raw: string | Buffer, direction: Direction, reason: RegExp) => {
  const result = parseMessage(raw, direction);
  t.equal(result.ok, false, `refused: ${String(reason)}`);
  if (!result.ok) t.match(result.error, reason);
};

t.test('every message kind round-trips in its direction, as a string or a Buffer', async (t) => {
  for (const message of agentMessages) {
    t.same(parseMessage(encodeMessage(message), 'toServer'), { ok: true, message }, message.type);
    t.same(
      parseMessage(Buffer.from(encodeMessage(message)), 'toServer'),
      { ok: true, message },
      `${message.type} (Buffer)`,
    );
  }
  for (const message of serverMessages) {
    t.same(parseMessage(encodeMessage(message), 'toAgent'), { ok: true, message }, message.type);
  }
  const kinds = new Set([...agentMessages, ...serverMessages].map((message) => message.type));
  t.same([...kinds].sort(), [
    'capabilities',
    'error',
    'heartbeat',
    'hello',
    'job.accepted',
    'job.assign',
    'job.cancel',
    'job.finished',
    'job.log',
    'job.progress',
    'welcome',
  ]);
});

t.test('a message is only accepted in its own direction', async (t) => {
  refuses(t, encodeMessage(serverMessages[0]), 'toServer', /^unknown message type "welcome"$/);
  refuses(t, encodeMessage(agentMessages[4]), 'toAgent', /^unknown message type "job.accepted"$/);
});

t.test('malformed frames are refused with a reason', async (t) => {
  refuses(t, '{"type": "heartbeat",', 'toServer', /^message is not valid JSON$/);
  refuses(t, Buffer.from([0xff, 0xfe, 0x00]), 'toServer', /not valid JSON/);
  refuses(t, '', 'toAgent', /not valid JSON/);
  refuses(t, '[1, 2]', 'toServer', /^message must be a JSON object$/);
  refuses(t, 'null', 'toServer', /must be a JSON object/);
  refuses(t, '"hello"', 'toServer', /must be a JSON object/);
  refuses(t, '{"jobId": "j-1"}', 'toServer', /^message has no string "type"$/);
  refuses(t, '{"type": 7}', 'toServer', /no string "type"/);
  refuses(t, JSON.stringify({ type: 'x'.repeat(500) }), 'toServer', /^unknown message type "x{64}"$/);
  refuses(t, '{"type": "__proto__"}', 'toServer', /unknown message type/);
  refuses(
    t,
    '{"type": "job.accepted", "jobId": "j-1", "extra": true}',
    'toServer',
    /^invalid job.accepted: \(message\): Unrecognized key/,
  );
  refuses(t, '{"type": "job.accepted", "jobId": "../etc"}', 'toServer', /^invalid job.accepted: jobId: must be 1-128/);
  refuses(t, '{"type": "job.progress", "jobId": "j-1", "progress": 1.5}', 'toServer', /progress/);
  refuses(t, '{"type": "job.finished", "jobId": "j-1", "outcome": "exploded"}', 'toServer', /outcome/);
  refuses(t, '{"type": "heartbeat", "at": "yesterday"}', 'toServer', /^invalid heartbeat: at:/);
  refuses(
    t,
    '{"type": "heartbeat", "at": "2025-01-01T00:00:00Z", "freeGpus": [0, 0]}',
    'toServer',
    /freeGpus: must not repeat a GPU index/,
  );
});

t.test('oversized frames are refused before they are parsed', async (t) => {
  const padded = JSON.stringify({ type: 'job.accepted', jobId: 'j-1', pad: 'x'.repeat(MAX_MESSAGE_BYTES) });
  refuses(t, padded, 'toServer', /exceeds the 1048576-byte limit/);
  refuses(t, Buffer.from(padded), 'toServer', /exceeds the 1048576-byte limit/);
  // 400,000 three-byte characters: short in UTF-16, too long in UTF-8.
  refuses(t, JSON.stringify({ type: 'error', message: '€'.repeat(400_000) }), 'toAgent', /exceeds/);
  t.throws(
    () =>
      encodeMessage({
        type: 'job.log',
        jobId: 'j-1',
        stream: 'stdout',
        lines: Array.from({ length: 100 }, () => 'y'.repeat(16_000)),
      }),
    RangeError,
  );
});

t.test('log batches are limited in lines and in bytes per line', async (t) => {
  const batch = (lines: string[]) => JSON.stringify({ type: 'job.log', jobId: 'j-1', stream: 'stdout', lines });
  t.ok(
    parseMessage(batch(Array.from({ length: MAX_LOG_LINES_PER_MESSAGE }, () => 'ok')), 'toServer').ok,
    '1,000 lines',
  );
  refuses(
    t,
    batch(Array.from({ length: MAX_LOG_LINES_PER_MESSAGE + 1 }, () => 'ok')),
    'toServer',
    /^invalid job.log: lines: Too big/,
  );
  refuses(t, batch([]), 'toServer', /lines: Too small/);
  t.ok(parseMessage(batch(['x'.repeat(MAX_LOG_LINE_BYTES)]), 'toServer').ok, 'a 16 KiB line');
  refuses(t, batch(['x'.repeat(MAX_LOG_LINE_BYTES + 1)]), 'toServer', /lines.0: each line at most 16384 bytes/);
  refuses(t, batch(['é'.repeat(MAX_LOG_LINE_BYTES / 2 + 1)]), 'toServer', /each line at most/);
  refuses(t, JSON.stringify({ type: 'job.log', jobId: 'j-1', stream: 'stdin', lines: ['a'] }), 'toServer', /stream/);
});

t.test(
  'a hello is accepted when its versions overlap the control plane’s; the refusal names both ranges',
  async (t) => {
    const hello = { ...agentMessages[0] } as Record<string, unknown>;
    const parse = (patch: Record<string, unknown>) => parseMessage(JSON.stringify({ ...hello, ...patch }), 'toServer');
    // In terms of this build's range (1..PROTOCOL_VERSION), so a version bump keeps the test meaning the same.
    const V = PROTOCOL_VERSION;
    const ours = `${PROTOCOL_VERSION_MIN}..${V}`;
    t.ok(
      parse({ protocolVersion: V + 1, protocolVersions: { min: 1, max: V + 1 } }).ok,
      `an agent speaking 1..${V + 1}`,
    );
    t.ok(parse({ protocolVersion: 1 }).ok, 'an agent speaking only 1');
    t.same(parse({ protocolVersion: V + 1 }), {
      ok: false,
      error: `no common protocol version: the agent speaks ${V + 1}..${V + 1}, the control plane ${ours}`,
      unsupportedVersion: true,
    });
    t.same(parse({ protocolVersion: V + 2, protocolVersions: { min: V + 1, max: V + 2 } }), {
      ok: false,
      error: `no common protocol version: the agent speaks ${V + 1}..${V + 2}, the control plane ${ours}`,
      unsupportedVersion: true,
    });
    t.match(parse({ protocolVersion: '1' }), {
      ok: false,
      error: new RegExp(`^protocol version "1" is not supported; the control plane speaks ${ours}$`),
      unsupportedVersion: true,
    });
    t.match(parse({ protocolVersion: undefined }), {
      ok: false,
      error: /protocol version missing is not supported/,
      unsupportedVersion: true,
    });
    t.match(parse({ protocolVersions: { min: 2, max: 1 } }), { ok: false, unsupportedVersion: true }, 'an empty range');
    refuses(
      t,
      JSON.stringify({ ...hello, protocolVersions: { min: 1, max: PROTOCOL_VERSION + 1 } }),
      'toServer',
      /^invalid hello: protocolVersion: must be the highest of protocolVersions$/,
    );
    refuses(
      t,
      JSON.stringify({ ...hello, protocolVersions: { min: 1, max: 1, extra: 1 } }),
      'toServer',
      /^invalid hello: protocolVersions: Unrecognized key/,
    );
    t.notOk(
      'unsupportedVersion' in parseMessage('{"type":"heartbeat"}', 'toServer'),
      'other refusals are not about versions',
    );
  },
);

t.test('a welcome must name a version this side speaks', async (t) => {
  refuses(
    t,
    JSON.stringify({ ...serverMessages[0], protocolVersion: 0 }),
    'toAgent',
    new RegExp(
      `^protocol version 0 chosen by the control plane is not supported; this agent speaks ${PROTOCOL_VERSION_MIN}..${PROTOCOL_VERSION}$`,
    ),
  );
  refuses(
    t,
    JSON.stringify({ ...serverMessages[0], protocolVersion: PROTOCOL_VERSION + 1 }),
    'toAgent',
    new RegExp(`protocol version ${PROTOCOL_VERSION + 1} chosen`),
  );
  t.ok(
    parseMessage(JSON.stringify({ ...serverMessages[0], protocolVersion: 1 }), 'toAgent').ok,
    'a control plane that speaks only 1',
  );
});

t.test(
  'the version chosen is the highest both ranges include; a hello carries a range only when it is more than one version',
  async (t) => {
    t.equal(commonVersion({ min: 1, max: 2 }, { min: 1, max: 1 }), 1);
    t.equal(commonVersion({ min: 1, max: 3 }, { min: 2, max: 5 }), 3);
    t.equal(commonVersion({ min: 3, max: 4 }, { min: 1, max: 2 }), null);
    t.equal(commonVersion({ min: 1, max: 1 }, { min: 2, max: 3 }), null);
    t.same(helloVersionFields({ min: 1, max: 1 }), { protocolVersion: 1 }, 'as agents before ranges sent it');
    t.same(helloVersionFields({ min: 1, max: 2 }), { protocolVersion: 2, protocolVersions: { min: 1, max: 2 } });
  },
);

t.test('hello carries schema-valid hardware', async (t) => {
  const hello = (patch: Record<string, unknown>) =>
    JSON.stringify({ ...agentMessages[0], hardware: { ...hardware, ...patch } });
  t.ok(parseMessage(hello({ gpus: [], cpuOnly: true }), 'toServer').ok, 'a CPU-only host');
  refuses(
    t,
    hello({ gpus: [], cpuOnly: false }),
    'toServer',
    /hardware.cpuOnly: cpuOnly must be true exactly when gpus is empty/,
  );
  refuses(t, hello({ cpuOnly: true }), 'toServer', /cpuOnly must be true exactly/);
  refuses(t, hello({ cpu: { model: 'x', cores: 0 } }), 'toServer', /hardware.cpu.cores/);
  refuses(
    t,
    hello({ gpus: [{ ...hardware.gpus[0], typeId: 'H100 SXM' }], cpuOnly: false }),
    'toServer',
    /typeId: must be a lowercase hyphenated type ID/,
  );
  refuses(t, hello({ memoryBytes: -1 }), 'toServer', /hardware.memoryBytes/);
  refuses(
    t,
    JSON.stringify({ ...agentMessages[0], runningJobs: [{ jobId: 'j-1', attempt: 0 }] }),
    'toServer',
    /runningJobs.0.attempt/,
  );
});

t.test('a bad JobSpec refuses the whole job.assign', async (t) => {
  const assign = (patch: Record<string, unknown>) =>
    JSON.stringify({ type: 'job.assign', jobId: 'j-1', attempt: 1, spec: { ...spec, ...patch } });
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ command: [] }, /spec.command: Too small/],
    [{ command: 'python train.py' }, /spec.command/],
    [{ workDir: '/etc' }, /spec.workDir: must be a relative path without \.\./],
    [{ workDir: 'jobs/../../etc' }, /spec.workDir: must be a relative path/],
    [{ env: { 'BAD-NAME': 'x' } }, /spec.env.BAD-NAME: Invalid key in record/],
    [{ env: { A: 1 } }, /spec.env.A/],
    [
      { env: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`V${i}`, 'x'])) },
      /spec.env: at most 256 entries/,
    ],
    [{ gpus: { count: 2, indexes: [0] } }, /spec.gpus: indexes must list count GPUs/],
    [{ gpus: { count: 2, indexes: [1, 1] } }, /spec.gpus.indexes: must not repeat/],
    [{ gpus: { count: -1 } }, /spec.gpus.count/],
    [{ memoryBytes: 0 }, /spec.memoryBytes/],
    [{ cpus: 0 }, /spec.cpus/],
    [{ timeoutSeconds: 1.5 }, /spec.timeoutSeconds/],
    [{ privileged: true }, /spec: Unrecognized key/],
    [{ inputs: [{ url: 'http://cp/files/x', path: '../outside' }] }, /spec.inputs.0.path: must be a relative path/],
    [{ inputs: [{ url: 'file:///etc/passwd', path: 'in' }] }, /spec.inputs.0.url/],
    [{ checkpoint: { under: '/', file: 'last.pt', everySeconds: 5 } }, /spec.checkpoint.under/],
    [{ checkpoint: { under: 'runs', file: '../last.pt', everySeconds: 5 } }, /spec.checkpoint.file/],
    [{ checkpoint: { under: 'runs', file: 'last.pt', everySeconds: 0 } }, /spec.checkpoint.everySeconds/],
  ];
  for (const [patch, reason] of cases) refuses(t, assign(patch), 'toAgent', reason);
  const withoutCommand: Record<string, unknown> = { ...spec };
  delete withoutCommand.command;
  refuses(
    t,
    JSON.stringify({ type: 'job.assign', jobId: 'j-1', attempt: 1, spec: withoutCommand }),
    'toAgent',
    /spec.command/,
  );
});

t.test("the agent's HTTP routes: one definition, parameters filled in encoded", async (t) => {
  t.same(AGENT_ROUTES, {
    enroll: '/api/hosts/enroll',
    connect: '/api/workers/connect',
    checkpoint: '/api/workers/jobs/:jobId/checkpoint',
    output: '/api/workers/jobs/:jobId/outputs/:name',
  });
  t.equal(
    routePath(AGENT_ROUTES.output, { jobId: 'j1', name: 'best_openvino_model.zip' }),
    '/api/workers/jobs/j1/outputs/best_openvino_model.zip',
  );
  t.equal(routePath(AGENT_ROUTES.checkpoint, { jobId: 'a/b c' }), '/api/workers/jobs/a%2Fb%20c/checkpoint');
  t.equal(routePath(AGENT_ROUTES.enroll), '/api/hosts/enroll');
  t.throws(() => routePath(AGENT_ROUTES.checkpoint), /no value for :jobId/);
});

t.test('capabilities: format IDs only, bounded; job outputs: plain names, relative paths, at most 8', async (t) => {
  const capabilities = (patch: Record<string, unknown>) =>
    JSON.stringify({
      type: 'capabilities',
      exporters: ['onnx', 'openvino'],
      missingExporters: { engine: 'TensorRT needs an NVIDIA GPU' },
      ...patch,
    });
  t.ok(parseMessage(capabilities({}), 'toServer').ok);
  refuses(t, capabilities({ exporters: ['ONNX; rm -rf /'] }), 'toServer', /^invalid capabilities: exporters.0/);
  refuses(t, capabilities({ missingExporters: { engine: 'x'.repeat(513) } }), 'toServer', /missingExporters/);
  refuses(
    t,
    capabilities({ exporters: Array.from({ length: 65 }, (_, i) => `f${i}`) }),
    'toServer',
    /exporters: Too big/,
  );
  const assign = (outputs: unknown) =>
    JSON.stringify({
      ...serverMessages.find((message) => message.type === 'job.assign'),
      spec: { ...(serverMessages.find((message) => message.type === 'job.assign') as { spec: object }).spec, outputs },
    });
  t.ok(parseMessage(assign([{ path: 'runs/best_openvino_model', name: 'best_openvino_model.zip' }]), 'toAgent').ok);
  refuses(t, assign([{ path: '../etc/passwd', name: 'passwd' }]), 'toAgent', /outputs.0.path: must be a relative path/);
  refuses(t, assign([{ path: 'a', name: 'dir/name' }]), 'toAgent', /outputs.0.name/);
  refuses(
    t,
    assign(Array.from({ length: 9 }, (_, i) => ({ path: `f${i}`, name: `f${i}` }))),
    'toAgent',
    /outputs: Too big/,
  );
});
