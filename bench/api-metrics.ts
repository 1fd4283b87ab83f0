// bench:api, issue 38's figures: a second control plane with its metrics on (METRICS_TOKEN; the audit log is on in
// both, and records no GET), whose authenticated GET is measured against the first's in the same run, and a scrape of
// it holding 1,000 hosts' GPU series (8 GPUs each, written in SQL as their agents' reports would leave them).
import { GPUS_PER_HOST, seedConnectedHosts } from './seeded-hosts.ts';

export const METRICS_TOKEN = 'bench-scrape-token-0123456789abcdef0123';
export const SCRAPED_HOSTS = 1000;
const SCRAPES = 10;

/** SCRAPED_HOSTS connected pool hosts of 8 GPUs with their last load, in `database`. */
export const seedScrapedHosts = (database: string) => seedConnectedHosts(database, SCRAPED_HOSTS, 'bench-host-');

/** GET /metrics SCRAPES times, one after another: each one's milliseconds and the last answer's GPU series. */
export async function scrapeTimes(base: string): Promise<{ ms: number[]; gpuSeries: number }> {
  const ms: number[] = [];
  let text = '';
  for (let scrape = 0; scrape < SCRAPES; scrape += 1) {
    const started = performance.now();
    const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    text = await response.text();
    if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${text.slice(0, 200)}`);
    ms.push(performance.now() - started);
  }
  const gpuSeries = text.split('\n').filter((line) => line.startsWith('vp_gpu_utilization_ratio{')).length;
  if (gpuSeries < SCRAPED_HOSTS * GPUS_PER_HOST)
    throw new Error(`the scrape held ${gpuSeries} GPU series, not ${SCRAPED_HOSTS * GPUS_PER_HOST}`);
  return { ms, gpuSeries };
}
