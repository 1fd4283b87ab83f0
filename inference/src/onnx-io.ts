// What a session's inputs and outputs must look like for this package to run it: checked from the graph's declared
// shapes when the session is made, and from the tensors themselves after each run, before post-processing reads them.
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { ModelInfo, Task } from './model-info.ts';

/** The most elements one output may have (134 MB of float32; a YOLO head at 4096 px has a few million). */
export const MAX_OUTPUT_ELEMENTS = 2 ** 25;

/** Ranks of the first output per task (depth: [1, h, w] or [1, 1, h, w]). */
const FIRST_OUTPUT_RANKS: Record<Task, number[]> = {
  detect: [3],
  segment: [3],
  pose: [3],
  obb: [3],
  classify: [2],
  semantic: [3],
  depth: [3, 4],
};

/** One float32 image input [1, 3, H, W]: returns whether H and W are dynamic; a static size must be the export's imgsz. */
export function checkInputs(inputs: readonly InferenceSession.ValueMetadata[], info: ModelInfo): boolean {
  if (inputs.length !== 1)
    throw new Error(`the ONNX graph has ${inputs.length} inputs; an ultralytics export has one image input`);
  const [input] = inputs;
  if (!input.isTensor || input.type !== 'float32' || input.shape.length !== 4)
    throw new Error("the ONNX graph's input is not a float32 image tensor [1, 3, H, W]");
  const [batch, channels, height, width] = input.shape;
  if ((typeof batch === 'number' && batch !== 1) || (typeof channels === 'number' && channels !== 3))
    throw new Error(`the ONNX graph's input is [${input.shape.join(', ')}]; it must take one RGB image [1, 3, H, W]`);
  const sides = [height, width];
  sides.forEach((side, axis) => {
    if (typeof side === 'number' && side !== info.imgsz[axis])
      throw new Error(
        `the ONNX graph's input is [${input.shape.join(', ')}], not the export's imgsz ${info.imgsz.join(' × ')}`,
      );
  });
  return sides.some((side) => typeof side !== 'number');
}

/** The outputs the task reads, with every size the graph declares within bounds. */
export function checkOutputs(outputs: readonly InferenceSession.ValueMetadata[], info: ModelInfo): void {
  if (outputs.length === 0) throw new Error('the ONNX graph has no outputs');
  for (const output of outputs) {
    if (!output.isTensor) throw new Error(`the ONNX graph's output ${output.name} is not a tensor`);
    const known = output.shape.filter((dim): dim is number => typeof dim === 'number');
    if (known.some((dim) => dim < 0) || known.reduce((product, dim) => product * dim, 1) > MAX_OUTPUT_ELEMENTS)
      throw new Error(
        `the ONNX graph's output ${output.name} is declared [${output.shape.join(', ')}]: more than ${MAX_OUTPUT_ELEMENTS} elements`,
      );
  }
  // onnxruntime reports a shape it could not settle (declared one way, inferred another) as []: then the run's tensors are checked.
  const rank = (output: InferenceSession.ValueMetadata | undefined) =>
    output?.isTensor && output.shape.length > 0 ? output.shape.length : undefined;
  const [first, protos] = outputs;
  const firstRank = rank(first);
  if (firstRank !== undefined && !FIRST_OUTPUT_RANKS[info.task].includes(firstRank))
    throw new Error(
      `the ONNX graph's output is [${first.isTensor ? first.shape.join(', ') : ''}], not what a ${info.task} model gives`,
    );
  if (info.task === 'segment' && (protos === undefined || (rank(protos) ?? 4) !== 4))
    throw new Error('the ONNX graph is a segment model without its mask prototypes output [1, 32, h, w]');
}

/** The tensors of a run, before post-processing reads them: ranks as the task needs, sizes within bounds, numbers. */
export function checkOutputTensors(outputs: Tensor[], info: ModelInfo): void {
  for (const output of outputs) {
    if (output.size > MAX_OUTPUT_ELEMENTS)
      throw new Error(
        `the model gave an output of ${output.size} elements [${output.dims.join(', ')}]; at most ${MAX_OUTPUT_ELEMENTS} are read`,
      );
  }
  const [first, protos] = outputs;
  if (!FIRST_OUTPUT_RANKS[info.task].includes(first.dims.length))
    throw new Error(
      `the model gave an output of shape [${first.dims.join(', ')}], not what a ${info.task} model gives`,
    );
  if (info.task === 'segment' && protos?.dims.length !== 4)
    throw new Error('the model gave no mask prototypes [1, 32, h, w]');
  // A semantic export's class map comes out of ArgMax as integers; every other output is read as float32.
  const read = info.task === 'segment' ? [first, protos] : [first];
  if (
    info.task === 'semantic'
      ? typeof first.data === 'string' || first.data instanceof Array
      : read.some((output) => output.type !== 'float32')
  )
    throw new Error(`the model gave an output of type ${first.type}, not float32`);
}
