import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { COLOR_BLIND_SAFE } from '../app/palette.ts';
import { useClassStats, useRefreshDataset } from './queries.ts';

interface ClassesPanelProps {
  owner: string;
  dataset: string;
  classNames: string[];
  classColors: Record<string, string>;
  canEdit: boolean;
}

/** The dataset's classes: names, colours and counts; editors rename, recolour and merge them. */
export function ClassesPanel(props: ClassesPanelProps) {
  // What the last change did outlives the editor, which starts again from the dataset whenever its classes change.
  const [outcome, setOutcome] = useState('');
  const stats = useClassStats(props.owner, props.dataset);
  const counts = stats.data && Object.fromEntries(stats.data.classes.map((entry) => [entry.classId, entry.count]));
  return (
    <ClassesEditor
      key={JSON.stringify([props.classNames, props.classColors])}
      {...props}
      counts={counts}
      outcome={outcome}
      setOutcome={setOutcome}
    />
  );
}

function ClassesEditor(
  props: ClassesPanelProps & {
    /** Annotations per class index (class-stats), when counted. */
    counts: Record<number, number> | undefined;
    outcome: string;
    setOutcome: (outcome: string) => void;
  },
) {
  const { owner, dataset, classNames, classColors, counts, canEdit, outcome, setOutcome } = props;
  const [names, setNames] = useState(classNames);
  const [colors, setColors] = useState(() => classNames.map((_, index) => classColors[String(index)] ?? '#888888'));
  const [merging, setMerging] = useState<ReadonlySet<number>>(() => new Set());
  const [target, setTarget] = useState(0);
  const refresh = useRefreshDataset(owner);
  const path = { params: { path: { owner, dataset } } };
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.PATCH('/api/datasets/{owner}/{dataset}', {
          ...path,
          body: { classNames: names, classColors: colors },
        }),
      ),
    onSuccess: async () => {
      setOutcome('Names and colours saved');
      await refresh(dataset);
    },
  });
  const merge = useMutation({
    mutationFn: async ({ sourceClassIds, targetClassId }: { sourceClassIds: number[]; targetClassId: number }) =>
      unwrap(
        await api.POST('/api/datasets/{owner}/{dataset}/classes/merge', {
          ...path,
          body: { sourceClassIds, targetClassId },
        }),
      ),
    onSuccess: async (_, { sourceClassIds, targetClassId }) => {
      setOutcome(
        `Merged ${sourceClassIds.length} ${sourceClassIds.length === 1 ? 'class' : 'classes'} into ${classNames[targetClassId]}`,
      );
      setMerging(new Set());
      await refresh(dataset);
    },
  });
  const edited =
    names.some((name, index) => name !== classNames[index]) ||
    colors.some((color, index) => color !== (classColors[String(index)] ?? '#888888'));
  const sources = [...merging].filter((id) => id !== target);
  const error = save.error ?? merge.error;
  return (
    <section className="card classes" aria-labelledby="classes-heading">
      <h2 id="classes-heading">Classes</h2>
      {classNames.length === 0 ? <p className="muted">No classes yet.</p> : null}
      <table>
        <thead>
          <tr>
            <th scope="col">ID</th>
            <th scope="col">Name</th>
            <th scope="col">Colour</th>
            <th scope="col">Annotations</th>
            {canEdit ? <th scope="col">Merge</th> : null}
          </tr>
        </thead>
        <tbody>
          {classNames.map((original, index) => (
            <tr key={`${index}-${original}`}>
              <td>{index}</td>
              <td>
                {canEdit ? (
                  <input
                    aria-label={`Name of class ${index}`}
                    value={names[index] ?? original}
                    maxLength={256}
                    onChange={(event) => setNames(names.map((name, at) => (at === index ? event.target.value : name)))}
                  />
                ) : (
                  original
                )}
              </td>
              <td>
                {canEdit ? (
                  <input
                    type="color"
                    aria-label={`Colour of ${original}`}
                    value={colors[index] ?? '#888888'}
                    onChange={(event) =>
                      setColors(colors.map((color, at) => (at === index ? event.target.value : color)))
                    }
                  />
                ) : (
                  <svg width="18" height="18" role="img" aria-label={`Colour ${classColors[String(index)] ?? 'none'}`}>
                    <rect width="18" height="18" rx="3" fill={classColors[String(index)] ?? '#888888'} />
                  </svg>
                )}
              </td>
              <td>{counts?.[index]?.toLocaleString() ?? '…'}</td>
              {canEdit ? (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Merge ${original}`}
                    checked={merging.has(index)}
                    onChange={() =>
                      setMerging((current) => {
                        const next = new Set(current);
                        if (!next.delete(index)) next.add(index);
                        return next;
                      })
                    }
                  />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
      {canEdit && classNames.length > 0 ? (
        <div className="toolbar">
          <button
            type="button"
            onClick={() => setColors(names.map((_, index) => COLOR_BLIND_SAFE[index % COLOR_BLIND_SAFE.length]!))}
          >
            Colour-blind-safe colours
          </button>
          <button
            type="button"
            disabled={!edited || save.isPending || names.some((name) => !name.trim())}
            onClick={() => save.mutate()}
          >
            Save names and colours
          </button>
          <label htmlFor="merge-target">Merge the ticked classes into</label>
          <select id="merge-target" value={target} onChange={(event) => setTarget(Number(event.target.value))}>
            {classNames.map((name, index) => (
              <option key={`${index}-${name}`} value={index}>
                {name}
              </option>
            ))}
          </select>
          <button
            type="button"
            disabled={sources.length === 0 || merge.isPending}
            onClick={() => merge.mutate({ sourceClassIds: sources, targetClassId: target })}
          >
            Merge
          </button>
          <span role="status">{error ? '' : outcome}</span>
          {error ? <span role="alert">{error.message}</span> : null}
        </div>
      ) : null}
    </section>
  );
}
