// The trainer environment's export toolchains, for real: its probe names the formats it can export, and a model
// trained here exports with the real `yolo export` (offline, no auto-install) to each of them, lands where
// the control plane's format table (control-plane/src/exports/export-formats.ts) says, loads with YOLO(artifact) and
// predicts the boxes the .pt model predicts.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { EXPORT_FORMAT_IDS, formatOf, type ExportFormatId } from '../control-plane/src/exports/export-formats.ts';
import { PROBE_TIMEOUT_MS } from '../worker-agent/src/exporter-probe.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);
const PYTHON = join(VENV, 'bin/python');
const COMPARE = join(ROOT, 'test/exports/compare_predictions.py');
/** The formats the appliance's CI environment must export (and predict) on CPU. */
const CI_FORMATS = ['torchscript', 'onnx', 'openvino', 'ncnn', 'mnn'];
/** Where the control plane expects `yolo export` of `<stem>.pt` to leave a format's artifact; a directory ends in /. */
const artifactPath = (format: string, stem: string) => formatOf(format as ExportFormatId).artifact(stem, null);
// Few, mostly low-confidence boxes come out of a 3-epoch model: compare everything it predicts.
const CONF = '0.001';

function run(
  file: string,
  args: string[],
  cwd: string,
  timeoutMs = 240_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

const dir = mkdtempSync(join(tmpdir(), 'vp-export-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Trains yolo11n on the demo shapes at imgsz 64; returns its last.pt (best.pt of a model this young is usually its
 * first epoch, and training is deterministic: two runs would share it).
 */
async function train(name: string, epochs: number, seed: number): Promise<string> {
  const trained = await run(
    join(VENV, 'bin/yolo'),
    [
      'train',
      'model=yolo11n.yaml',
      `data=${join(dir, 'dataset/data.yaml')}`,
      `epochs=${epochs}`,
      `seed=${seed}`,
      'imgsz=64',
      'batch=16',
      'workers=0',
      'device=cpu',
      'plots=False',
      `project=${dir}`,
      `name=${name}`,
    ],
    dir,
  );
  if (trained.code !== 0)
    throw new Error(`training ${name} failed:\n${trained.stdout.slice(-3000)}${trained.stderr.slice(-3000)}`);
  return join(dir, name, 'weights/last.pt');
}

t.test(
  "the probe lists the CI formats and names what is missing for the others, within the agent's bound",
  async (t) => {
    const started = Date.now();
    const probe = await run(join(VENV, 'bin/vp-probe-exporters'), [], dir, PROBE_TIMEOUT_MS);
    t.equal(probe.code, 0, probe.stderr);
    const result = JSON.parse(probe.stdout) as {
      exporters: string[];
      missing: Record<string, string>;
      export_only: Record<string, string>;
    };
    for (const format of CI_FORMATS)
      t.ok(
        result.exporters.includes(format),
        `${format} is exportable${format in result.missing ? `, not: ${result.missing[format]}` : ''}`,
      );
    t.match(
      result.missing.saved_model,
      /tensorflow/,
      'a format whose toolchain is not installed names what is missing',
    );
    t.notOk(result.exporters.includes('engine'), 'no TensorRT export without tensorrt and a CUDA device');
    for (const format of result.exporters)
      t.ok((EXPORT_FORMAT_IDS as string[]).includes(format), `the control plane knows the format ${format}`);
    // The agent's bound, not a speed: a slower answer would give its host no exporters until the retry.
    const took = Date.now() - started;
    t.ok(took < PROBE_TIMEOUT_MS, `probe took ${took} ms, within the agent's ${PROBE_TIMEOUT_MS / 1000} s`);
  },
);

t.test('yolo export writes each CI format offline, and the artifact predicts what the .pt predicts', async (t) => {
  const dataset = await run(PYTHON, [join(ROOT, 'installer/trainer/make-demo-dataset.py'), join(dir, 'dataset')], dir);
  t.equal(dataset.code, 0, dataset.stderr);
  const weights = await train('shapes', 3, 0);
  const image = join(dir, 'dataset/images/val/0000.jpg');

  for (const format of CI_FORMATS) {
    await t.test(format, async (t) => {
      const exported = await run(
        join(VENV, 'bin/yolo'),
        ['export', `model=${weights}`, `format=${format}`, 'imgsz=64'],
        dir,
      );
      const log = `${exported.stdout}${exported.stderr}`;
      t.equal(exported.code, 0, log.slice(-3000));
      // With YOLO_AUTOINSTALL=false a missing package is reported by ultralytics' check_requirements ("requirements:").
      t.notMatch(log, /requirements:|AutoUpdate|pip install/, 'no requirement was missing or installed at export time');
      const expected = artifactPath(format, 'last');
      const artifact = join(dirname(weights), expected);
      t.ok(existsSync(artifact), `${artifact} exists`);
      if (!existsSync(artifact)) return;
      t.equal(
        statSync(artifact).isDirectory(),
        expected.endsWith('/'),
        'a file or a directory, as the control plane expects',
      );

      // The 3-epoch model's confidences are near zero, where OpenVINO's default bf16 (AVX512-BF16 CPUs) reorders boxes.
      const precision = format === 'openvino' ? ['--openvino-f32'] : [];
      const compared = await run(PYTHON, [COMPARE, weights, artifact, image, '--conf', CONF, ...precision], dir);
      const result = JSON.parse(compared.stdout || '{}') as { ok?: boolean; details?: { matched?: number } };
      t.equal(compared.code, 0, `${compared.stdout}${compared.stderr.slice(-2000)}`);
      t.equal(result.ok, true);
      t.ok((result.details?.matched ?? 0) > 0, 'boxes were compared');
    });
  }

  await t.test('a different model does not match the artifact', async (t) => {
    const other = await train('other', 1, 1);
    const compared = await run(
      PYTHON,
      [COMPARE, other, join(dirname(weights), 'last.onnx'), image, '--conf', CONF],
      dir,
    );
    t.equal(compared.code, 1, compared.stdout);
    t.match(JSON.parse(compared.stdout), { ok: false });
  });
});
