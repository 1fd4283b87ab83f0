import { z } from 'zod';

/** The range of PostgreSQL's `integer`: the columns, arrays and parameters integers from a request reach. */
export const INT_MIN = -2_147_483_648;
export const INT_MAX = 2_147_483_647;
const OUT_OF_RANGE = `must be an integer from ${INT_MIN} to ${INT_MAX}`;
// abort: a fraction or a number past 2^53 gets this one message, not the range's too.
const WHOLE = { error: OUT_OF_RANGE, abort: true };

/** An integer in a JSON body that a PostgreSQL `integer` holds; any other is a 400, not a database error. */
export const int = () => z.number().int(WHOLE).min(INT_MIN, OUT_OF_RANGE).max(INT_MAX, OUT_OF_RANGE);

/** The same, from a query string or path. */
export const queryInt = () =>
  z.coerce.number<string>().int(WHOLE).min(INT_MIN, OUT_OF_RANGE).max(INT_MAX, OUT_OF_RANGE);
