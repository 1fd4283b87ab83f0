import { ApiError } from '../api/client.ts';
import { datasetsPath, Link } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { Gallery } from '../images/Gallery.tsx';
import { EmbeddingMap } from '../map/EmbeddingMap.tsx';
import { VersionsPanel } from '../versions/VersionsPanel.tsx';
import { ClassesPanel } from './ClassesPanel.tsx';
import { CloneDataset } from './CloneDataset.tsx';
import { DatasetUpload } from './DatasetUpload.tsx';
import { Heatmap } from './Heatmap.tsx';
import { ShareBars } from './ShareBars.tsx';
import { useClassStats, useDataset } from './queries.ts';

export function DatasetPage({ owner, slug }: { owner: string; slug: string }) {
  const dataset = useDataset(owner, slug);
  const stats = useClassStats(owner, slug);
  const canEdit = useCanEdit(owner);
  if (dataset.isPending) return <p role="status">Loading the dataset…</p>;
  if (dataset.error)
    return (
      <>
        <h1>
          {dataset.error instanceof ApiError && dataset.error.status === 404
            ? 'Dataset not found'
            : 'The dataset could not be read'}
        </h1>
        <p role="alert">{dataset.error.message}</p>
        <p>
          <Link href={datasetsPath(owner)}>Datasets of {owner}</Link>
        </p>
      </>
    );
  const item = dataset.data;
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href={datasetsPath(owner)}>Datasets</Link> / <span aria-current="page">{item.name}</span>
      </nav>
      <div className="title-row">
        <h1>{item.name}</h1>
        <CloneDataset owner={owner} dataset={slug} />
      </div>
      {item.description ? <p className="muted">{item.description}</p> : null}
      <dl className="figures card">
        <dt>Task</dt>
        <dd>{item.task}</dd>
        <dt>Images</dt>
        <dd>{item.imageCount.toLocaleString()}</dd>
        <dt>Labeled</dt>
        <dd>{item.splits.labeled.toLocaleString()}</dd>
        <dt>Annotations</dt>
        <dd>{item.annotationCount.toLocaleString()}</dd>
        <dt>Classes</dt>
        <dd>{item.classCount.toLocaleString()}</dd>
        <dt>Could not be processed</dt>
        <dd>{item.errorCount.toLocaleString()}</dd>
      </dl>
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
        {stats.data ? (
          <>
            <ShareBars title="Objects per image" items={binsOf(stats.data.imageStats.objectsPerImageHistogram)} />
            <ShareBars title="Image widths (pixels)" items={binsOf(stats.data.imageStats.widthHistogram)} />
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
      <ClassesPanel
        owner={owner}
        dataset={slug}
        classNames={item.classNames}
        classColors={item.classColors}
        counts={
          stats.data ? Object.fromEntries(stats.data.classes.map((entry) => [entry.classId, entry.count])) : undefined
        }
        canEdit={canEdit}
      />
      <EmbeddingMap
        owner={owner}
        dataset={slug}
        classNames={item.classNames}
        classColors={item.classColors}
        canEdit={canEdit}
      />
      <VersionsPanel owner={owner} dataset={slug} versions={item.versions} canEdit={canEdit} />
      {canEdit ? <DatasetUpload owner={owner} dataset={slug} datasetId={item.id} /> : null}
      <Gallery
        owner={owner}
        dataset={slug}
        classNames={item.classNames}
        classColors={item.classColors}
        canEdit={canEdit}
      />
    </>
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
