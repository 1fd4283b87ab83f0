// A storage endpoint is the user's to name, so its answers are hostile input. A listing built to be slow to read (8 MiB
// of unclosed tags, an element opened over and over, huge attributes, more entries than any page) or that is not XML
// (a reference to no character) is a clear 502 for its requester, read in time linear in its size: the event loop is
// never held 100 ms, and other workspaces' requests are served meanwhile.
import { once } from 'node:events';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { expectError } from './helpers/expect.ts';
import { call, type Fetched } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

/** Just under the providers' cap on an answer (MAX_ANSWER_BYTES in providers/http.ts, 8 MiB): all of it is read. */
const SIZE = 8 * 1024 * 1024 - 1024;
const PIECES = 8;

/** Where a listing's entries are: its opening, the element of one entry, the field read from each. */
interface Listing {
  head: string;
  element: string;
  field: string;
}

/** An answer: `head`, then `unit` as many times as fits in SIZE with `tail`, then `tail`; sent in `pieces`. */
interface Answer {
  head: string;
  unit?: string;
  tail?: string;
  pieces?: number;
}

const SHAPES: Record<string, (listing: Listing) => Answer> = {
  'unclosed tags': ({ head, element, field }) => ({ head, unit: `<${element}><${field}>` }),
  'one element opened over and over within another': ({ head, element, field }) => ({
    head: `${head}<${element}>`,
    unit: `<${field}>`,
    tail: `</${element}>`,
  }),
  'huge attributes': ({ head, element }) => ({ head, unit: `<${element} a="${'x'.repeat(4096)}">` }),
  'more entries than any page': ({ head, element, field }) => ({
    head,
    unit: `<${element}><${field}>b</${field}></${element}>`,
  }),
  'a reference to no character': ({ head, element, field }) => ({
    head: `${head}<${element}><${field}>&#x110000;</${field}></${element}>`,
  }),
};

const PROVIDERS = [
  {
    provider: 's3',
    name: 'S3',
    credentials: (endpoint: string) => ({
      accessKeyId: 'AKIAHOSTILE',
      secretAccessKey: 'secret',
      endpoint,
      region: 'us-east-1',
    }),
    discover: {
      head: '<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult><Buckets>',
      element: 'Bucket',
      field: 'Name',
    },
    browse: {
      head: '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated>',
      element: 'Contents',
      field: 'Key',
    },
    empty:
      '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>',
  },
  {
    provider: 'azure',
    name: 'Azure Blob',
    credentials: (endpoint: string) => ({
      accountName: 'hostile',
      accountKey: Buffer.from('key').toString('base64'),
      endpoint: `${endpoint}/hostile`,
    }),
    discover: {
      head: '<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Containers>',
      element: 'Container',
      field: 'Name',
    },
    browse: {
      head: '<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs>',
      element: 'Blob',
      field: 'Name',
    },
    empty: '<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs /><NextMarker /></EnumerationResults>',
  },
];

// The hostile endpoint, on a thread of its own so that sending its answers costs the control plane's event loop
// nothing: it answers any request with the last answer it was given, in pieces a little apart (8 of them, so the
// request is in flight a while, unless told otherwise).
const hostile = new Worker(
  `const { parentPort } = require('node:worker_threads');
  const { setTimeout: sleep } = require('node:timers/promises');
  let answer = Buffer.alloc(0);
  let pieces = ${PIECES};
  parentPort.on('message', (next) => {
    const { head, unit = '', tail = '' } = next;
    answer = Buffer.from(head + (unit ? unit.repeat(Math.floor((${SIZE} - head.length - tail.length) / unit.length)) : '') + tail);
    pieces = next.pieces ?? ${PIECES};
    parentPort.postMessage('ready');
  });
  const server = require('node:http').createServer(async (request, response) => {
    request.socket.setNoDelay(true);
    response.writeHead(200, { 'content-type': 'application/xml', 'content-length': answer.length, connection: 'close' });
    const piece = Math.ceil(answer.length / pieces);
    for (let at = 0; at < answer.length; at += piece) {
      if (!response.write(answer.subarray(at, at + piece))) await new Promise((resolve) => response.once('drain', resolve));
      await sleep(pieces > ${PIECES} ? 1 : 20);
    }
    response.end();
  });
  server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
  { eval: true },
);
t.teardown(() => hostile.terminate());
const [port] = (await once(hostile, 'message')) as [number];
const endpoint = `http://127.0.0.1:${port}`;
/** What the hostile endpoint answers from now on (built there, so the control plane's heap holds none of it). */
async function answerWith(answer: Answer): Promise<void> {
  hostile.postMessage(answer);
  await once(hostile, 'message');
}

// The endpoint is on loopback: the operator allows it, as an appliance allows storage on its premises.
const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', RATE_LIMIT_MUTATION: '1000000' });

/**
 * `request` while another workspace's requests go on, one after another from before it was sent until after it was
 * answered: its answer, the event loop's longest delay meanwhile, and how the other requests fared.
 */
async function underLoad(
  request: () => Promise<Fetched>,
): Promise<{ answer: Fetched; maxDelayMs: number; statuses: number[]; slowestMs: number }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  let answered = false;
  const statuses: number[] = [];
  let slowestMs = 0;
  const others = (async () => {
    while (!answered || statuses.length < 3) {
      const start = performance.now();
      statuses.push((await call(world.server, 'GET', '/api/integrations/buckets', { key: world.bobby })).status);
      slowestMs = Math.max(slowestMs, performance.now() - start);
    }
  })();
  delay.enable();
  const answer = await request().finally(() => (answered = true));
  await others;
  delay.disable();
  return { answer, maxDelayMs: delay.max / 1e6, statuses, slowestMs };
}

