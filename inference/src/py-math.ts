// Python's and NumPy's rounding, which ultralytics' arithmetic relies on (both round halves to even).

/** Python round(x) / cvRound / rint: to the nearest integer, halves to even. */
export function pyRound(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Python round(x, decimals) on a float: the exact binary value rounded to `decimals` places, exact halves to even. */
export function pyRoundTo(value: number, decimals: number): number {
  if (!Number.isFinite(value) || Math.abs(value) >= 1e15) return value;
  const exact = Math.abs(value).toFixed(Math.min(100, decimals + 40));
  const point = exact.indexOf('.');
  const rest = exact.slice(point + 1 + decimals);
  if (/^50*$/.test(rest)) {
    // An exact half: keep the even neighbour.
    const kept = exact.slice(0, point + 1 + decimals).replace(/\.$/, '');
    const lastDigit = Number(kept[kept.length - 1]);
    const down = Number(kept);
    const rounded = lastDigit % 2 === 0 ? down : down + 10 ** -decimals;
    return Math.sign(value) * Number(rounded.toFixed(decimals));
  }
  return Number(value.toFixed(decimals));
}

/** numpy.round(x, decimals) on float64: rint(x · 10^d) / 10^d. */
export function npRoundTo(value: number, decimals: number): number {
  const scale = 10 ** decimals;
  return pyRound(value * scale) / scale;
}
