// Hand-made ONNX files for tests of what a hostile or broken export does: the ModelProto written as protobuf
// directly (no ONNX library), a graph of a few nodes, with whatever metadata_props the test wants.

export type ElemType = 'float32' | 'int64';
export type Dim = number | string;

export interface CraftedGraph {
  inputs: Array<{ name: string; type?: ElemType; shape: Dim[] }>;
  outputs: Array<{ name: string; type?: ElemType; shape: Dim[] }>;
  /** attributes: integer ones (keepdims, axis …). */
  nodes: Array<{ op: string; inputs: string[]; outputs: string[]; attributes?: Record<string, number> }>;
  initializers?: Array<{ name: string; dims: number[]; data: Float32Array | BigInt64Array }>;
  metadata?: Record<string, string>;
}

const ELEM: Record<ElemType, number> = { float32: 1, int64: 7 };

/** The ONNX file (ir_version 8, opset 17) of `graph`. */
export function craftOnnx(graph: CraftedGraph): Buffer {
  const valueInfo = ({ name, type = 'float32', shape }: CraftedGraph['inputs'][number]) =>
    message([
      str(1, name),
      msg(
        2,
        message([
          msg(
            1,
            message([
              int(1, ELEM[type]),
              msg(
                2,
                message(
                  shape.map((dim) => msg(1, typeof dim === 'number' ? message([int(1, dim)]) : message([str(2, dim)]))),
                ),
              ),
            ]),
          ),
        ]),
      ),
    ]);
  const tensor = ({ name, dims, data }: NonNullable<CraftedGraph['initializers']>[number]) =>
    message([
      ...dims.map((dim) => int(1, dim)),
      int(2, data instanceof Float32Array ? ELEM.float32 : ELEM.int64),
      str(8, name),
      bytes(9, Buffer.from(data.buffer, data.byteOffset, data.byteLength)),
    ]);
  const graphProto = message([
    ...graph.nodes.map((node, index) =>
      msg(
        1,
        message([
          ...node.inputs.map((name) => str(1, name)),
          ...node.outputs.map((name) => str(2, name)),
          str(3, `n${index}`),
          str(4, node.op),
          ...Object.entries(node.attributes ?? {}).map(([name, value]) =>
            msg(5, message([str(1, name), int(3, value), int(20, 2)])),
          ),
        ]),
      ),
    ),
    str(2, 'crafted'),
    ...(graph.initializers ?? []).map((init) => msg(5, tensor(init))),
    ...graph.inputs.map((input) => msg(11, valueInfo(input))),
    ...graph.outputs.map((output) => msg(12, valueInfo(output))),
  ]);
  return message([
    int(1, 8),
    str(2, 'test'),
    msg(7, graphProto),
    msg(8, message([str(1, ''), int(2, 17)])),
    ...Object.entries(graph.metadata ?? {}).map(([key, value]) => msg(14, message([str(1, key), str(2, value)]))),
  ]);
}

/** Metadata as ultralytics writes it, for `names` (Python repr of {index: name}) and a dynamic 64 px export. */
export function ultralyticsMetadata(
  task: string,
  names: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return { task, names, stride: '32', imgsz: '[64, 64]', batch: '1', args: "{'batch': 1, 'dynamic': True}", ...extra };
}

/** A detect export whose output0 [1, 4 + nc, N] is the constant `rows` (channel-major), whatever the image. */
export function constantDetector(rows: number[][], names: string[]): Buffer {
  const channels = rows.length;
  const anchors = rows[0]!.length;
  return craftOnnx({
    inputs: [{ name: 'images', shape: [1, 3, 'height', 'width'] }],
    outputs: [{ name: 'output0', shape: [1, channels, anchors] }],
    // The image is read (its sum times 0 added) so that the graph keeps its input.
    nodes: [
      { op: 'ReduceSum', inputs: ['images'], outputs: ['total'], attributes: { keepdims: 0 } },
      { op: 'Mul', inputs: ['total', 'zero'], outputs: ['nothing'] },
      { op: 'Add', inputs: ['rows', 'nothing'], outputs: ['output0'] },
    ],
    initializers: [
      { name: 'rows', dims: [1, channels, anchors], data: Float32Array.from(rows.flat()) },
      { name: 'zero', dims: [], data: Float32Array.of(0) },
    ],
    metadata: ultralyticsMetadata('detect', pythonNames(names)),
  });
}

export function pythonNames(names: string[]): string {
  return `{${names.map((name, index) => `${index}: '${name}'`).join(', ')}}`;
}

function varint(value: number): Buffer {
  const out: number[] = [];
  let rest = BigInt.asUintN(64, BigInt(value));
  do {
    const byte = Number(rest & 0x7fn);
    rest >>= 7n;
    out.push(rest > 0n ? byte | 0x80 : byte);
  } while (rest > 0n);
  return Buffer.from(out);
}

const key = (field: number, wire: number) => varint(field * 8 + wire);
const int = (field: number, value: number) => Buffer.concat([key(field, 0), varint(value)]);
const bytes = (field: number, value: Buffer) => Buffer.concat([key(field, 2), varint(value.length), value]);
const str = (field: number, value: string) => bytes(field, Buffer.from(value, 'utf8'));
const msg = bytes;
const message = (parts: Buffer[]) => Buffer.concat(parts);
