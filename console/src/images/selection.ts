import { useCallback, useMemo, useState } from 'react';

/** Images picked for a bulk action, by id; passed to the grid and the table so both show the same picks. */
export interface Selection {
  ids: ReadonlySet<string>;
  isSelected: (id: string) => boolean;
  toggle: (id: string) => void;
  /** Picks exactly these (a lasso, an island). */
  replace: (ids: Iterable<string>) => void;
  clear: () => void;
}

export function useSelection(): Selection {
  const [ids, setIds] = useState<ReadonlySet<string>>(() => new Set());
  const toggle = useCallback(
    (id: string) =>
      setIds((current) => {
        const next = new Set(current);
        if (!next.delete(id)) next.add(id);
        return next;
      }),
    [],
  );
  const clear = useCallback(() => setIds(new Set()), []);
  const replace = useCallback((next: Iterable<string>) => setIds(new Set(next)), []);
  return useMemo(
    () => ({ ids, isSelected: (id: string) => ids.has(id), toggle, replace, clear }),
    [ids, toggle, replace, clear],
  );
}
