/**
 * A labelled number with its range, in a form's grid or a toolbar: a number input, or a slider (`slider`) with its
 * value shown beside it.
 */
export function NumberField({
  id,
  label,
  value,
  onChange,
  slider = false,
  ...range
}: {
  id: string;
  label: string;
  min: number;
  max: number;
  step: number;
  value: number;
  onChange: (value: number) => void;
  slider?: boolean;
}) {
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type={slider ? 'range' : 'number'}
        {...range}
        value={value}
        onChange={(event) => onChange(Number(event.target.value))}
      />
      {slider ? <output htmlFor={id}>{value.toFixed(2)}</output> : null}
    </>
  );
}
