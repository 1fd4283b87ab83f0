import { useState } from 'react';
import { MetricChart } from '../training/MetricChart.tsx';
import { useDeploymentMetrics, type MetricRange } from './queries.ts';

const RANGES: MetricRange[] = ['1h', '6h', '24h', '7d', '30d'];

type Point = { timestamp: string; value: number };

/** One series on the requests' time buckets (latency has only the buckets with requests: null elsewhere). */
function alignedTo(times: number[], points: Point[]): (number | null)[] {
  const byTime = new Map(points.map((point) => [Date.parse(point.timestamp) / 1000, point.value]));
  return times.map((time) => byTime.get(time) ?? null);
}

/** Requests, error rate and P95 latency over a range: the figures, then their charts. */
export function DeploymentMetrics({ owner, deployment }: { owner: string; deployment: string }) {
  const [range, setRange] = useState<MetricRange>('1h');
  const metrics = useDeploymentMetrics(owner, deployment, range);
  const data = metrics.data;
  const times = data?.timeSeries.requests.map((point) => Date.parse(point.timestamp) / 1000) ?? [];
  return (
    <section className="card" aria-labelledby="metrics-heading">
      <div className="title-row">
        <h2 id="metrics-heading">Traffic</h2>
        <div className="toolbar">
          <label htmlFor="metrics-range">Range</label>
          <select id="metrics-range" value={range} onChange={(event) => setRange(event.target.value as MetricRange)}>
            {RANGES.map((value) => (
              <option key={value} value={value}>
                last {value}
              </option>
            ))}
          </select>
        </div>
      </div>
      {metrics.error ? <p role="alert">{metrics.error.message}</p> : null}
      {data ? (
        <>
          <dl className="figures" aria-label="Traffic figures">
            <dt>Requests</dt>
            <dd>{data.summary.totalRequests.toLocaleString()}</dd>
            <dt>Error rate</dt>
            <dd>{(data.summary.errorRate * 100).toFixed(1)} %</dd>
            <dt>P95 latency</dt>
            <dd>{Math.round(data.summary.p95LatencyMs)} ms</dd>
          </dl>
          <div className="charts">
            <MetricChart
              title="Requests"
              unit="time"
              x={times}
              series={[
                { label: 'requests', values: alignedTo(times, data.timeSeries.requests) },
                { label: 'errors', values: alignedTo(times, data.timeSeries.errors) },
              ]}
            />
            <MetricChart
              title="P95 latency (ms)"
              unit="time"
              x={times}
              series={[{ label: 'p95 ms', values: alignedTo(times, data.timeSeries.latencyP95) }]}
            />
          </div>
        </>
      ) : null}
    </section>
  );
}
