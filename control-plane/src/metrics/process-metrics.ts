// The process's own metrics (CPU, memory, heap, event-loop lag, handles, file descriptors, Node's version): prom-client's
// default collectors, all but its GC histogram, which observes every garbage collection (a `gc` PerformanceObserver)
// for a figure no alert or dashboard reads. With it, a replica with metrics on answered 94.6% of the requests/s of one
// with metrics off (median of 7 runs of bench:api), without it 97.5% (4 runs); the counters themselves cost 0.5 µs a
// request. prom-client offers no way to leave one collector out: they are taken one by one, as collectDefaultMetrics
// takes them.
import { createRequire } from 'node:module';
import type { Registry } from 'prom-client';

type Collector = (registry: Registry, config: { prefix: string; eventLoopMonitoringPrecision: number }) => void;

const COLLECTORS = [
  'processCpuTotal',
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
];

const require = createRequire(import.meta.url);

/** Registers the process metrics in `registry`, their names prefixed. */
export function collectProcessMetrics(registry: Registry, prefix: string): void {
  for (const name of COLLECTORS) {
    const collect = require(`prom-client/lib/metrics/${name}`) as Collector;
    // prom-client's own default precision (ms) for the event-loop lag's histogram.
    collect(registry, { prefix, eventLoopMonitoringPrecision: 10 });
  }
}
