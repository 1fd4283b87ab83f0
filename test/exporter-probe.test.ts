// The agent's exporter probe through the process runtime: the trainer environment's vp-probe-exporters (a real
// script in a stand-in venv here) is run from the venv's bin/, and whatever goes wrong with it (a failure, garbage,
// a flood of output, a hang) gives no exporters and a logged reason, never a stopped agent.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';

type Fixtures = Pick<typeof t, 'teardown' | 'testdir'>;
import {
  type Capabilities,
  keepProbingExporters,
  NO_EXPORTERS,
  PROBE_COMMAND,
  probeExporters,
} from '../worker-agent/src/exporter-probe.ts';
import type { Logger } from '../worker-agent/src/log.ts';
import { ProcessRuntime } from '../worker-agent/src/runtimes/process-runtime.ts';

/** A process runtime whose jobs' environment is a venv holding `script` as its probe. */
function venvWithProbe(t: Fixtures, script: string) {
  const venv = t.testdir();
  mkdirSync(join(venv, 'bin'));
  writeFileSync(join(venv, 'bin', PROBE_COMMAND), `#!/bin/sh\n${script}\n`);
  chmodSync(join(venv, 'bin', PROBE_COMMAND), 0o755);
  // A work root that does not exist yet, as on an agent's first start.
  return new ProcessRuntime({
    workRoot: join(venv, 'work'),
    environment: { PATH: `${join(venv, 'bin')}:/usr/bin:/bin`, VIRTUAL_ENV: venv },
  });
}

const probe = async (runtime: ProcessRuntime) => {
  const logs: string[] = [];
  const log: Logger = (level, msg, fields) => logs.push(`${level} ${msg} ${JSON.stringify(fields)}`);
  return { capabilities: await probeExporters(() => runtime.runExporterProbe(), log), logs };
};

t.test("the venv's probe answers: its exporters and the reasons for the others", async (t) => {
  const runtime = venvWithProbe(
    t,
    `echo '{"exporters": ["onnx", "torchscript", "onnx"], "missing": {"engine": "TensorRT needs an NVIDIA GPU"}}'`,
  );
  const { capabilities, logs } = await probe(runtime);
  t.same(capabilities, {
    exporters: ['onnx', 'torchscript'],
    missingExporters: { engine: 'TensorRT needs an NVIDIA GPU' },
  });
  t.match(logs, [/^info probed the exporters/]);
});

t.test('a failed, garbled or oversized probe: no exporters, the reason logged', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['exits non-zero', `echo 'ModuleNotFoundError: ultralytics' >&2; exit 1`, /Command failed|ModuleNotFoundError/],
    ['prints no JSON', `echo 'hello'`, /printed no JSON/],
    ['prints the wrong shape', `echo '{"exporters": "onnx"}'`, /answer is not/],
    ['names a format that is no format ID', `echo '{"exporters": ["ONNX; rm -rf /"], "missing": {}}'`, /answer is not/],
    ['floods its output', `head -c 1000000 /dev/zero | tr '\\0' x`, /maxBuffer/],
  ];
  for (const [what, script, reason] of cases) {
    const { capabilities, logs } = await probe(venvWithProbe(t, script));
    t.same(capabilities, { exporters: [], missingExporters: {} }, what);
    t.match(logs, [reason], `${what}: logged`);
  }
  const absent = new ProcessRuntime({ workRoot: t.testdir(), environment: { PATH: '/usr/bin:/bin' } });
  t.match(await probe(absent), { capabilities: { exporters: [] }, logs: [/ENOENT/] }, 'no probe installed');
});

t.test(
  'a failed probe is tried again after a back-off until it answers, and no more after; stop() ends the retries',
  async (t) => {
    // Fails twice (as a probe outrun by a busy host's bound), then answers; every run is counted in a file.
    const runs = join(t.testdir(), 'runs');
    const runtime = venvWithProbe(
      t,
      `echo run >> ${runs}; [ "$(wc -l < ${runs})" -gt 2 ] || exit 1; echo '{"exporters": ["onnx"], "missing": {}}'`,
    );
    const logs: string[] = [];
    const log: Logger = (level, msg, fields) => logs.push(`${level} ${msg} ${JSON.stringify(fields)}`);
    const reports: Capabilities[] = [];
    const answered = new Promise<void>((resolve) => {
      const probing = keepProbingExporters(
        () => runtime.runExporterProbe(),
        log,
        (capabilities) => {
          reports.push(capabilities);
          if (capabilities !== NO_EXPORTERS) resolve();
        },
        { firstMs: 20, capMs: 40 },
      );
      t.teardown(() => probing.stop());
    });
    await answered;
    t.same(
      reports,
      [NO_EXPORTERS, NO_EXPORTERS, { exporters: ['onnx'], missingExporters: {} }],
      'each result reported',
    );
    t.match(logs, [/^warn no exporters/, /delayMs":20/, /^warn no exporters/, /delayMs":40/, /^info probed/]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.equal(readFileSync(runs, 'utf8').split('\n').length - 1, 3, 'no probe after the answer');

    const failing = join(t.testdir(), 'runs');
    const broken = venvWithProbe(t, `echo run >> ${failing}; exit 1`);
    const probing = keepProbingExporters(
      () => broken.runExporterProbe(),
      log,
      () => {},
      { firstMs: 20, capMs: 20 },
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    probing.stop();
    const ranBeforeStop = readFileSync(failing, 'utf8').split('\n').length - 1;
    t.ok(ranBeforeStop >= 2, `retried (${ranBeforeStop} runs)`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    t.equal(readFileSync(failing, 'utf8').split('\n').length - 1, ranBeforeStop, 'none after stop()');
  },
);
