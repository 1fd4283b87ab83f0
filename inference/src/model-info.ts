import { parsePythonLiteral, type PythonValue } from './onnx-metadata.ts';

export type Task = 'detect' | 'segment' | 'semantic' | 'depth' | 'classify' | 'pose' | 'obb';

/** What an ultralytics ONNX export says about itself (its metadata_props) plus what its outputs reveal. */
export interface ModelInfo {
  task: Task;
  /** Class names in index order. */
  names: string[];
  /** The export's input size [height, width]; with `dynamic` any multiple of `stride` is accepted. */
  imgsz: [number, number];
  stride: number;
  dynamic: boolean;
  /** NMS-free head (YOLO26 and others): outputs are [batch, maxDet, 6 + extras], already filtered. */
  end2end: boolean;
  /** Pose: [keypoints, 2 or 3]. */
  kptShape?: [number, number];
  /**
   * A NMS-free head's TopK k, fixed in the graph at export (min(300, anchors at the export size)): onnxruntime fails on
   * an input with fewer anchors. Absent for other heads (NMS inside the graph included).
   */
  topK?: number;
}

const TASKS: readonly Task[] = ['detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb'];

/** Bounds on what an export's metadata may say (a tenant's file: checked before its session is made or run). */
export const MODEL_LIMITS = {
  /** Class names, as a dataset's (25,000 names of up to 256 characters). */
  classes: 25_000,
  className: 256,
  /** One metadata value's characters (names at the bounds above fit). */
  metadataValue: 8 * 2 ** 20,
  /** An input side in pixels: 3 × 4096² float32 is a 201 MB input tensor. */
  imgsz: 4096,
  stride: 256,
  keypoints: 1000,
} as const;

/** The ModelInfo of an export from its metadata_props, read as ultralytics' backend does (apply_metadata); throws when a value is out of bounds. */
export function modelInfo(props: Map<string, string>, dynamicInput: boolean): ModelInfo {
  const literal = (key: string): PythonValue | undefined => {
    const text = props.get(key);
    if (text !== undefined && text.length > MODEL_LIMITS.metadataValue)
      throw new Error(`the ONNX file's metadata '${key}' is longer than ${MODEL_LIMITS.metadataValue} characters`);
    return text === undefined ? undefined : parsePythonLiteral(text);
  };
  const task = props.get('task') ?? 'detect';
  if (!TASKS.includes(task as Task))
    throw new Error(`the ONNX file is for task '${task.slice(0, 40)}', which is not supported`);
  const names = classNames(literal('names'));
  const imgsz = literal('imgsz');
  const size: [number, number] = imgsz === undefined ? [640, 640] : imageSize(imgsz);
  const args = literal('args');
  const arg = (key: string) => (args instanceof Map ? args.get(key) : undefined);
  const dynamicArg = arg('dynamic');
  const kpt = literal('kpt_shape');
  const stride = boundedInt(Number(props.get('stride') ?? 32), 1, MODEL_LIMITS.stride, 'stride');
  const kptShape = kpt === undefined || kpt === null ? undefined : keypointShape(kpt);
  return {
    task: task as Task,
    names,
    imgsz: size,
    stride,
    // A static input is run at its own size whatever the export's args say.
    dynamic: dynamicInput && dynamicArg !== false,
    end2end: literal('end2end') === true || arg('nms') === true,
    kptShape,
    topK: literal('end2end') === true ? Math.min(300, anchorCount(size, stride)) : undefined,
  };
}

/** `{0: 'a', 1: 'b'}` as ultralytics' check_class_names requires it: indices 0 … n-1, each once. */
function classNames(names: PythonValue | undefined): string[] {
  if (!(names instanceof Map))
    throw new Error('the ONNX file has no class names in its metadata (not an ultralytics export?)');
  if (names.size > MODEL_LIMITS.classes)
    throw new Error(`the ONNX file names ${names.size} classes; at most ${MODEL_LIMITS.classes} are allowed`);
  const list = Array.from<string | undefined>({ length: names.size });
  for (const [key, name] of names) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= names.size)
      throw new Error(
        `the ONNX file's class names have index ${String(key).slice(0, 20)}: a model of ${names.size} classes has indices 0-${names.size - 1}`,
      );
    if (list[index] !== undefined) throw new Error(`the ONNX file's class names give index ${index} twice`);
    if (typeof name !== 'string' && typeof name !== 'number')
      throw new Error(`the ONNX file's class name ${index} is not a string`);
    const text = String(name);
    if (text.length > MODEL_LIMITS.className)
      throw new Error(`the ONNX file's class name ${index} is longer than ${MODEL_LIMITS.className} characters`);
    list[index] = text;
  }
  return list as string[];
}

function imageSize(value: PythonValue): [number, number] {
  const sides =
    typeof value === 'number' ? [value, value] : Array.isArray(value) && value.length === 2 ? value : undefined;
  if (!sides) throw new Error("the ONNX file's imgsz is not [height, width]");
  return [boundedInt(sides[0], 1, MODEL_LIMITS.imgsz, 'imgsz'), boundedInt(sides[1], 1, MODEL_LIMITS.imgsz, 'imgsz')];
}

function keypointShape(value: PythonValue): [number, number] {
  if (!Array.isArray(value) || value.length !== 2)
    throw new Error("the ONNX file's kpt_shape is not [keypoints, 2 or 3]");
  const dims = boundedInt(value[1], 2, 3, 'kpt_shape dims');
  return [boundedInt(value[0], 1, MODEL_LIMITS.keypoints, 'kpt_shape keypoints'), dims];
}

function boundedInt(value: PythonValue | undefined, min: number, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new Error(`the ONNX file's ${what} must be an integer from ${min} to ${max}`);
  return value;
}

/** Anchor points of a P3–P5 head (strides stride/4, stride/2, stride) on an input of [height, width]. */
export function anchorCount([height, width]: [number, number], stride: number): number {
  return [stride / 4, stride / 2, stride].reduce((sum, s) => sum + Math.floor(height / s) * Math.floor(width / s), 0);
}
