// NVIDIA model names, as nvidia-smi (and so systeminformation) reports them, mapped to the platform's GPU type
// IDs: the keys of GET /api/training/gpu-availability and the `gpuType` a training job asks for.

/** True when the name states the larger size, or states neither and the memory is closer to the larger. */
const isLarger = (name: string, memoryGiB: number, larger: number, smaller: number) =>
  name.includes(`${larger}gb`) || (!name.includes(`${smaller}gb`) && memoryGiB > (larger + smaller) / 2);

const has = (pattern: RegExp) => (name: string) => pattern.test(name);

/** First match wins, so the more specific names (l40s before l40, a10g before a10) come first. */
const RULES: ReadonlyArray<readonly [id: string, matches: (name: string, memoryGiB: number) => boolean]> = [
  ['b300', has(/\bb300\b/)],
  ['b200', has(/\bb200\b/)],
  ['h200-nvl', has(/\bh200\b.*\bnvl\b/)],
  ['h200-sxm', has(/\bh200\b/)],
  ['h100-nvl', has(/\bh100\b.*\bnvl\b/)],
  ['h100-pcie', has(/\bh100\b.*\bpcie\b/)],
  // The SXM part calls itself "H100 80GB HBM3" or "H100 SXM5 80GB".
  ['h100-sxm', has(/\bh100\b/)],
  ['a100-80gb-pcie', (n, gib) => /\ba100\b.*\bpcie\b/.test(n) && isLarger(n, gib, 80, 40)],
  ['a100-40gb-pcie', has(/\ba100\b.*\bpcie\b/)],
  ['a100-80gb-sxm', (n, gib) => /\ba100\b/.test(n) && isLarger(n, gib, 80, 40)],
  ['a100-40gb-sxm', has(/\ba100\b/)],
  ['v100-32gb', (n, gib) => /\bv100\b/.test(n) && isLarger(n, gib, 32, 16)],
  ['v100-16gb', has(/\bv100\b/)],
  ['a40', has(/\ba40\b/)],
  ['a30', has(/\ba30\b/)],
  ['a10g', has(/\ba10g\b/)],
  ['a10', has(/\ba10\b/)],
  ['l40s', has(/\bl40s\b/)],
  ['l40', has(/\bl40\b/)],
  ['l4', has(/\bl4\b/)],
  ['t4', has(/\bt4\b/)],
  ['rtx-pro-6000', has(/\brtx pro 6000\b/)],
  ['rtx-pro-4000', has(/\brtx pro 4000\b/)],
  ['rtx-6000-ada', has(/\brtx 6000 ada\b/)],
  ['rtx-5000-ada', has(/\brtx 5000 ada\b/)],
  ['rtx-4500-ada', has(/\brtx 4500 ada\b/)],
  ['rtx-4000-ada', has(/\brtx 4000 ada\b/)],
  ['rtx-2000-ada', has(/\brtx 2000 ada\b/)],
  ['rtx-a6000', has(/\brtx a6000\b/)],
  ['rtx-a5000', has(/\brtx a5000\b/)],
  ['rtx-a4000', has(/\brtx a4000\b/)],
  ['rtx-5090', has(/\brtx 5090\b/)],
  ['rtx-4090', has(/\brtx 4090\b/)],
  ['rtx-3090', has(/\brtx 3090\b(?! ti)/)],
];

/** The type IDs gpuTypeId can return for recognised models, most capable first. */
export const KNOWN_GPU_TYPE_IDS: readonly string[] = RULES.map(([typeId]) => typeId);

/**
 * Memory of one GPU of each known type, in GB as the vendor states it (the training estimate's gpuMemoryGb).
 * Types not listed (slugs of unrecognised models) have none: null.
 */
export const GPU_MEMORY_GB: Readonly<Record<string, number>> = {
  b300: 288,
  b200: 192,
  'h200-nvl': 141,
  'h200-sxm': 141,
  'h100-nvl': 94,
  'h100-pcie': 80,
  'h100-sxm': 80,
  'a100-80gb-pcie': 80,
  'a100-40gb-pcie': 40,
  'a100-80gb-sxm': 80,
  'a100-40gb-sxm': 40,
  'v100-32gb': 32,
  'v100-16gb': 16,
  a40: 48,
  a30: 24,
  a10g: 24,
  a10: 24,
  l40s: 48,
  l40: 48,
  l4: 24,
  t4: 16,
  'rtx-pro-6000': 96,
  'rtx-pro-4000': 24,
  'rtx-6000-ada': 48,
  'rtx-5000-ada': 32,
  'rtx-4500-ada': 24,
  'rtx-4000-ada': 20,
  'rtx-2000-ada': 16,
  'rtx-a6000': 48,
  'rtx-a5000': 24,
  'rtx-a4000': 16,
  'rtx-5090': 32,
  'rtx-4090': 24,
  'rtx-3090': 24,
};

/** GB of memory per GPU of a type ID; null for CPU and for types not in the table. */
export function gpuMemoryGb(typeId: string): number | null {
  return Object.hasOwn(GPU_MEMORY_GB, typeId) ? GPU_MEMORY_GB[typeId] : null;
}

const NVIDIA_NAME = /\b(nvidia|geforce|quadro|tesla|titan|rtx|gtx)\b/i;

/**
 * The GPU type ID for an NVIDIA model name; memoryMiB settles names that omit their memory size (A100, V100).
 * An NVIDIA model not in the table gets a slug of its name without the brand words ("NVIDIA GH200 480GB" →
 * "gh200-480gb", "NVIDIA GeForce RTX 3080" → "rtx-3080"), so new hardware still reports a stable ID.
 * Null for names that are not NVIDIA's (AMD, Intel, server BMC adapters).
 */
export function gpuTypeId(modelName: string, memoryMiB?: number): string | null {
  if (!NVIDIA_NAME.test(modelName)) return null;
  const name = modelName
    .toLowerCase()
    .replace(/\b(nvidia|geforce|quadro|tesla|generation)\b/g, ' ')
    .replace(/[\s_]+/g, ' ')
    .trim();
  const memoryGiB = (memoryMiB ?? 0) / 1024;
  const rule = RULES.find(([, matches]) => matches(name, memoryGiB));
  if (rule) return rule[0];
  const slug = name
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return slug === '' ? null : slug;
}

/** A GPU type ID as people write it: rtx-4090 → RTX 4090, a100-80gb-sxm → A100 80GB SXM; cpu → CPU. */
export function gpuDisplayName(typeId: string): string {
  return typeId
    .split('-')
    .map((part) => part.toUpperCase())
    .join(' ');
}
