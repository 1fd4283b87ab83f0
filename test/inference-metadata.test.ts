// What an ultralytics export says about itself is read from its metadata_props without an ONNX library: the protobuf
// walk and the Python literals (repr) its values are written in, including names Python had to quote or escape.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidModel, OnnxModel } from '../inference/src/index.ts';
import { modelInfo } from '../inference/src/model-info.ts';
import { parsePythonLiteral, readOnnxMetadata } from '../inference/src/onnx-metadata.ts';
import { exportedVariant, trainedModel } from './helpers/yolo-models.ts';

// The first run trains the fixture models (a few minutes on 2 cores); later runs take them from .cache/test-models.
t.setTimeout(20 * 60_000);

t.test('Python reprs parse as ast.literal_eval would', async (tt) => {
  tt.same(
    parsePythonLiteral("{0: 'person', 1: 'car'}"),
    new Map([
      [0, 'person'],
      [1, 'car'],
    ]),
  );
  // repr() switches to double quotes when the name has a single quote, and escapes both when it has both.
  tt.same(
    parsePythonLiteral(`{0: "person's bag", 1: 'say "hi" it\\'s', 2: 'tab\\there', 3: 'caf\\xe9 ü'}`),
    new Map([
      [0, "person's bag"],
      [1, `say "hi" it's`],
      [2, 'tab\there'],
      [3, 'café ü'],
    ]),
  );
  tt.same(parsePythonLiteral('[17, 3]'), [17, 3]);
  tt.same(parsePythonLiteral('(640, 480)'), [640, 480]);
  tt.equal(parsePythonLiteral('True'), true);
  tt.same(
    parsePythonLiteral("{'batch': 1, 'nms': None, 'dynamic': True, 'fraction': 1.0, 'half': False}"),
    new Map<string, unknown>([
      ['batch', 1],
      ['nms', null],
      ['dynamic', true],
      ['fraction', 1],
      ['half', false],
    ]),
  );
  tt.throws(() => parsePythonLiteral("{0: 'unterminated}"));
  tt.throws(() => parsePythonLiteral('__import__("os")'));
});

t.test('an export’s metadata_props become its ModelInfo', async (tt) => {
  const pose = await trainedModel('pose');
  const props = readOnnxMetadata(readFileSync(pose.onnx));
  tt.equal(props.get('task'), 'pose');
  tt.equal(props.get('version'), '8.4.190');
  tt.same(modelInfo(props, true), {
    task: 'pose',
    names: ['triangle'],
    imgsz: [64, 64],
    stride: 32,
    dynamic: true,
    end2end: false,
    kptShape: [3, 3],
    topK: undefined,
  });

  const detect = await trainedModel('detect');
  const fixed = modelInfo(readOnnxMetadata(readFileSync(await exportedVariant(detect, ['dynamic=False']))), false);
  tt.same([fixed.dynamic, fixed.imgsz, fixed.end2end], [false, [64, 64], false], 'a static export');
  const e2e = modelInfo(readOnnxMetadata(readFileSync((await trainedModel('detect', 'yolo26n')).onnx)), true);
  tt.same([e2e.end2end, e2e.topK], [true, 84], 'a NMS-free head and its TopK (8² + 4² + 2² anchors at 64 px)');

  tt.throws(
    () => readOnnxMetadata(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f])),
    /longer than its container/,
    'a field longer than the file',
  );
  tt.same(modelInfo(new Map([['names', "{0: 'a'}"]]), true).task, 'detect', 'no task: detect, as ultralytics assumes');
  tt.throws(() => modelInfo(new Map(), true), /no class names/);
});

t.test('a file that is not a usable export is refused as InvalidModel', async (tt) => {
  const dir = mkdtempSync(join(tmpdir(), 'inference-model-'));
  tt.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'text.onnx'), 'this is not a model');
  await tt.rejects(OnnxModel.load(join(dir, 'text.onnx')), InvalidModel, 'not ONNX');
  // A valid ONNX graph without ultralytics' metadata: the fixture with its metadata_props (field 14) dropped.
  const bytes = readFileSync((await trainedModel('detect')).onnx);
  writeFileSync(join(dir, 'bare.onnx'), withoutMetadata(bytes));
  await tt.rejects(
    OnnxModel.load(join(dir, 'bare.onnx')),
    { name: 'InvalidModel', message: /no class names/ },
    'no metadata',
  );
});

/** The top-level protobuf fields of a ModelProto except metadata_props (field 14). */
function withoutMetadata(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  const varint = () => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = bytes[at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
  };
  while (at < bytes.length) {
    const start = at;
    const tag = varint();
    const wire = tag % 8;
    if (wire === 0) varint();
    else if (wire === 2) {
      const length = varint();
      at += length;
    } else at += wire === 1 ? 8 : 4;
    if (Math.floor(tag / 8) !== 14) parts.push(bytes.subarray(start, at));
  }
  return Buffer.concat(parts);
}
