import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { imagePath, Link } from '../app/router.tsx';
import { COLOR_BLIND_SAFE } from '../app/palette.ts';
import { BulkActions } from '../images/BulkActions.tsx';
import { useSelection } from '../images/selection.ts';
import { PointCloud } from './PointCloud.tsx';
import { idAt, pointsOf, useAnalysis, useLayout, useStartAnalysis, type Layout } from './queries.ts';

type ColorBy = 'class' | 'split' | 'island';
const SPLIT_COLORS = ['#0072b2', '#e69f00', '#009e73'];
const NONE = '#bbbbbb';
const SHOWN_IMAGES = 60;

/**
 * The dataset's embedding map: every laid-out image as a point, coloured by class, split or island; a lasso (or an
 * island chosen from the list, by keyboard) picks images, which are shown and can be moved, copied or deleted.
 */
export function EmbeddingMap(props: {
  owner: string;
  dataset: string;
  classNames: string[];
  classColors: Record<string, string>;
  canEdit: boolean;
}) {
  const { owner, dataset, classNames, classColors, canEdit } = props;
  const analysis = useAnalysis(owner, dataset);
  const start = useStartAnalysis(owner, dataset);
  const layout = useLayout(owner, dataset);
  const queries = useQueryClient();
  const analyzedAt = analysis.data?.analyzedAt;
  useEffect(() => {
    if (analyzedAt) void queries.invalidateQueries({ queryKey: ['layout', owner, dataset] });
  }, [analyzedAt, queries, owner, dataset]);
  const active = analysis.data?.activeJob;
  return (
    <section className="card embedding-map" aria-labelledby="map-heading">
      <h2 id="map-heading">Embedding map</h2>
      <p className="muted">
        {analyzedAt
          ? `Analyzed ${new Date(analyzedAt).toLocaleString()}; ${analysis.data?.embeddingsCount.toLocaleString()} images embedded.`
          : 'Not analyzed yet: the map shows images by likeness once they are embedded.'}
      </p>
      {active ? (
        <div className="job-progress">
          <progress max={100} value={active.progress?.percent ?? 0} aria-label="Analysis" />
          <span role="status">
            Analysis: {active.progress?.stage ?? active.status}, {Math.round(active.progress?.percent ?? 0)} %
          </span>
        </div>
      ) : canEdit ? (
        <button type="button" disabled={start.isPending} onClick={() => start.mutate()}>
          {analyzedAt ? 'Analyze again' : 'Analyze images'}
        </button>
      ) : null}
      {start.error ? <p role="alert">{start.error.message}</p> : null}
      {layout.data ? <MapView layout={layout.data} {...{ owner, dataset, classNames, classColors, canEdit }} /> : null}
      {layout.error ? <p role="alert">{layout.error.message}</p> : null}
    </section>
  );
}

function MapView({
  layout,
  owner,
  dataset,
  classNames,
  classColors,
  canEdit,
}: {
  layout: Layout;
  owner: string;
  dataset: string;
  classNames: string[];
  classColors: Record<string, string>;
  canEdit: boolean;
}) {
  const [colorBy, setColorBy] = useState<ColorBy>('class');
  const selection = useSelection();
  const picked = useMemo(
    () => (selection.ids.size > 0 ? pointsOf(layout, selection.ids) : null),
    [layout, selection.ids],
  );
  const colors = useMemo(
    () => pointColors(layout, colorFunction(colorBy, classColors), picked),
    [layout, colorBy, classColors, picked],
  );
  const islands = useMemo(() => islandSizes(layout), [layout]);
  const legend = legendOf(colorBy, classNames, classColors, islands);
  return (
    <>
      <div className="toolbar">
        <label htmlFor="map-color">Colour by</label>
        <select id="map-color" value={colorBy} onChange={(event) => setColorBy(event.target.value as ColorBy)}>
          <option value="class">class</option>
          <option value="split">split</option>
          <option value="island">island</option>
        </select>
        <label htmlFor="map-island">Pick an island</label>
        <select
          id="map-island"
          value=""
          onChange={(event) => {
            const island = Number(event.target.value);
            const members: string[] = [];
            for (let index = 0; index < layout.count; index++)
              if (layout.island[index] === island) members.push(idAt(layout, index));
            selection.replace(members);
          }}
        >
          <option value="">—</option>
          {islands.map(([island, size]) => (
            <option key={island} value={island}>
              {island < 0 ? 'scattered' : `island ${island + 1}`} ({size})
            </option>
          ))}
        </select>
        <span role="status">
          {layout.count.toLocaleString()} points; {selection.ids.size.toLocaleString()} picked
        </span>
      </div>
      <ul className="legend" aria-label="Legend">
        {legend.map(([name, color]) => (
          <li key={name}>
            <svg width="12" height="12" aria-hidden="true">
              <circle cx="6" cy="6" r="5" fill={color} />
            </svg>
            {name}
          </li>
        ))}
      </ul>
      <PointCloud
        layout={layout}
        colors={colors}
        label={`Embedding map of ${layout.count} images, coloured by ${colorBy}; drag around points to pick them`}
        onLasso={(indices) => selection.replace(indices.map((index) => idAt(layout, index)))}
      />
      {canEdit ? <BulkActions owner={owner} dataset={dataset} classNames={classNames} selection={selection} /> : null}
      {selection.ids.size > 0 ? (
        <PickedImages
          owner={owner}
          dataset={dataset}
          ids={[...selection.ids].slice(0, SHOWN_IMAGES)}
          total={selection.ids.size}
        />
      ) : null}
    </>
  );
}

