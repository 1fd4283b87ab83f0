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
