import { ApiError } from '../api/client.ts';
import { datasetsPath, Link } from '../app/router.tsx';
import { Tabs } from '../app/Tabs.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { Gallery } from '../images/Gallery.tsx';
import { EmbeddingMap } from '../map/EmbeddingMap.tsx';
import { BatchPanel } from '../predict/BatchPanel.tsx';
import { VersionsPanel } from '../versions/VersionsPanel.tsx';
import { ClassesPanel } from './ClassesPanel.tsx';
import { CloneDataset } from './CloneDataset.tsx';
import { DatasetUpload } from './DatasetUpload.tsx';
import { DatasetCharts } from './DatasetCharts.tsx';
import { useDataset } from './queries.ts';

export function DatasetPage({ owner, slug }: { owner: string; slug: string }) {
  const dataset = useDataset(owner, slug);
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
      <Tabs
        label="Dataset"
        tabs={[
          {
            id: 'images',
            label: 'Images',
            render: () => (
              <Gallery
                owner={owner}
                dataset={slug}
                classNames={item.classNames}
                classColors={item.classColors}
                canEdit={canEdit}
              />
            ),
          },
          { id: 'charts', label: 'Charts', render: () => <DatasetCharts owner={owner} slug={slug} item={item} /> },
          {
            id: 'classes',
            label: 'Classes',
            render: () => (
              <ClassesPanel
                owner={owner}
                dataset={slug}
                classNames={item.classNames}
                classColors={item.classColors}
                canEdit={canEdit}
              />
            ),
          },
          {
            id: 'map',
            label: 'Map',
            render: () => (
              <EmbeddingMap
                owner={owner}
                dataset={slug}
                classNames={item.classNames}
                classColors={item.classColors}
                canEdit={canEdit}
              />
            ),
          },
          {
            id: 'versions',
            label: 'Versions',
            render: () => <VersionsPanel owner={owner} dataset={slug} versions={item.versions} canEdit={canEdit} />,
          },
          ...(canEdit
            ? [
                {
                  id: 'add',
                  label: 'Add images',
                  render: () => <DatasetUpload owner={owner} dataset={slug} datasetId={item.id} />,
                },
                { id: 'auto', label: 'Auto-label', render: () => <BatchPanel owner={owner} dataset={slug} /> },
              ]
            : []),
        ]}
      />
    </>
  );
}