/** The first picked images as linked thumbnails (the list API by id). */
function PickedImages({
  owner,
  dataset,
  ids,
  total,
}: {
  owner: string;
  dataset: string;
  ids: string[];
  total: number;
}) {
  const images = useQuery({
    queryKey: ['picked-images', owner, dataset, ids],
    queryFn: async () =>
      unwrap(
        await api.POST('/api/datasets/{owner}/{dataset}/images', {
          params: { path: { owner, dataset }, query: { limit: ids.length, includeThumbnails: 'true' } },
          body: { imageIds: ids },
        }),
      ).images,
  });
  return (
    <div role="region" aria-label="Picked images">
      <p className="muted">
        {total > ids.length ? `The first ${ids.length} of ${total.toLocaleString()} picked images:` : 'Picked images:'}
      </p>
      <ul className="picked">
        {(images.data ?? []).map((image) => (
          <li key={image.id}>
            <Link href={imagePath(owner, dataset, image.id)}>
              {image.thumbnailUrl ? <img src={image.thumbnailUrl} alt={image.name} /> : image.name}
            </Link>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A point's colour from its category (class, split or island, as colorBy says). */
function colorFunction(colorBy: ColorBy, classColors: Record<string, string>) {
  const colorOf = (category: number): string => {
    if (colorBy === 'split') return SPLIT_COLORS[category] ?? NONE;
    if (colorBy === 'island') return category < 0 ? NONE : COLOR_BLIND_SAFE[category % COLOR_BLIND_SAFE.length]!;
    return category < 0 ? NONE : (classColors[String(category)] ?? NONE);
  };
  const categories = { split: 'split', island: 'island', class: 'firstClass' } as const;
  return { colorOf, category: categories[colorBy] };
}

/** RGBA per point (picked points stand out when any is picked): each category's colour parsed once, not per point. */
function pointColors(
  layout: Layout,
  { colorOf, category }: ReturnType<typeof colorFunction>,
  picked: Uint8Array | null,
): Uint8Array {
  const count = layout.count;
  const rgba = new Uint8Array(count * 4);
  const parsed = new Map<number, number[]>();
  const categories = layout[category];
  for (let index = 0; index < count; index++) {
    const value = categories[index]!;
    let rgb = parsed.get(value);
    if (!rgb) {
      const hex = colorOf(value);
      rgb = [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16));
      parsed.set(value, rgb);
    }
    rgba[index * 4] = rgb[0]!;
    rgba[index * 4 + 1] = rgb[1]!;
    rgba[index * 4 + 2] = rgb[2]!;
    rgba[index * 4 + 3] = picked && picked[index] === 0 ? 50 : 230;
  }
  return rgba;
}

function islandSizes(layout: Layout): [number, number][] {
  const sizes = new Map<number, number>();
  for (const island of layout.island) sizes.set(island, (sizes.get(island) ?? 0) + 1);
  return [...sizes].sort((a, b) => a[0] - b[0]);
}

function legendOf(
  colorBy: ColorBy,
  classNames: string[],
  classColors: Record<string, string>,
  islands: [number, number][],
): [string, string][] {
  if (colorBy === 'split')
    return ['train', 'val', 'test'].map((split, index) => [split, SPLIT_COLORS[index]!] as [string, string]);
  if (colorBy === 'island')
    return islands.map(([island]) => [
      island < 0 ? 'scattered' : `island ${island + 1}`,
      island < 0 ? NONE : COLOR_BLIND_SAFE[island % COLOR_BLIND_SAFE.length]!,
    ]);
  return [
    ...classNames.map((name, id) => [name, classColors[String(id)] ?? NONE] as [string, string]),
    ['no label', NONE],
  ];
}
