import { useCallback, useState } from 'react';

/** Every state an edit produced, so any number of edits can be undone and redone; `saved` marks what the API holds. */
export function useHistory<T>(initial: T) {
  const [state, setState] = useState({ past: [] as T[], present: initial, future: [] as T[], saved: initial });
  const push = useCallback(
    (next: T) =>
      setState((current) => ({ ...current, past: [...current.past, current.present], present: next, future: [] })),
    [],
  );
  const undo = useCallback(
    () =>
      setState((current) =>
        current.past.length === 0
          ? current
          : {
              ...current,
              past: current.past.slice(0, -1),
              present: current.past[current.past.length - 1]!,
              future: [current.present, ...current.future],
            },
      ),
    [],
  );
  const redo = useCallback(
    () =>
      setState((current) =>
        current.future.length === 0
          ? current
          : {
              ...current,
              past: [...current.past, current.present],
              present: current.future[0]!,
              future: current.future.slice(1),
            },
      ),
    [],
  );
  const markSaved = useCallback((saved: T) => setState((current) => ({ ...current, saved })), []);
  return {
    present: state.present,
    push,
    undo,
    redo,
    markSaved,
    canUndo: state.past.length > 0,
    canRedo: state.future.length > 0,
    unsaved: state.present !== state.saved,
  };
}
