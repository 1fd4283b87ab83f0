import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { COLOR_BLIND_SAFE } from '../app/palette.ts';

export interface Series {
  label: string;
  /** One value per epoch of the chart's x values; null where the epoch did not report it. */
  values: (number | null)[];
}

const HEIGHT = 220;

/**
 * Curves over epochs, drawn by uPlot on a canvas (hundreds of epochs and dozens of series stay cheap to draw and to
 * toggle: a click on a legend entry hides or shows its series). The chart is made again when its series change and
 * given new data otherwise, as epochs arrive.
 */
export function MetricChart({ title, epochs, series }: { title: string; epochs: number[]; series: Series[] }) {
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
        scales: { x: { time: false } },
        // Whole epochs on the x axis.
        axes: [{ label: 'epoch', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }, {}],
        series: [
          { label: 'epoch' },
          ...labels.split('\n').map((label, index) => ({
            label,
            stroke: COLOR_BLIND_SAFE[index % COLOR_BLIND_SAFE.length],
            width: 1.5,
            spanGaps: true,
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
  }, [labels]);
  useEffect(() => {
    chart.current?.setData([epochs, ...series.map((entry) => entry.values)] as uPlot.AlignedData);
  }, [epochs, series, labels]);
  const last = series
    .map((entry) => `${entry.label} ${entry.values.at(-1)?.toPrecision(4) ?? 'not reported'}`)
    .join(', ');
  return (
    <figure className="metric-chart">
      <figcaption>{title}</figcaption>
      <div
        ref={element}
        role="img"
        aria-label={`${title} over ${epochs.length} epochs; at the last: ${last}`}
        data-epochs={epochs.length}
      />
    </figure>
  );
}
