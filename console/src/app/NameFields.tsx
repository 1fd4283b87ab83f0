/**
 * A new resource's display name and its URL name (lowercase words joined by hyphens), the URL name suggested from the
 * name until edited; `address` shows where it will live.
 */
export function NameFields(props: {
  id: string;
  name: string;
  onName: (name: string) => void;
  slug: string;
  onSlug: (slug: string) => void;
  address: string;
}) {
  const { id, name, onName, slug, onSlug, address } = props;
  return (
    <>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} required maxLength={100} value={name} onChange={(event) => onName(event.target.value)} />
      <label htmlFor={`${id}-slug`}>URL name</label>
      <input
        id={`${id}-slug`}
        required
        maxLength={128}
        pattern="[a-z0-9]+(-[a-z0-9]+)*"
        aria-describedby={`${id}-slug-hint`}
        value={slug}
        onChange={(event) => onSlug(event.target.value)}
      />
      <small id={`${id}-slug-hint`} className="muted">
        Lowercase letters, digits and hyphens: {address}
      </small>
    </>
  );
}
