// The pagination query rules every list endpoint shares: bounds are refused with 400 naming the
// maximum (never clamped), defaults apply, and page tokens cannot be read back or forged.
import t from 'tap';
import { describeZodError } from '../control-plane/src/http/error-middleware.ts';
import {
  cursorQuery,
  offsetPage,
  offsetQuery,
  pageInfo,
  pageQuery,
  PageTokens,
  tokenQuery,
} from '../control-plane/src/http/pagination.ts';

const problem = (
  schema: { safeParse(value: unknown): { success: boolean; error?: unknown } },
  query: Record<string, string>,
) => {
  const result = schema.safeParse(query);
  return result.success ? undefined : describeZodError(result.error as never, 'query');
};

t.test('a limit above the maximum is refused with a message naming the maximum', async (t) => {
  for (const schema of [offsetQuery(20, 100), cursorQuery(20, 100), pageQuery(20, 100), tokenQuery(20, 100)]) {
    t.match(problem(schema, { limit: '101' }), /^query\.limit: .*100/);
    t.match(problem(schema, { limit: '0' }), /^query\.limit: .*1/);
    t.match(problem(schema, { limit: 'ten' }), /^query\.limit: /);
    t.equal(problem(schema, { limit: '100' }), undefined, 'the maximum itself is fine');
  }
});

t.test('defaults and coercion from query strings', async (t) => {
  t.same(offsetQuery(20, 100).parse({}), { limit: 20, offset: 0 });
  t.same(offsetQuery(20, 100).parse({ limit: '5', offset: '10' }), { limit: 5, offset: 10 });
  t.match(problem(offsetQuery(20, 100), { offset: '-1' }), /^query\.offset: /);
  t.same(pageQuery(10, 50).parse({ page: '3' }), { limit: 10, page: 3 });
  t.match(problem(pageQuery(10, 50), { page: '0' }), /^query\.page: /);
  t.same(cursorQuery(20, 100).parse({ includeTotal: 'false' }), { limit: 20, includeTotal: false });
});

t.test('offset pages know whether more rows follow; page numbers count pages', async (t) => {
  t.same(offsetPage([1, 2, 3], 2), { items: [1, 2], hasMore: true });
  t.same(offsetPage([1, 2], 2), { items: [1, 2], hasMore: false });
  t.same(pageInfo(0, 1, 10), { total: 0, page: 1, limit: 10, totalPages: 1 });
  t.same(pageInfo(21, 3, 10), { total: 21, page: 3, limit: 10, totalPages: 3 });
});

t.test('page tokens round-trip, and a tampered or foreign token is a 400', async (t) => {
  const tokens = new PageTokens('a'.repeat(64));
  const token = tokens.encode({ after: 'img_123', sort: 'createdAt' });
  t.same(tokens.decode(token), { after: 'img_123', sort: 'createdAt' });
  const [body, signature] = token.split('.');
  const forged = `${Buffer.from(JSON.stringify({ after: 'img_999', sort: 'createdAt' })).toString('base64url')}.${signature}`;
  for (const bad of [
    forged,
    `${body}.`,
    body,
    'garbage',
    new PageTokens('b'.repeat(64)).encode({ after: 'img_123' }),
  ]) {
    t.throws(() => tokens.decode(bad), { status: 400, message: /^pageToken: / }, `refused: ${bad.slice(0, 24)}`);
  }
});
