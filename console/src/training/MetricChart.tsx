import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { COLOR_BLIND_SAFE } from '../app/palette.ts';

export interface Series {
  label: string;
  /** One value per x value of the chart; null where that epoch (or time) has none. */
  values: (number | null)[];
}

const HEIGHT = 220;

/**
 * Curves over epochs (or over time: x in Unix seconds), drawn by uPlot on a canvas (hundreds of epochs and dozens of series stay cheap to draw and to
 * toggle: a click on a legend entry hides or shows its series). The chart is made again when its series change and
 * given new data otherwise, as epochs arrive.
 */
export function MetricChart({
  title,
  x,
  series,
  unit = 'epoch',
}: {
  title: string;
  x: number[];
  series: Series[];
  /** What x is: epochs, Unix seconds, or any other quantity named here (recall, confidence…). */
  unit?: string;
}) {
  const element = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | undefined>(undefined);
  const labels = series.map((entry) => entry.label).join('\n');
  useEffect(() => {
    const host = element.current;
    if (!host) return;
    const made = new uPlot(
      {
        width: Math.max(280, host.clientWidth),
        height: HEIGHT,
        scales: { x: { time: unit === 'time' } },
        // Whole epochs on the x axis.
        axes: [
          unit === 'time'
            ? {}
            : unit === 'epoch'
              ? { label: 'epoch', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }
              : { label: unit },
          {},
        ],
        series: [
          { label: unit },
          ...labels.split('\n').map((label, index) => ({
            label,
            stroke: COLOR_BLIND_SAFE[index % COLOR_BLIND_SAFE.length],
            width: 1.5,
            spanGaps: true,
            // Time buckets are sparse (latency exists only where there were requests): a lone point still shows.
            ...(unit === 'time' && { points: { show: true, size: 5 } }),
          })),
        ],
      },
      [[]],
      host,
    );
    chart.current = made;
    const resize = new ResizeObserver(() => made.setSize({ width: Math.max(280, host.clientWidth), height: HEIGHT }));
    resize.observe(host);
    return () => {
      resize.disconnect();
      made.destroy();
      chart.current = undefined;
    };
  }, [labels, unit]);
  useEffect(() => {
    chart.current?.setData([x, ...series.map((entry) => entry.values)] as uPlot.AlignedData);
  }, [x, series, labels, unit]);
  const last = series
    .map((entry) => `${entry.label} ${entry.values.at(-1)?.toPrecision(4) ?? 'not reported'}`)
    .join(', ');
  return (
    <figure className="metric-chart">
      <figcaption>{title}</figcaption>
      <div
        ref={element}
        role="img"
        aria-label={`${title} ${unit === 'time' ? `over ${x.length} time buckets` : unit === 'epoch' ? `over ${x.length} epochs` : `against ${unit}`}; at the last: ${last}`}
        data-epochs={unit === 'epoch' ? x.length : undefined}
        data-points={x.length}
      />
    </figure>
  );
}
