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

/** The ModelInfo of an export from its metadata_props, read as ultralytics' backend does (apply_metadata). */
export function modelInfo(props: Map<string, string>, dynamicInput: boolean): ModelInfo {
  const literal = (key: string): PythonValue | undefined => {
    const text = props.get(key);
    return text === undefined ? undefined : parsePythonLiteral(text);
  };
  const task = props.get('task') ?? 'detect';
  if (!TASKS.includes(task as Task)) throw new Error(`the ONNX file is for task '${task}', which is not supported`);
  const names = literal('names');
  if (!(names instanceof Map)) throw new Error('the ONNX file has no class names in its metadata (not an ultralytics export?)');
  const nameList: string[] = [];
  for (const [index, name] of names) nameList[Number(index)] = String(name);
  const imgsz = literal('imgsz');
  const size: [number, number] = Array.isArray(imgsz) && imgsz.length === 2 ? [Number(imgsz[0]), Number(imgsz[1])] : [640, 640];
  const args = literal('args');
  const arg = (key: string) => (args instanceof Map ? args.get(key) : undefined);
  const dynamicArg = arg('dynamic');
  const kpt = literal('kpt_shape');
  const stride = Number(props.get('stride') ?? 32);
  return {
    task: task as Task,
    names: Array.from(nameList, (name, index) => name ?? `class${index}`),
    imgsz: size,
    stride,
    dynamic: typeof dynamicArg === 'boolean' ? dynamicArg : dynamicInput,
    end2end: literal('end2end') === true || arg('nms') === true,
    kptShape: Array.isArray(kpt) && kpt.length === 2 ? [Number(kpt[0]), Number(kpt[1])] : undefined,
    topK: literal('end2end') === true ? Math.min(300, anchorCount(size, stride)) : undefined,
  };
}

/** Anchor points of a P3–P5 head (strides stride/4, stride/2, stride) on an input of [height, width]. */
export function anchorCount([height, width]: [number, number], stride: number): number {
  return [stride / 4, stride / 2, stride].reduce((sum, s) => sum + Math.floor(height / s) * Math.floor(width / s), 0);
}
