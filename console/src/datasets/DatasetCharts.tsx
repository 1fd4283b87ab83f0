import { Heatmap } from './Heatmap.tsx';
import { ShareBars } from './ShareBars.tsx';
import { useClassStats, type DatasetItem } from './queries.ts';

/** The dataset's charts, over every image: split and class shares, objects per image, widths, where objects are. */
export function DatasetCharts({ owner, slug, item }: { owner: string; slug: string; item: DatasetItem }) {
  const stats = useClassStats(owner, slug);
  return (
    <div className="charts">
      <ShareBars
        title="Split shares"
        items={(['train', 'val', 'test'] as const).map((split) => ({ name: split, value: item.splits[split] }))}
      />
      {stats.data ? (
        <ShareBars
          title="Class shares (annotations)"
          items={stats.data.classes.map((entry) => ({
            name: stats.data.classNames[entry.classId] ?? `class ${entry.classId}`,
            value: entry.count,
            color: item.classColors[String(entry.classId)],
          }))}
        />
      ) : (
        <p role="status">{stats.error ? stats.error.message : 'Counting classes…'}</p>
      )}
      {stats.data?.sampleSize ? (
        <p className="muted">
          Image statistics below come from a sample of {stats.data.sampleSize.toLocaleString()} images (past 5,000,000
          images the appliance samples); class shares count every image.
        </p>
      ) : null}
      {stats.data ? (
        <>
          <ShareBars title="Objects per image" items={binsOf(stats.data.imageStats.objectsPerImageHistogram)} />
          <ShareBars title="Image widths (pixels)" items={binsOf(stats.data.imageStats.widthHistogram)} />
          <ShareBars title="Image heights (pixels)" items={binsOf(stats.data.imageStats.heightHistogram)} />
          <Heatmap
            title="Where objects are"
            bins={stats.data.locationHeatmap.bins}
            maxCount={stats.data.locationHeatmap.maxCount}
            rowAxis="top to bottom of the image"
            columnAxis="left to right"
            cellName={(row, column) => `x ${percentRange(column)}, y ${percentRange(row)}`}
          />
        </>
      ) : null}
    </div>
  );
}

/** Histogram bins as named shares; empty bins at either end left out. */
function binsOf(bins: { bin: number; size: number; count: number }[]) {
  const first = bins.findIndex((entry) => entry.count > 0);
  const last = bins.findLastIndex((entry) => entry.count > 0);
  const round = (value: number) => Math.round(value * 100) / 100;
  return bins.slice(Math.max(first, 0), last + 1).map((entry) => ({
    name: entry.size === 1 ? String(entry.bin) : `${round(entry.bin)}–${round(entry.bin + entry.size)}`,
    value: entry.count,
  }));
}

/** A 1/20 cell of the normalized image as a percent range, e.g. "45–50 %". */
function percentRange(cell: number): string {
  return `${cell * 5}–${cell * 5 + 5} %`;
}
