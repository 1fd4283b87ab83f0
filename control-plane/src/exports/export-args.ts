// An export's args as the spec's table takes them: checked against the format, normalized (so equivalent requests
// compare equal, for 409 and reuse), and turned into `yolo export` arguments.
import { z } from 'zod';
import { Invalid } from '../http/errors.ts';
import { formatOf, type ExportArg, type ExportFormatId, type Quantize } from './export-formats.ts';

const Imgsz = z.union([
  z.number().int().min(32).max(8192).multipleOf(32),
  z.tuple([z.number().int().min(32).max(8192).multipleOf(32), z.number().int().min(32).max(8192).multipleOf(32)]),
]);
/** ultralytics' precisions, and the names people use for them. */
const QUANTIZE_ALIASES: Record<string, Quantize> = {
  int8: 8,
  fp16: 16,
  half: 16,
  fp32: 32,
  w8a16: 'w8a16',
  w8a32: 'w8a32',
};
const QuantizeArg = z.union([
  z.literal(8),
  z.literal(16),
  z.literal(32),
  z.enum(Object.keys(QUANTIZE_ALIASES) as [string, ...string[]]),
  z.null(),
]);

export const ExportArgs = z
  .strictObject({
    imgsz: Imgsz.nullable()
      .optional()
      .meta({ description: 'Input size: a multiple of 32 from 32 to 8192, or [height, width]' }),
    quantize: QuantizeArg.optional().meta({
      description:
        "Precision: 32 (FP32, default), 16 (FP16), 8 (INT8), 'w8a16', 'w8a32'; also 'fp32', 'fp16'/'half', 'int8'",
    }),
    dynamic: z.boolean().nullable().optional(),
    simplify: z.boolean().nullable().optional(),
    opset: z.number().int().min(7).max(30).nullable().optional(),
    conf: z.number().min(0).max(1).nullable().optional(),
    iou: z.number().min(0).max(1).nullable().optional(),
    batch: z.number().int().min(1).max(1024).nullable().optional(),
    workspace: z.number().min(0.25).max(1024).nullable().optional().meta({ description: 'TensorRT workspace in GiB' }),
    nms: z
      .boolean()
      .nullable()
      .optional()
      .meta({ description: 'null: raw outputs; false: an NMS-free head where available; true: NMS embedded' }),
    optimize: z
      .union([z.boolean(), z.number().int().min(0).max(3)])
      .nullable()
      .optional(),
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a short token (letters, digits, _ . -)')
      .nullable()
      .optional()
      .meta({ description: 'The device target (rknn, qnn, hailo, ascend, xilinx)' }),
    data: z
      .string()
      .regex(/^[\w.-]{1,128}\.ya?ml$/, 'must be a dataset YAML the ultralytics package ships (coco8.yaml)')
      .nullable()
      .optional()
      .meta({ description: 'Calibration dataset: a YAML bundled with ultralytics (nothing is downloaded)' }),
    fraction: z.number().gt(0).max(1).nullable().optional(),
    device: z.unknown().optional(),
  })
  .meta({
    description:
      "Export options from the spec's table; each format takes only its own (400 names the argument and format)",
  });
export type ExportArgs = z.output<typeof ExportArgs>;

/** The exporter's defaults for the args the spec lets any format carry at their default value. */
const DEFAULTS: Partial<Record<ExportArg, unknown>> = {
  batch: 1,
  dynamic: false,
  simplify: true,
  opset: null,
  workspace: null,
  optimize: false,
};

/** Normalized args: only what differs from the defaults, quantize as ultralytics takes it, keys sorted. */
export type NormalizedArgs = Record<string, string | number | boolean | number[] | null>;

export function normalizeArgs(format: ExportFormatId, args: ExportArgs): NormalizedArgs {
  if (args.device !== undefined)
    throw Invalid('device is set by the platform (the GPU for engine exports, else the CPU)');
  const spec = formatOf(format);
  const accepted = new Set<string>(spec.args);
  const normalized: NormalizedArgs = {};
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || name === 'device') continue;
    // nms=null asks for raw outputs (ultralytics' default is false, an NMS-free head); other nulls mean "not given".
    if (value === null && !(name === 'nms' && accepted.has(name))) continue;
    if (name in DEFAULTS && DEFAULTS[name as ExportArg] === value) continue;
    if (!accepted.has(name))
      throw Invalid(
        `${name} is not supported for format ${format} (it takes ${spec.args.filter((arg) => arg !== 'device').join(', ')})`,
      );
    // [n, n] is n; read through args.imgsz, whose type is known (`value` also spans device's unknown).
    const { imgsz } = args;
    normalized[name] =
      name === 'imgsz' && Array.isArray(imgsz) && imgsz[0] === imgsz[1] ? imgsz[0] : (value as NormalizedArgs[string]);
  }
  const quantize = quantizeFor(format, args.quantize);
  if (quantize === null) delete normalized.quantize;
  else normalized.quantize = quantize;
  return Object.fromEntries(Object.entries(normalized).sort(([a], [b]) => a.localeCompare(b)));
}

/** The precision the export gets (null: FP32), refused where the format cannot give it. */
function quantizeFor(format: ExportFormatId, given: ExportArgs['quantize']): Quantize | null {
  const spec = formatOf(format);
  const quantize = typeof given === 'string' ? QUANTIZE_ALIASES[given]! : (given ?? null);
  if (quantize === null || quantize === 32) {
    if (spec.fp32) return null;
    if (format === 'imx' && quantize === 32) throw Invalid('imx exports are INT8 only (quantize 8)');
    if (quantize === 32) throw Invalid(`${format} exports cannot be FP32; quantize: ${spec.quantize.join(' or ')}`);
    // ultralytics quantizes these itself; recorded so equivalent requests compare equal.
    return spec.quantize.length === 1 ? spec.quantize[0]! : null;
  }
  if (!(spec.quantize as readonly Quantize[]).includes(quantize)) {
    if (format === 'imx') throw Invalid('imx exports are INT8 only (quantize 8)');
    const options = [...spec.quantize, ...(spec.fp32 ? [32] : [])];
    throw Invalid(
      `quantize ${quantize} is not supported for format ${format}${options.length ? ` (it takes ${options.join(', ')})` : ' (it is FP32 only)'}`,
    );
  }
  return quantize;
}

/** The `yolo export` command line of an export of `weights` (in the job's work dir): args (k=v) in name order (jsonb keeps its own). */
export function exportCommand(format: ExportFormatId, args: NormalizedArgs, weights: string, onGpu: boolean): string[] {
  const options = Object.entries(args)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => {
      const text = Array.isArray(value)
        ? `[${value.join(',')}]`
        : typeof value === 'boolean'
          ? value
            ? 'True'
            : 'False'
          : value === null
            ? 'None'
            : String(value);
      return `${name}=${text}`;
    });
  return ['yolo', 'export', `model=${weights}`, `format=${format}`, ...options, `device=${onGpu ? '0' : 'cpu'}`];
}
