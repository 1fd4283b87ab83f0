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
  return {
    task: task as Task,
    names: Array.from(nameList, (name, index) => name ?? `class${index}`),
    imgsz: size,
    stride: Number(props.get('stride') ?? 32),
    dynamic: typeof dynamicArg === 'boolean' ? dynamicArg : dynamicInput,
    end2end: literal('end2end') === true || arg('nms') === true,
    kptShape: Array.isArray(kpt) && kpt.length === 2 ? [Number(kpt[0]), Number(kpt[1])] : undefined,
  };
}
