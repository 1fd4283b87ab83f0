/**
 * One line for operators ("2x h100-sxm, 64 CPU cores, 503 GiB") from a hardware report. The report's
 * schema belongs to the worker protocol, so only the fields named here are read, each optional.
 */
/** A field's text when it is one (a number's digits), else undefined. */
const labelOf = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

export function hardwareSummary(hardware: Record<string, unknown> | null): string | null {
  if (!hardware) return null;
  const parts: string[] = [];
  const gpus = Array.isArray(hardware.gpus) ? (hardware.gpus as Array<{ typeId?: unknown; model?: unknown }>) : [];
  const counts = new Map<string, number>();
  for (const gpu of gpus) {
    const label = labelOf(gpu.typeId) ?? labelOf(gpu.model) ?? 'gpu';
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  for (const [label, count] of counts) parts.push(`${count}x ${label}`);
  if (gpus.length === 0) parts.push('no GPU');
  const cores = (hardware.cpu as { cores?: unknown } | undefined)?.cores;
  if (typeof cores === 'number') parts.push(`${cores} CPU cores`);
  if (typeof hardware.memoryBytes === 'number') parts.push(`${Math.round(hardware.memoryBytes / 2 ** 30)} GiB`);
  return parts.join(', ');
}
