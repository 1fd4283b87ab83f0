// The hosts' and GPUs' series, written as exposition text straight from the rows: a thousand hosts of eight GPUs are
// some 40,000 lines, which a client library's per-series label bookkeeping made the slowest part of a scrape.
import type { HostFigures } from '../workers/host.store.ts';

const numberOr = (value: unknown, otherwise: number | null = null) =>
  typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
const entries = (value: unknown): Array<Record<string, unknown>> =>
  Array.isArray(value)
    ? value.filter((entry): entry is Record<string, unknown> => !!entry && typeof entry === 'object')
    : [];
/** A label value as the text format quotes it. */
const quoted = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

const FAMILIES = {
  vp_hosts: 'Worker hosts by state (connected: heard within the grace period)',
  vp_host_connected: 'A worker host is connected and heard from (1) or not (0)',
  vp_host_running_jobs: 'Jobs a worker host runs now',
  vp_host_cpu_ratio: "A connected host's CPU use at its last heartbeat, 0-1",
  vp_host_memory_used_bytes: "A connected host's memory in use at its last heartbeat",
  vp_gpu_memory_bytes: "A GPU's memory",
  vp_gpu_utilization_ratio: "A GPU's use at its host's last heartbeat, 0-1",
  vp_gpu_memory_used_bytes: "A GPU's memory in use at its host's last heartbeat",
  vp_gpu_temperature_celsius: "A GPU's temperature at its host's last heartbeat",
  vp_agent_build_info: "A host's agent release, as it last connected (always 1)",
} as const;
type Family = keyof typeof FAMILIES;

/** The exposition text of every host's series (gauges), each family's lines together as the format wants them. */
export function hostSeriesText(hosts: HostFigures[]): string {
  const lines = Object.fromEntries(Object.keys(FAMILIES).map((name) => [name, [] as string[]])) as Record<
    Family,
    string[]
  >;
  const add = (family: Family, labels: string, value: number) => lines[family].push(`${family}{${labels}} ${value}`);
  const states = { connected: 0, offline: 0, enrolling: 0 };
  for (const row of hosts) {
    const state = row.state === 'enrolling' ? 'enrolling' : row.alive ? 'connected' : 'offline';
    states[state] += 1;
    if (state === 'enrolling') continue;
    const host = `host=${quoted(row.host)}`;
    add('vp_host_connected', host, row.alive ? 1 : 0);
    add('vp_host_running_jobs', host, row.running);
    if (row.agent_version) add('vp_agent_build_info', `${host},version=${quoted(row.agent_version)}`, 1);
    // The load of a host not heard from is stale: not shown.
    const load = row.alive ? row.load : null;
    const cpu = numberOr(load?.cpuPercent);
    if (cpu !== null) add('vp_host_cpu_ratio', host, cpu / 100);
    const memory = numberOr(load?.memoryUsedBytes);
    if (memory !== null) add('vp_host_memory_used_bytes', host, memory);
    const used = new Map(entries(load?.gpus).map((gpu) => [gpu.index, gpu]));
    entries(row.gpus).forEach((gpu, position) => {
      const index = numberOr(gpu.index, position)!;
      const labels = `${host},gpu="${index}"`;
      const model = typeof gpu.model === 'string' ? gpu.model : 'unknown';
      add('vp_gpu_memory_bytes', `${labels},model=${quoted(model)}`, numberOr(gpu.memoryMiB, 0)! * 2 ** 20);
      const now = used.get(index);
      const utilization = numberOr(now?.utilizationPercent);
      if (utilization !== null) add('vp_gpu_utilization_ratio', labels, utilization / 100);
      const memoryUsed = numberOr(now?.memoryUsedMiB);
      if (memoryUsed !== null) add('vp_gpu_memory_used_bytes', labels, memoryUsed * 2 ** 20);
      const temperature = numberOr(now?.temperatureC);
      if (temperature !== null) add('vp_gpu_temperature_celsius', labels, temperature);
    });
  }
  for (const [state, n] of Object.entries(states)) add('vp_hosts', `state="${state}"`, n);
  return Object.entries(FAMILIES)
    .map(([name, help]) => [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...lines[name as Family]].join('\n'))
    .join('\n')
    .concat('\n');
}