for (const subject of PROVIDERS) {
  await t.test(subject.provider, async (t) => {
    const credentials = subject.credentials(endpoint);
    await answerWith({ head: subject.empty });
    const connected = await call<{ id: string }>(world.server, 'POST', '/api/integrations/buckets', {
      key: world.alice,
      body: { provider: subject.provider, credentials, targets: ['photos'] },
    });
    t.equal(connected.status, 201, 'connected to the endpoint while it answers a listing');
    const operations = {
      discover: {
        listing: subject.discover,
        request: () =>
          call(world.server, 'POST', '/api/integrations/buckets/discover', {
            key: world.alice,
            body: { provider: subject.provider, credentials },
          }),
        error: `could not list the ${subject.provider === 's3' ? 'buckets' : 'containers'}`,
      },
      browse: {
        listing: subject.browse,
        request: () =>
          call(world.server, 'GET', `/api/integrations/buckets/${connected.body.id}/objects?target=photos`, {
            key: world.alice,
          }),
        error: `could not list ${subject.provider === 's3' ? 'bucket' : 'container'} photos`,
      },
    };
    for (const [operation, { listing, request, error }] of Object.entries(operations)) {
      for (const [shape, build] of Object.entries(SHAPES)) {
        await t.test(`${operation}: ${shape}`, async (t) => {
          await answerWith(build(listing));
          // A shared machine may stall any process once (another's work, a collection); an answer that holds the
          // event loop does so every time: the better of two tries is measured.
          let measured = await underLoad(request);
          if (measured.maxDelayMs >= 100) measured = await underLoad(request);
          expectError(
            t,
            measured.answer,
            502,
            new RegExp(`^${subject.name} at 127\\.0\\.0\\.1:\\d+ ${error}: its answer was not understood \\(.+\\)$`),
          );
          t.ok(measured.maxDelayMs < 100, `the event loop was held at most ${measured.maxDelayMs.toFixed(1)} ms`);
          t.ok(
            measured.statuses.every((status) => status === 200),
            `another workspace's ${measured.statuses.length} requests meanwhile were served`,
          );
          t.ok(measured.slowestMs < 1000, `each in under a second (the slowest: ${measured.slowestMs.toFixed(1)} ms)`);
        });
      }
    }
  });
}

await t.test('a listing that arrives a byte at a time is read as a whole', async (t) => {
  // Comments, CDATA, references, a self-closed element and a character of two UTF-8 bytes, each cut wherever a byte falls.
  const listing =
    '<?xml version="1.0" encoding="UTF-8"?>\n<ListAllMyBucketsResult><!-- <Bucket> -->\n<Buckets>' +
    '<Bucket><Name>photos-&#xFC;&amp;&#49;</Name></Bucket><Bucket><Name><![CDATA[ü-2]]></Name><Region/></Bucket></Buckets></ListAllMyBucketsResult>';
  await answerWith({ head: listing, pieces: Buffer.byteLength(listing) });
  const found = await call(world.server, 'POST', '/api/integrations/buckets/discover', {
    key: world.alice,
    body: { provider: 's3', credentials: PROVIDERS[0].credentials(endpoint) },
  });
  t.strictSame([found.status, found.body], [200, { targets: ['photos-ü&1', 'ü-2'] }]);
});

await t.test('a time that is no time is left out of an entry, not a 500', async (t) => {
  const credentials = PROVIDERS[0].credentials(endpoint);
  await answerWith({ head: PROVIDERS[0].empty });
  const connected = await call<{ id: string }>(world.server, 'POST', '/api/integrations/buckets', {
    key: world.alice,
    body: { provider: 's3', credentials, targets: ['photos'] },
  });
  await answerWith({
    head: '<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a.jpg</Key><LastModified>not a time</LastModified><Size>3</Size></Contents></ListBucketResult>',
  });
  const browsed = await call(
    world.server,
    'GET',
    `/api/integrations/buckets/${connected.body.id}/objects?target=photos`,
    { key: world.alice },
  );
  t.strictSame(
    [browsed.status, browsed.body],
    [200, { entries: [{ kind: 'file', name: 'a.jpg', key: 'a.jpg', size: 3 }] }],
  );
});
