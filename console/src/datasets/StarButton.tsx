export function StarButton(props: {
  name: string;
  starred: boolean;
  count: number;
  busy: boolean;
  onToggle: () => void;
}) {
  return (
    <button
      type="button"
      className="star"
      aria-pressed={props.starred}
      aria-label={`Star ${props.name} (${props.count} ${props.count === 1 ? 'star' : 'stars'})`}
      disabled={props.busy}
      onClick={props.onToggle}
    >
      <svg width="16" height="16" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
        <path
          d="M12 2.5l2.9 6.1 6.6.8-4.9 4.6 1.3 6.6L12 17.3l-5.9 3.3 1.3-6.6-4.9-4.6 6.6-.8z"
          fill={props.starred ? 'currentColor' : 'none'}
          stroke="currentColor"
          strokeWidth="1.8"
        />
      </svg>
      {props.count}
    </button>
  );
}
