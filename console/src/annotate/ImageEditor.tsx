import { memo, useEffect, useMemo, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';
import { datasetPath, Link, setLeaveWarning } from '../app/router.tsx';
import { MemoChunks } from '../app/MemoChunks.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { useDataset } from '../datasets/queries.ts';
import { LabelShapes } from './LabelShapes.tsx';
import { SimilarImages } from './SimilarImages.tsx';
import { Suggestions } from './Suggestions.tsx';
import {
  cycleVisibility,
  labelFromPolygon,
  labelFromRectangle,
  moveLabel,
  moveVertex,
  pointsOfLabel,
  resizeLabel,
  rotateLabel,
  thinStroke,
  type Label,
  type Point,
} from './geometry.ts';
import { useHistory } from './history.ts';
import { poseLabel, skeletonFor } from './skeletons.ts';
import { useImage, useSaveLabels } from './queries.ts';

type Tool = 'select' | 'box' | 'polygon';
type ImageAnswer = NonNullable<ReturnType<typeof useImage>['data']>;

const LEAVE_WARNING = 'This image has unsaved label changes. Leave without saving them?';
const STEP = 0.01;
const FINE_STEP = 0.001;
const TURN = Math.PI / 36; // 5°
const FINE_TURN = Math.PI / 180;
/** A polygon-tool press that travels further than this (0-1) is a freehand stroke, not a click adding a vertex. */
const STROKE_TRAVEL = 0.02;

/** The full view of one image: zoom, pan (scroll), its metadata, and its labels edited by mouse or keyboard. */
export function ImageEditor({ owner, slug, imageId }: { owner: string; slug: string; imageId: string }) {
  const image = useImage(imageId);
  const dataset = useDataset(owner, slug);
  const canEdit = useCanEdit(owner);
  if (image.isPending) return <p role="status">Loading the image…</p>;
  if (image.error) return <p role="alert">{image.error.message}</p>;
  const colors = dataset.data?.classColors ?? {};
  return (
    <Editor
      key={imageId}
      image={image.data}
      owner={owner}
      slug={slug}
      canEdit={canEdit}
      colors={colors}
      kptShape={dataset.data?.kptShape}
    />
  );
}

function Editor({
  image,
  owner,
  slug,
  canEdit,
  colors,
  kptShape,
}: {
  image: ImageAnswer;
  owner: string;
  slug: string;
  canEdit: boolean;
  colors: Record<string, string>;
  /** Pose datasets: [keypoints per instance, values per keypoint]. */
  kptShape: number[] | undefined;
}) {
  const task = image.dataset.task;
  const [keypointCount = 17, keypointValues = 3] = kptShape ?? [];
  const skeleton = useMemo(() => skeletonFor(keypointCount), [keypointCount]);
  const history = useHistory<Label[]>(image.labels);
  const labels = history.present;
  const [selected, setSelected] = useState<number | undefined>(undefined);
  const [tool, setTool] = useState<Tool>(task === 'classify' || !canEdit ? 'select' : 'box');
  const [classId, setClassId] = useState(0);
  const [zoom, setZoom] = useState(1);
  const [draft, setDraft] = useState<{ from: Point; to: Point } | undefined>(undefined);
  const [moving, setMoving] = useState<{ index: number; start: Point; at: Point } | undefined>(undefined);
  const [dragging, setDragging] = useState<{ index: number; vertex: number; start: Point; at: Point } | undefined>(
    undefined,
  );
  const [vertex, setVertex] = useState<number | undefined>(undefined);
  const [polygon, setPolygon] = useState<Point[]>([]);
  const [stroke, setStroke] = useState<Point[] | undefined>(undefined);
  const [message, setMessage] = useState('');
  const svg = useRef<SVGSVGElement>(null);
  const save = useSaveLabels(owner, slug, image.id);
  const { width, height } = image.properties;

  useEffect(() => {
    if (!history.unsaved) return setLeaveWarning(undefined);
    setLeaveWarning(LEAVE_WARNING);
    const onBeforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    addEventListener('beforeunload', onBeforeUnload);
    return () => {
      removeEventListener('beforeunload', onBeforeUnload);
      setLeaveWarning(undefined);
    };
  }, [history.unsaved]);

  const change = (next: Label[], note: string) => {
    history.push(next);
    setMessage(note);
  };
  const className = (id: number) => image.classNames[id] ?? `class ${id}`;
  /** A new shape of the dataset's task dragged from one corner to the other (pose: the skeleton placed in it). */
  const newShape = (from: Point, to: Point) =>
    task === 'pose'
      ? poseLabel(classId, from, to, [keypointCount, keypointValues])
      : labelFromRectangle(task, classId, from, to);
  const pointOf = (event: PointerEvent): Point => {
    const box = svg.current!.getBoundingClientRect();
    const clamp = (value: number) => Math.min(1, Math.max(0, value));
    return { x: clamp((event.clientX - box.left) / box.width), y: clamp((event.clientY - box.top) / box.height) };
  };
  const saveNow = () =>
    save.mutate(labels, {
      onSuccess: () => {
        history.markSaved(labels);
        setMessage(`Saved ${labels.length} ${labels.length === 1 ? 'label' : 'labels'}`);
      },
    });

  function onCanvasDown(event: PointerEvent<SVGSVGElement>) {
    if (!canEdit) return;
    const point = pointOf(event);
    if (tool === 'box') {
      svg.current?.setPointerCapture(event.pointerId);
      setDraft({ from: point, to: point });
    } else if (tool === 'polygon') {
      // A click adds a vertex; a press dragged along is a freehand outline (decided on release).
      svg.current?.setPointerCapture(event.pointerId);
      setStroke([point]);
    } else pick(undefined);
  }
  function onCanvasMove(event: PointerEvent<SVGSVGElement>) {
    if (draft) setDraft({ ...draft, to: pointOf(event) });
    if (moving) setMoving({ ...moving, at: pointOf(event) });
    if (dragging) setDragging({ ...dragging, at: pointOf(event) });
    if (stroke) setStroke([...stroke, pointOf(event)]);
  }
  function onCanvasUp() {
    if (stroke) endStroke(stroke);
    if (dragging) {
      const dx = dragging.at.x - dragging.start.x;
      const dy = dragging.at.y - dragging.start.y;
      setDragging(undefined);
      if (dx !== 0 || dy !== 0)
        change(
          labels.map((label, index) =>
            index === dragging.index ? moveVertex(label, dragging.vertex, dx, dy, keypointValues) : label,
          ),
          `Moved ${pointName(dragging.vertex)}`,
        );
    }
    if (draft) {
      const { from, to } = draft;
      setDraft(undefined);
      if (Math.abs(from.x - to.x) > 0.005 && Math.abs(from.y - to.y) > 0.005) {
        change([...labels, newShape(from, to)], `Added a ${className(classId)}`);
        pick(labels.length);
      }
    }
    if (moving) {
      const dx = moving.at.x - moving.start.x;
      const dy = moving.at.y - moving.start.y;
      setMoving(undefined);
      if (dx !== 0 || dy !== 0)
        change(
          labels.map((label, index) => (index === moving.index ? moveLabel(label, dx, dy) : label)),
          'Moved',
        );
    }
  }
  function endStroke(points: Point[]) {
    setStroke(undefined);
    const [start] = points;
    const travel = points.reduce(
      (sum, point, index) =>
        sum + (index ? Math.hypot(point.x - points[index - 1]!.x, point.y - points[index - 1]!.y) : 0),
      0,
    );
    const outline = thinStroke(points);
    if (travel > STROKE_TRAVEL && outline.length >= 3) {
      change([...labels, labelFromPolygon(classId, outline)], `Added a freehand ${className(classId)} polygon`);
      pick(labels.length);
      setPolygon([]);
      return;
    }
    if (!start) return;
    const first = polygon[0];
    if (first && polygon.length >= 3 && Math.hypot(first.x - start.x, first.y - start.y) < 0.015) closePolygon();
    else setPolygon([...polygon, start]);
  }
  function pick(index: number | undefined) {
    setSelected(index);
    setVertex(undefined);
  }
  function onShapeDown(index: number, event: PointerEvent<SVGElement>) {
    if (tool !== 'select') return;
    event.stopPropagation();
    pick(index);
    if (!canEdit) return;
    svg.current?.setPointerCapture(event.pointerId);
    const point = pointOf(event);
    setMoving({ index, start: point, at: point });
  }
  function onVertexDown(index: number, at: number, event: PointerEvent<SVGElement>) {
    event.stopPropagation();
    setVertex(at);
    if (!canEdit) return;
    svg.current?.setPointerCapture(event.pointerId);
    const point = pointOf(event);
    setDragging({ index, vertex: at, start: point, at: point });
  }
  // The shapes are memoised per label: their handlers must keep their identity while calling the latest closures.
  const latest = useRef({ onShapeDown, onVertexDown, pick, setClassOf, remove });
  latest.current = { onShapeDown, onVertexDown, pick, setClassOf, remove };
  const stable = useMemo(
    () => ({
      onShapeDown: (index: number, event: PointerEvent<SVGElement>) => latest.current.onShapeDown(index, event),
      onVertexDown: (index: number, at: number, event: PointerEvent<SVGElement>) =>
        latest.current.onVertexDown(index, at, event),
      pick: (index: number) => latest.current.pick(index),
      setClassOf: (index: number, id: number) => latest.current.setClassOf(index, id),
      remove: (index: number) => latest.current.remove(index),
    }),
    [],
  );
  function closePolygon() {
    if (polygon.length < 3) return;
    change([...labels, labelFromPolygon(classId, polygon)], `Added a ${className(classId)} polygon`);
    pick(labels.length);
    setPolygon([]);
  }
  const editSelected = (edit: (label: Label) => Label, note: string) => {
    if (selected === undefined) return;
    change(
      labels.map((label, index) => (index === selected ? edit(label) : label)),
      note,
    );
  };
  function remove(at: number) {
    change(
      labels.filter((_, index) => index !== at),
      'Deleted a label',
    );
    if (selected !== undefined && selected >= at) pick(selected === at ? undefined : selected - 1);
  }
  function setClassOf(index: number, id: number) {
    change(
      labels.map((label, at) => (at === index ? { ...label, classId: id } : label)),
      `Class set to ${className(id)}`,
    );
  }
  const selectedLabel = selected === undefined ? undefined : labels[selected];
  const selectedPoints = selectedLabel && pointsOfLabel(selectedLabel, keypointValues);
  const vertexCount = selectedPoints ? Math.floor(selectedPoints.flat.length / selectedPoints.stride) : 0;
  const turnable = Boolean(selectedLabel?.segments ?? selectedLabel?.obb);
  /** How the editor names a point of the selected label: a keypoint by the skeleton, else a vertex by number. */
  function pointName(index: number) {
    return selectedLabel?.keypoints && !turnable
      ? (skeleton.points[index]?.name ?? `keypoint ${index + 1}`)
      : `vertex ${index + 1}`;
  }

  function onKey(event: KeyboardEvent<HTMLDivElement>) {
    const command = event.ctrlKey || event.metaKey;
    const key = event.key;
    let handled = true;
    if (command && key.toLowerCase() === 'z' && !event.shiftKey) history.undo();
    else if (command && (key.toLowerCase() === 'y' || (key.toLowerCase() === 'z' && event.shiftKey))) history.redo();
    else if (command && key.toLowerCase() === 's') {
      if (canEdit) saveNow();
    } else if (command) handled = false;
    else if (key === '+' || key === '=') setZoom((value) => Math.min(8, value * 1.25));
    else if (key === '-') setZoom((value) => Math.max(1, value / 1.25));
    else if (!canEdit) handled = false;
    else if (/^[1-9]$/.test(key)) {
      const id = Number(key) - 1;
      if (id >= image.classNames.length) handled = false;
      else if (task === 'classify') change([{ classId: id }], `Image class set to ${className(id)}`);
      else if (selected !== undefined) setClassOf(selected, id);
      else setClassId(id);
    } else if (key === 'b' && task !== 'classify') setTool('box');
    else if (key === 'p' && task === 'segment') setTool('polygon');
    else if (key === 'v') setTool('select');
    else if (key === 'n' && task !== 'classify') {
      change([...labels, newShape({ x: 0.4, y: 0.4 }, { x: 0.6, y: 0.6 })], `Added a ${className(classId)}`);
      pick(labels.length);
    } else if (key === 'Enter' && polygon.length > 0) closePolygon();
    else if (key === 'Escape') {
      setPolygon([]);
      setDraft(undefined);
      if (vertex !== undefined) setVertex(undefined);
      else pick(undefined);
    } else if ((key === 'Delete' || key === 'Backspace') && selected !== undefined) remove(selected);
    else if (key === ']' || key === '[') {
      if (labels.length === 0) handled = false;
      else {
        const step = key === ']' ? 1 : labels.length - 1;
        pick(((selected ?? (key === ']' ? -1 : 0)) + step) % labels.length);
      }
    } else if ((key === '.' || key === ',') && vertexCount > 0) {
      const step = key === '.' ? 1 : vertexCount - 1;
      const next = ((vertex ?? (key === '.' ? -1 : 0)) + step) % vertexCount;
      setVertex(next);
      setMessage(`${next + 1} of ${vertexCount}: ${pointName(next)}`);
    } else if (key === 'h' && vertex !== undefined && selectedLabel?.keypoints && keypointValues === 3) {
      const visibility = cycleVisibility(selectedLabel, vertex).keypoints?.[3 * vertex + 2];
      editSelected(
        (label) => cycleVisibility(label, vertex),
        `${pointName(vertex)}: ${['not labelled', 'occluded', 'visible'][visibility ?? 2]}`,
      );
    } else if ((key === 'r' || key === 'R') && turnable) {
      const turn = (event.altKey ? FINE_TURN : TURN) * (key === 'R' ? -1 : 1);
      editSelected((label) => rotateLabel(label, turn), `Rotated ${Math.round((turn * 180) / Math.PI)}°`);
    } else if (key.startsWith('Arrow') && selected !== undefined) {
      const step = event.altKey ? FINE_STEP : STEP;
      const dx = key === 'ArrowLeft' ? -step : key === 'ArrowRight' ? step : 0;
      const dy = key === 'ArrowUp' ? -step : key === 'ArrowDown' ? step : 0;
      if (vertex !== undefined && vertex < vertexCount)
        editSelected((label) => moveVertex(label, vertex, dx, dy, keypointValues), `Moved ${pointName(vertex)}`);
      else if (event.shiftKey) editSelected((label) => resizeLabel(label, dx, -dy), 'Resized');
      else editSelected((label) => moveLabel(label, dx, dy), 'Moved');
    } else handled = false;
    if (handled) event.preventDefault();
  }

  const shown = labels.map((label, index) =>
    moving && index === moving.index
      ? moveLabel(label, moving.at.x - moving.start.x, moving.at.y - moving.start.y)
      : dragging && index === dragging.index
        ? moveVertex(
            label,
            dragging.vertex,
            dragging.at.x - dragging.start.x,
            dragging.at.y - dragging.start.y,
            keypointValues,
          )
        : label,
  );
  const imageClass = task === 'classify' ? labels[0]?.classId : undefined;
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <Link href={datasetPath(owner, slug)}>{slug}</Link> /{' '}
        <span aria-current="page">{image.properties.filename}</span>
      </nav>
      <h1>{image.properties.filename}</h1>
      <div className="toolbar editor-tools" role="toolbar" aria-label="Annotation tools">
        {canEdit && task !== 'classify' ? (
          <>
            <button type="button" aria-pressed={tool === 'select'} onClick={() => setTool('select')}>
              Select (V)
            </button>
            <button type="button" aria-pressed={tool === 'box'} onClick={() => setTool('box')}>
              {task === 'obb' ? 'Oriented box (B)' : task === 'pose' ? 'Instance (B)' : 'Box (B)'}
            </button>
            {task === 'segment' ? (
              <button type="button" aria-pressed={tool === 'polygon'} onClick={() => setTool('polygon')}>
                Polygon (P)
              </button>
            ) : null}
          </>
        ) : null}
        {canEdit ? (
          <>
            <label htmlFor="editor-class">{task === 'classify' ? 'Image class' : 'Class for new shapes'}</label>
            <select
              id="editor-class"
              value={task === 'classify' ? (imageClass ?? '') : classId}
              onChange={(event) => {
                const id = Number(event.target.value);
                if (task === 'classify') change([{ classId: id }], `Image class set to ${className(id)}`);
                else setClassId(id);
              }}
            >
              {task === 'classify' && imageClass === undefined ? <option value="">None</option> : null}
              {image.classNames.map((name, id) => (
                <option key={`${id}-${name}`} value={id}>
                  {id < 9 ? `${id + 1}: ${name}` : name}
                </option>
              ))}
            </select>
          </>
        ) : null}
        <button type="button" onClick={() => setZoom((value) => Math.max(1, value / 1.25))} disabled={zoom <= 1}>
          Zoom out (−)
        </button>
        <button type="button" onClick={() => setZoom((value) => Math.min(8, value * 1.25))} disabled={zoom >= 8}>
          Zoom in (+)
        </button>
        {canEdit ? (
          <>
            <button type="button" onClick={history.undo} disabled={!history.canUndo}>
              Undo
            </button>
            <button type="button" onClick={history.redo} disabled={!history.canRedo}>
              Redo
            </button>
            <button type="button" onClick={saveNow} disabled={!history.unsaved || save.isPending}>
              {save.isPending ? 'Saving…' : 'Save labels'}
            </button>
          </>
        ) : null}
        <span role="status">{history.unsaved ? `Unsaved changes. ${message}` : message}</span>
        {save.error ? <span role="alert">{save.error.message}</span> : null}
      </div>
      {canEdit && task !== 'classify' ? (
        <Suggestions
          owner={owner}
          imageId={image.id}
          labels={labels}
          onSuggest={(merged, note) => change(merged, note)}
        />
      ) : null}
      <div className="editor">
        <div
          className="editor-canvas"
          role="application"
          aria-label={`Labels of ${image.properties.filename}`}
          aria-describedby="editor-keys"
          tabIndex={0}
          onKeyDown={onKey}
        >
          {/* At zoom 1 the whole image fits the view; zooming widens it and the view scrolls (pans). */}
          <div
            className="editor-stage"
            style={{ width: `calc(${zoom} * min(100%, ${(width || 1) / (height || 1)} * 75vh))` }}
          >
            <div className="editor-image" style={{ aspectRatio: `${width || 1} / ${height || 1}` }}>
              <img src={image.imageUrl} alt={image.properties.filename} draggable={false} />
              <svg
                ref={svg}
                viewBox="0 0 1 1"
                preserveAspectRatio="none"
                className={`tool-${tool}`}
                onPointerDown={onCanvasDown}
                onPointerMove={onCanvasMove}
                onPointerUp={onCanvasUp}
              >
                <LabelShapes
                  labels={shown}
                  selected={selected}
                  vertex={vertex}
                  classColors={colors}
                  bones={skeleton.edges}
                  keypointValues={keypointValues}
                  onShapeDown={stable.onShapeDown}
                  onVertexDown={stable.onVertexDown}
                />
                {draft ? (
                  <rect
                    className="draft"
                    x={Math.min(draft.from.x, draft.to.x)}
                    y={Math.min(draft.from.y, draft.to.y)}
                    width={Math.abs(draft.from.x - draft.to.x)}
                    height={Math.abs(draft.from.y - draft.to.y)}
                  />
                ) : null}
                {polygon.length > 0 || (stroke && stroke.length > 1) ? (
                  <polyline
                    className="draft"
                    points={[...polygon, ...(stroke && stroke.length > 1 ? stroke : [])]
                      .map((point) => `${point.x},${point.y}`)
                      .join(' ')}
                  />
                ) : null}
              </svg>
            </div>
          </div>
        </div>
        <aside className="editor-side">
          <h2>Labels ({labels.length})</h2>
          {task === 'classify' ? (
            <p>Class: {imageClass === undefined ? 'none' : className(imageClass)}</p>
          ) : (
            // A list of divs: its rows are grouped in chunks (divs), which an <ol> may not hold.
            <div className="label-list" role="list" aria-label="Labels">
              <MemoChunks
                items={labels}
                deps={[selected, canEdit, image.classNames, stable]}
                chunkClassName="label-chunk"
                renderItem={(label, index) => (
                  <LabelRow
                    key={index}
                    index={index}
                    label={label}
                    selected={index === selected}
                    canEdit={canEdit}
                    classNames={image.classNames}
                    onPick={stable.pick}
                    onClass={stable.setClassOf}
                    onRemove={stable.remove}
                  />
                )}
              />
            </div>
          )}
          <h2>Image</h2>
          <dl className="figures">
            <dt>Size</dt>
            <dd>
              {width} × {height}
            </dd>
            <dt>Split</dt>
            <dd>{image.properties.split}</dd>
            {task === 'pose' ? (
              <>
                <dt>Skeleton</dt>
                <dd>{skeleton.name}</dd>
              </>
            ) : null}
            <dt>File</dt>
            <dd>{(image.properties.bytes / 1024).toFixed(1)} KiB</dd>
          </dl>
          <SimilarImages imageId={image.id} />
          <p id="editor-keys" className="muted keys">
            {canEdit
              ? 'Keys: B box, P polygon (click the corners, or drag freehand), V select, N new box, [ ] pick a label, arrows move it (Shift: resize, Alt: finer), , . pick a vertex or keypoint (arrows then move it, H its visibility), R / Shift+R rotate, 1–9 class, Delete removes, Enter closes a polygon, Ctrl+Z undo, Ctrl+Shift+Z redo, Ctrl+S save, + − zoom.'
              : 'Keys: + − zoom, [ ] pick a label. Viewing only.'}
          </p>
        </aside>
      </div>
    </>
  );
}

/** One row of the label list: memoised, so a list of thousands re-renders only the rows that changed. */
const LabelRow = memo(function LabelRow({
  index,
  label,
  selected,
  canEdit,
  classNames,
  onPick,
  onClass,
  onRemove,
}: {
  index: number;
  label: Label;
  selected: boolean;
  canEdit: boolean;
  classNames: string[];
  onPick: (index: number) => void;
  onClass: (index: number, classId: number) => void;
  onRemove: (index: number) => void;
}) {
  const name = classNames[label.classId] ?? `class ${label.classId}`;
  return (
    <div role="listitem" className={selected ? 'selected' : undefined}>
      <button type="button" aria-pressed={selected} onClick={() => onPick(index)}>
        {index + 1}. {name}
      </button>
      {canEdit ? (
        <>
          <select
            aria-label={`Class of label ${index + 1}`}
            value={label.classId}
            onChange={(event) => onClass(index, Number(event.target.value))}
          >
            {classNames.map((option, id) => (
              <option key={`${id}-${option}`} value={id}>
                {option}
              </option>
            ))}
          </select>
          <button type="button" aria-label={`Delete label ${index + 1}`} onClick={() => onRemove(index)}>
            ✕
          </button>
        </>
      ) : null}
    </div>
  );
});
