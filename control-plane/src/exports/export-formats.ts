// The spec's export formats, as ultralytics 8.4.190 (engine/exporter.py, export_formats()) writes them. The format ID is
// also the toolchain a worker host reports (`capabilities`) when its trainer environment can export to it.

/** An argument of the spec's export table; `device` is set by the platform, never by the caller. */
export type ExportArg =
  | 'imgsz'
  | 'quantize'
  | 'dynamic'
  | 'simplify'
  | 'opset'
  | 'conf'
  | 'iou'
  | 'batch'
  | 'workspace'
  | 'nms'
  | 'optimize'
  | 'name'
  | 'data'
  | 'fraction'
  | 'device';

/** The quantize values ultralytics takes: 32 (FP32), 16 (FP16), 8 (INT8), or INT8 weights with 16- or 32-bit activations. */
export type Quantize = 32 | 16 | 8 | 'w8a16' | 'w8a32';

interface ExportFormat {
  /** The spec's "accepted args" column. */
  args: readonly ExportArg[];
  /** The precisions it takes besides FP32 (its quantize sets in exporter.py); fp32: false where only quantized exports exist. */
  quantize: readonly Quantize[];
  fp32: boolean;
  /** Where ultralytics writes the artifact for weights `<stem>.pt`, relative to them; a trailing slash marks a directory. */
  artifact: (stem: string, quantize: Quantize | null) => string;
  /** Offered by a mobile import link (the SDK's ExportsResolveMobileResponse formats). */
  mobile?: boolean;
}

const dir = (suffix: string) => (stem: string) => `${stem}${suffix}/`;
const file = (suffix: string) => (stem: string) => `${stem}${suffix}`;

