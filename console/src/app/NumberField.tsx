/** A labelled number input with its range, in a form's two-column grid (label, then the field). */
export function NumberField({
  id,
  label,
  value,
  onChange,
  ...range
}: {
  id: string;
  label: string;
  min: number;
  max: number;
  step: number;
  value: number;
  onChange: (value: number) => void;
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="number"
        {...range}
        value={value}
        onChange={(event) => onChange(Number(event.target.value))}
      />
    </>
  );
}
