import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { imagePath, Link } from '../app/router.tsx';

/** Images like this one (the similar-images API), this dataset's own included, each linked to its page. */
export function SimilarImages({ imageId }: { imageId: string }) {
  const [asked, setAsked] = useState(false);
  const similar = useQuery({
    queryKey: ['similar', imageId],
    enabled: asked,
    queryFn: async () =>
      unwrap(
        await api.GET('/api/images/{imageId}/similar', {
          params: { path: { imageId }, query: { includeSourceDataset: 'true' } },
        }),
      ).images,
  });
  return (
    <div role="region" aria-label="Similar images">
      <button type="button" onClick={() => setAsked(true)} disabled={asked && similar.isFetching}>
        Find similar images
      </button>
      {asked && similar.isPending ? <p role="status">Looking for similar images…</p> : null}
      {similar.error ? <p role="alert">{similar.error.message}</p> : null}
      {similar.data ? (
        <ul className="picked" aria-label="Most similar first">
          {similar.data.map((image) => (
            <li key={image.id}>
              <Link
                href={imagePath(image.dataset.owner, image.dataset.dataset, image.id)}
                title={`${image.name} (${image.dataset.owner}/${image.dataset.dataset}), ${Math.round(image.score * 100)} % alike`}
              >
                <img src={image.thumbnailUrl} alt={`${image.name}, ${Math.round(image.score * 100)} % alike`} />
              </Link>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