export const EXPORT_FORMATS = {
  torchscript: {
    args: ['imgsz', 'quantize', 'dynamic', 'nms', 'batch', 'device'],
    quantize: [16],
    fp32: true,
    artifact: file('.torchscript'),
  },
  // A static INT8 ONNX replaces <stem>.onnx with <stem>_int8.onnx.
  onnx: {
    args: ['imgsz', 'quantize', 'dynamic', 'simplify', 'opset', 'nms', 'batch', 'data', 'fraction', 'device'],
    quantize: [16, 8],
    fp32: true,
    artifact: (stem, quantize) => `${stem}${quantize === 8 ? '_int8' : ''}.onnx`,
  },
  openvino: {
    args: ['imgsz', 'quantize', 'dynamic', 'nms', 'batch', 'data', 'fraction', 'device'],
    quantize: [16, 8],
    fp32: true,
    artifact: dir('_openvino_model'),
  },
  engine: {
    args: [
      'imgsz',
      'quantize',
      'dynamic',
      'simplify',
      'opset',
      'workspace',
      'nms',
      'batch',
      'data',
      'fraction',
      'device',
    ],
    quantize: [16, 8],
    fp32: true,
    artifact: file('.engine'),
  },
  coreml: {
    args: ['imgsz', 'dynamic', 'quantize', 'nms', 'batch', 'device'],
    quantize: [16, 8, 'w8a16'],
    fp32: true,
    artifact: dir('.mlpackage'),
    mobile: true,
  },
  coreai: {
    args: ['imgsz', 'batch', 'quantize'],
    quantize: [16],
    fp32: true,
    artifact: file('.aimodel'),
    mobile: true,
  },
  saved_model: {
    args: ['imgsz', 'quantize', 'opset', 'nms', 'batch', 'data', 'fraction', 'device'],
    quantize: [8],
    fp32: true,
    artifact: dir('_saved_model'),
  },
  pb: { args: ['imgsz', 'opset', 'batch', 'device'], quantize: [], fp32: true, artifact: file('.pb') },
  // Written inside the SavedModel directory it is compiled from.
  edgetpu: {
    args: ['imgsz', 'quantize', 'opset', 'data', 'fraction', 'device'],
    quantize: [8],
    fp32: false,
    artifact: (stem) => `${stem}_saved_model/${stem}_full_integer_quant_edgetpu.tflite`,
  },
  // The precision is in the name: <stem>.tflite, <stem>_int8.tflite, <stem>_w8a16.tflite, <stem>_w8a32.tflite.
  litert: {
    args: ['imgsz', 'quantize', 'batch', 'data', 'fraction', 'device'],
    quantize: [8, 'w8a16', 'w8a32'],
    fp32: true,
    artifact: (stem, quantize) =>
      `${stem}${quantize === 8 ? '_int8' : quantize === 'w8a16' || quantize === 'w8a32' ? `_${quantize}` : ''}.tflite`,
    mobile: true,
  },
  paddle: { args: ['imgsz', 'batch', 'device'], quantize: [], fp32: true, artifact: dir('_paddle_model') },
  mnn: {
    args: ['imgsz', 'batch', 'dynamic', 'quantize', 'simplify', 'opset', 'nms', 'device'],
    quantize: [16, 8],
    fp32: true,
    artifact: file('.mnn'),
  },
  ncnn: { args: ['imgsz', 'quantize', 'batch', 'device'], quantize: [16], fp32: true, artifact: dir('_ncnn_model') },
  imx: {
    args: ['imgsz', 'quantize', 'data', 'fraction', 'nms', 'device'],
    quantize: [8],
    fp32: false,
    artifact: dir('_imx_model'),
  },
  rknn: {
    args: ['imgsz', 'batch', 'name', 'quantize', 'simplify', 'opset', 'data', 'fraction', 'device'],
    quantize: [16, 8],
    fp32: false,
    artifact: dir('_rknn_model'),
  },
  executorch: { args: ['imgsz', 'batch', 'device'], quantize: [], fp32: true, artifact: dir('_executorch_model') },
  axelera: {
    args: ['imgsz', 'batch', 'quantize', 'data', 'fraction', 'device'],
    quantize: [8],
    fp32: false,
    artifact: dir('_axelera_model'),
  },
  deepx: {
    args: ['imgsz', 'quantize', 'simplify', 'opset', 'data', 'optimize', 'device'],
    quantize: [8],
    fp32: false,
    artifact: dir('_deepx_model'),
  },
  qnn: {
    args: ['imgsz', 'batch', 'name', 'quantize', 'simplify', 'opset', 'data', 'fraction', 'device'],
    quantize: ['w8a16'],
    fp32: false,
    artifact: file('_qnn.onnx'),
  },
  hailo: {
    args: ['imgsz', 'name', 'quantize', 'data', 'fraction', 'simplify', 'conf', 'iou', 'device'],
    quantize: [8],
    fp32: false,
    artifact: dir('_hailo_model'),
  },
  ascend: {
    args: ['imgsz', 'batch', 'name', 'quantize', 'opset', 'simplify', 'nms', 'device'],
    quantize: [16],
    fp32: false,
    artifact: dir('_ascend_model'),
  },
  xilinx: {
    args: ['imgsz', 'name', 'quantize', 'data', 'fraction', 'opset', 'simplify', 'device'],
    quantize: [8],
    fp32: false,
    artifact: dir('_xilinx_model'),
  },
} as const satisfies Record<string, ExportFormat>;

export type ExportFormatId = keyof typeof EXPORT_FORMATS;
export const EXPORT_FORMAT_IDS = Object.keys(EXPORT_FORMATS) as [ExportFormatId, ...ExportFormatId[]];
export const MOBILE_FORMATS = EXPORT_FORMAT_IDS.filter((id) => (EXPORT_FORMATS[id] as ExportFormat).mobile);

export const formatOf = (id: ExportFormatId): ExportFormat => EXPORT_FORMATS[id];

/** The artifact of an export, in the job's work dir, and the name its download gets (a directory is zipped by the agent). */
export function artifactOf(
  format: ExportFormatId,
  stem: string,
  quantize: Quantize | null,
): { path: string; downloadName: string } {
  const path = formatOf(format).artifact(stem, quantize);
  const directory = path.endsWith('/');
  const trimmed = directory ? path.slice(0, -1) : path;
  const base = trimmed.slice(trimmed.lastIndexOf('/') + 1);
  return { path: trimmed, downloadName: directory ? `${base}.zip` : base };
}
