import { useState, type ReactNode } from 'react';

/** A file dropped on the zone or chosen with its button (a real file input, so the keyboard reaches it). */
export function DropZone({
  id,
  accept,
  disabled,
  choose,
  children,
  onFile,
}: {
  id: string;
  accept: string;
  disabled?: boolean;
  /** The button's text. */
  choose: string;
  /** What to drop, said before the button. */
  children: ReactNode;
  onFile: (file: File) => void;
}) {
  const [dragging, setDragging] = useState(false);
  return (
    <div
      className={`drop-zone${dragging ? ' dragging' : ''}`}
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        event.preventDefault();
        setDragging(false);
        const file = event.dataTransfer.files[0];
        if (file && !disabled) onFile(file);
      }}
    >
      <p>{children}</p>
      <label className="button" htmlFor={id}>
        {choose}
      </label>
      <input
        id={id}
        className="visually-hidden"
        type="file"
        accept={accept}
        disabled={disabled}
        onChange={(event) => {
          const file = event.target.files?.[0];
          event.target.value = '';
          if (file) onFile(file);
        }}
      />
    </div>
  );
}
