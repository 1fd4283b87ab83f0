import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { datasetPath, useNavigation } from '../app/router.tsx';
import { useCanEdit, useIdentity } from '../auth/identity.ts';

/** Copies the dataset (images, labels, classes; not its versions) into the signed-in workspace and opens the copy. */
export function CloneDataset({ owner, dataset }: { owner: string; dataset: string }) {
  const workspace = useIdentity().data?.owner ?? '';
  const canClone = useCanEdit(workspace);
  const queries = useQueryClient();
  const { navigate } = useNavigation();
  const clone = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/datasets/{owner}/{dataset}/clone', { params: { path: { owner, dataset } }, body: {} }),
      ),
    onSuccess: async (copy) => {
      await queries.invalidateQueries({ queryKey: ['datasets', copy.owner] });
      navigate(datasetPath(copy.owner, copy.dataset));
    },
  });
  if (!canClone) return null;
  return (
    <span className="clone">
      <button type="button" disabled={clone.isPending} onClick={() => clone.mutate()}>
        {clone.isPending ? 'Cloning…' : `Clone into ${workspace}`}
      </button>
      {clone.error ? <span role="alert">{clone.error.message}</span> : null}
    </span>
  );
}
