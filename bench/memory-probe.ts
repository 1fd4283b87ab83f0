/**
 * Preloaded into a benchmarked control plane (`node --import ./bench/memory-probe.ts`, MEMORY_PROBE_FILE set) to show
 * what its peak RSS is made of: every 50 ms it samples the process's memory, and each time the RSS passes its peak it
 * writes that sample to the file — V8's heap (the main thread's), what V8 knows of outside it (external, of which
 * array buffers), and from /proc the anonymous (malloc: libvips, sharp's buffers, worker threads' heaps) and
 * file-backed (code and mapped libraries) shares of the RSS. SIGUSR2 starts the peak again.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.MEMORY_PROBE_FILE;
if (!file) throw new Error('MEMORY_PROBE_FILE is required');

export interface MemorySample {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  rssAnon: number;
  rssFile: number;
}

const kilobytes = (status: string, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;

let peak = 0;
// The benchmark starts the peak again (SIGUSR2) before each measured phase.
process.on('SIGUSR2', () => (peak = 0));
setInterval(() => {
  const usage = process.memoryUsage();
  if (usage.rss <= peak) return;
  peak = usage.rss;
  const status = readFileSync('/proc/self/status', 'utf8');
  const sample: MemorySample = {
    rss: usage.rss,
    heapTotal: usage.heapTotal,
    heapUsed: usage.heapUsed,
    external: usage.external,
    arrayBuffers: usage.arrayBuffers,
    rssAnon: kilobytes(status, 'RssAnon'),
    rssFile: kilobytes(status, 'RssFile'),
  };
  writeFileSync(file, JSON.stringify(sample));
}, 50).unref();
