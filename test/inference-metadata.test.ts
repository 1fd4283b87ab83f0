// What an ultralytics export says about itself is read from its metadata_props without an ONNX library: the protobuf
// walk and the Python literals (repr) its values are written in, including names Python had to quote or escape.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { modelInfo } from '../inference/src/model-info.ts';
import { parsePythonLiteral, readOnnxMetadata } from '../inference/src/onnx-metadata.ts';
import { exportedVariant, trainedModel } from './helpers/yolo-models.ts';

t.test('Python reprs parse as ast.literal_eval would', async (tt) => {
  tt.same(parsePythonLiteral("{0: 'person', 1: 'car'}"), new Map([[0, 'person'], [1, 'car']]));
  // repr() switches to double quotes when the name has a single quote, and escapes both when it has both.
  tt.same(parsePythonLiteral(`{0: "person's bag", 1: 'say "hi" it\\'s', 2: 'tab\\there', 3: 'caf\\xe9 ü'}`), new Map([[0, "person's bag"], [1, `say "hi" it's`], [2, 'tab\there'], [3, 'café ü']]));
  tt.same(parsePythonLiteral('[17, 3]'), [17, 3]);
  tt.same(parsePythonLiteral('(640, 480)'), [640, 480]);
  tt.equal(parsePythonLiteral('True'), true);
  tt.same(parsePythonLiteral("{'batch': 1, 'nms': None, 'dynamic': True, 'fraction': 1.0, 'half': False}"), new Map<string, unknown>([['batch', 1], ['nms', null], ['dynamic', true], ['fraction', 1], ['half', false]]));
  tt.throws(() => parsePythonLiteral("{0: 'unterminated}"));
  tt.throws(() => parsePythonLiteral('__import__("os")'));
});

t.test('an export’s metadata_props become its ModelInfo', async (tt) => {
  const pose = await trainedModel('pose');
  const props = readOnnxMetadata(readFileSync(pose.onnx));
  tt.equal(props.get('task'), 'pose');
  tt.equal(props.get('version'), '8.4.190');
  tt.same(modelInfo(props, true), { task: 'pose', names: ['triangle'], imgsz: [64, 64], stride: 32, dynamic: true, end2end: false, kptShape: [3, 3], topK: undefined });

  const detect = await trainedModel('detect');
  const fixed = modelInfo(readOnnxMetadata(readFileSync(await exportedVariant(detect, ['dynamic=False']))), false);
  tt.same([fixed.dynamic, fixed.imgsz, fixed.end2end], [false, [64, 64], false], 'a static export');
  const e2e = modelInfo(readOnnxMetadata(readFileSync((await trainedModel('detect', 'yolo26n')).onnx)), true);
  tt.same([e2e.end2end, e2e.topK], [true, 84], 'a NMS-free head and its TopK (8² + 4² + 2² anchors at 64 px)');

  tt.throws(() => readOnnxMetadata(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f])), /longer than its container/, 'a field longer than the file');
  tt.same(modelInfo(new Map([['names', "{0: 'a'}"]]), true).task, 'detect', 'no task: detect, as ultralytics assumes');
  tt.throws(() => modelInfo(new Map(), true), /no class names/);
});
