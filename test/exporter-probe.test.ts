// The agent's exporter probe through the process runtime: the trainer environment's vp-probe-exporters (a real
// script in a stand-in venv here) is run from the venv's bin/, and whatever goes wrong with it (a failure, garbage,
// a flood of output, a hang) gives no exporters and a logged reason, never a stopped agent.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';

type Fixtures = Pick<typeof t, 'teardown' | 'testdir'>;
import { PROBE_COMMAND, probeExporters } from '../worker-agent/src/exporter-probe.ts';
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
